"""Ingest throughput with embedding vs a bare onnxruntime loop over the same texts.

    .venv/bin/python bench/ingest_throughput.py [--n 1000] [--json]

* bare:   tokenizer (truncation 256) + onnxruntime + mean pooling + L2 norm, batches of 64
          in file order, same session options (2 intra-op threads).  No database.
* memo:   the write path as ingest runs it: records committed in batches of 256
          (insert_record in one BEGIN IMMEDIATE), then ``embed_records`` for each batch
          (embedding outside any transaction, vectors written per 64 in short transactions).
* memo without entities (``--entities``): the same, with entity extraction and the
          mention writes switched off (``memo.store.records.index_passage_mentions``
          replaced by a no-op for the bench only).  ``entity_share`` = 1 - (best without) /
          (best with): what extraction costs of import time (issue 29.5: at most 0.2).
          ``entity_s``: the time spent inside ``index_passage_mentions`` during the best
          run with it (timed directly), and ``entity_direct_share`` = that / the run.
Both embed "title\\n\\nabstract" for the first N SciFact documents.  Target: memo >= 0.8x bare.
The machine is shared and noisy: the runs alternate (bare, memo[, memo without entities],
bare, ...) and each side reports its best run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import memo.store.records as records_mod  # noqa: E402
from memo.embed.backfill import embed_records  # noqa: E402
from memo.embed.model import passage_text, session_options  # noqa: E402
from memo.embed.registry import load_registry  # noqa: E402
from memo.embed.service import load_model  # noqa: E402
from memo.ingest.beir import iter_corpus  # noqa: E402
from memo.store.connect import write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.records import insert_record  # noqa: E402

DATA = Path("/work/shared/datasets/scifact/corpus.jsonl.gz")


def bare_loop(texts: list[str], spec, batch: int = 64) -> float:
    """Seconds for the plain loop."""
    tok = Tokenizer.from_file(str(spec.tokenizer))
    tok.enable_truncation(max_length=spec.max_tokens)
    tok.enable_padding()                       # pad to the longest in the batch
    sess = ort.InferenceSession(str(spec.onnx), sess_options=session_options(),
                                providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    for s in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[s:s + batch])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        (h,) = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                "token_type_ids": np.zeros_like(ids)})
        v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
    return time.perf_counter() - t0


@contextlib.contextmanager
def entities(mode: str, spent: list[float]):
    """``mode`` "off": insert_record extracts and writes no mention; "timed": the time spent
    extracting and writing them is added to ``spent``."""
    real = records_mod.index_passage_mentions

    def timed(*a, **k):  # noqa: ANN002, ANN003
        t0 = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent.append(time.perf_counter() - t0)

    records_mod.index_passage_mentions = (lambda *a, **k: 0) if mode == "off" else timed
    try:
        yield
    finally:
        records_mod.index_passage_mentions = real


def memo_ingest(drafts, spec, mode: str = "timed", spent: list[float] | None = None) -> float:
    load_model(spec)                           # model load is not ingest (server keeps it loaded)
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "ingest.db")
        t0 = time.perf_counter()
        with entities(mode, spent if spent is not None else []):
            for s in range(0, len(drafts), 256):
                with write_tx(conn):
                    ids = [insert_record(conn, d, d.passages) for d in drafts[s:s + 256]]
                rep = embed_records(conn, ids, spec.id)
                assert rep.error is None, rep.error
        secs = time.perf_counter() - t0
        n = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        conn.close()
    assert n == len(drafts), n
    return secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--entities", action="store_true",
                    help="also run memo with entity extraction off (same run) and report its share")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = load_registry().get()
    drafts = []
    for d in iter_corpus(DATA):
        drafts.append(d)
        if len(drafts) >= args.n:
            break
    texts = [passage_text(d.passages[0].section, d.passages[0].text) for d in drafts]
    bare, memo, off, spent = [], [], [], []
    for _ in range(args.rounds):
        bare.append(bare_loop(texts, spec))
        got: list[float] = []
        memo.append(memo_ingest(drafts, spec, "timed", got))
        spent.append(sum(got))
        if args.entities:
            off.append(memo_ingest(drafts, spec, "off"))
    out = {"n": len(texts), "bare_per_s": round(len(texts) / min(bare), 1),
           "memo_per_s": round(len(texts) / min(memo), 1),
           "ratio": round(min(bare) / min(memo), 3),
           "bare_runs_s": [round(x, 1) for x in bare], "memo_runs_s": [round(x, 1) for x in memo]}
    best = memo.index(min(memo))
    out["entity_s"] = round(spent[best], 2)
    out["entity_direct_share"] = round(spent[best] / memo[best], 3)
    if off:
        out["memo_without_entities_per_s"] = round(len(texts) / min(off), 1)
        out["entity_share"] = round(1 - min(off) / min(memo), 3)
        out["memo_without_entities_runs_s"] = [round(x, 1) for x in off]
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
