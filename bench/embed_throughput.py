"""Embedding throughput (issue 31.4): memo's embedder against bare onnxruntime loops over
the same passages, same model, same batch size, in the same run.

    nice -n 5 .venv/bin/python bench/embed_throughput.py [--corpus scifact code] [--n 600] [--rounds 3] [--json]

Corpora (passages as memo stores them, embedded as ``passage_text(section, text)``):

* ``scifact``: the first ``--n`` SciFact abstracts ("title\\n\\nabstract", ~250 word pieces);
* ``code``:    Python standard-library files split by memo's own code splitter
               (``memo.ingest.split_code``: a symbol's signature and docstring), the first
               ``--n`` passages in file order (sorted file names).

Sides, each timed in wall seconds and in CPU seconds of this process (user + system,
``resource.getrusage``: onnxruntime's threads are this process's), alternating round by
round, each reporting its best round:

* ``memo``:   ``OnnxEmbedder.embed_passages`` over windows of ``WINDOW_BATCHES x batch``
              passages, as ``memo.embed.backfill`` calls it (tokenise, length-sorted passes,
              pad, run, pool, normalise).
* ``bare``:   the issue's floor: the tokenizer's ``encode_batch`` (truncation at the
              model's window, padding to the longest of the batch) and ``session.run`` over
              batches of ``--batch`` passages in file order, mean pooling, L2 norm; the same
              session options (``memo.embed.model.session_options``).
* ``bare_sorted``: the same loop over memo's own passes (length-sorted, the same rows
              per pass), tokenised before the clock starts: ``session.run`` alone, the
              cost no embedder can avoid.

``ratio`` = bare seconds / memo seconds (>= 0.9 is issue 31.4's goal); ``cpu_ratio`` the
same in CPU seconds.  The vectors of memo and bare are compared (max abs difference).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from memo.embed.backfill import WINDOW_BATCHES  # noqa: E402
from memo.embed.model import DEFAULT_BATCH, TOKENS_PER_PASS, _passes, passage_text, session_options  # noqa: E402
from memo.embed.registry import load_registry  # noqa: E402
from memo.embed.service import load_model  # noqa: E402
from memo.ingest.split_code import split_code  # noqa: E402

SCIFACT = [ROOT / "datasets" / "scifact" / "corpus.jsonl.gz", Path("/work/shared/datasets/scifact/corpus.jsonl.gz")]


def scifact_texts(n: int) -> list[str]:
    path = next(p for p in SCIFACT if p.is_file())
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            out.append(passage_text(d["title"].strip(), d["text"].strip()))
            if len(out) >= n:
                break
    return out


def code_texts(n: int) -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out: list[str] = []
    for f in sorted(stdlib.glob("*.py")):
        src = f.read_text(encoding="utf-8", errors="replace")
        for p in split_code(src, f.name, f.stem):
            out.append(passage_text(p.section, p.text))
            if len(out) >= n:
                return out
    return out


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _pool(h: np.ndarray, mask: np.ndarray) -> np.ndarray:
    v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class Bare:
    def __init__(self, spec) -> None:  # noqa: ANN001
        self.tok = Tokenizer.from_file(str(spec.tokenizer))
        self.tok.enable_truncation(max_length=spec.max_tokens)
        self.tok.enable_padding()                  # pad to the longest in the batch
        self.sess = ort.InferenceSession(str(spec.onnx), sess_options=session_options(),
                                         providers=["CPUExecutionProvider"])

    def run(self, texts: list[str], batch: int) -> np.ndarray:
        out = []
        for s in range(0, len(texts), batch):
            enc = self.tok.encode_batch(texts[s:s + batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            (h,) = self.sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                         "token_type_ids": np.zeros_like(ids)})
            out.append(_pool(h, mask))
        return np.concatenate(out)

    def feeds(self, texts: list[str], batch: int) -> list[dict[str, np.ndarray]]:
        """memo's passes (length-sorted per window), tokenised and padded in advance."""
        self.tok.no_padding()
        feeds = []
        win = batch * WINDOW_BATCHES
        for w in range(0, len(texts), win):
            ids = [e.ids for e in self.tok.encode_batch(texts[w:w + win])]
            lengths = [len(x) for x in ids]
            for idx in _passes(np.argsort(lengths, kind="stable"), lengths, batch, TOKENS_PER_PASS):
                width = max(lengths[i] for i in idx)
                arr = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros_like(arr)
                for r, i in enumerate(idx):
                    arr[r, :lengths[i]] = ids[i]
                    mask[r, :lengths[i]] = 1
                feeds.append({"input_ids": arr, "attention_mask": mask, "token_type_ids": np.zeros_like(arr)})
        self.tok.enable_padding()
        return feeds

    def run_feeds(self, feeds: list[dict[str, np.ndarray]]) -> None:
        for f in feeds:
            (h,) = self.sess.run(["last_hidden_state"], f)
            _pool(h, f["attention_mask"])


def memo_run(model, texts: list[str], batch: int) -> np.ndarray:  # noqa: ANN001
    win = batch * WINDOW_BATCHES
    return np.concatenate([model.embed_passages(texts[w:w + win], batch) for w in range(0, len(texts), win)])


def timed(fn):  # noqa: ANN001, ANN201
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, _cpu() - c0, out


def measure(name: str, texts: list[str], spec, model, bare: Bare, rounds: int, batch: int) -> dict:  # noqa: ANN001
    feeds = bare.feeds(texts, batch)
    sides: dict[str, list[tuple[float, float]]] = {"bare": [], "bare_sorted": [], "memo": []}
    vec_memo = vec_bare = None
    memo_run(model, texts[:batch], batch)           # warm both sessions (first-run allocations)
    bare.run(texts[:batch], batch)
    for _ in range(rounds):
        w, c, vec_bare = timed(lambda: bare.run(texts, batch))
        sides["bare"].append((w, c))
        w, c, _ = timed(lambda: bare.run_feeds(feeds))
        sides["bare_sorted"].append((w, c))
        w, c, vec_memo = timed(lambda: memo_run(model, texts, batch))
        sides["memo"].append((w, c))
    n = len(texts)
    best = {k: (min(x[0] for x in v), min(x[1] for x in v)) for k, v in sides.items()}
    bare.tok.no_padding()
    toks = [len(e.ids) for e in bare.tok.encode_batch(texts)]
    bare.tok.enable_padding()
    out = {"corpus": name, "passages": n, "batch": batch, "tokens_mean": round(float(np.mean(toks)), 1),
           "rounds": rounds, "load_avg_1m": round(os.getloadavg()[0], 1)}
    for k, (w, c) in best.items():
        out[f"{k}_per_s"] = round(n / w, 2)
        out[f"{k}_per_cpu_s"] = round(n / c, 2)
    out["ratio"] = round(best["bare"][0] / best["memo"][0], 3)
    out["cpu_ratio"] = round(best["bare"][1] / best["memo"][1], 3)
    out["ratio_sorted"] = round(best["bare_sorted"][0] / best["memo"][0], 3)
    out["cpu_ratio_sorted"] = round(best["bare_sorted"][1] / best["memo"][1], 3)
    out["max_abs_diff_vs_bare"] = float(np.abs(vec_memo - vec_bare).max())
    for k, v in sides.items():
        out[f"{k}_runs_s"] = [round(x[0], 2) for x in v]
        out[f"{k}_cpu_s"] = [round(x[1], 2) for x in v]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", nargs="+", default=["scifact", "code"], choices=["scifact", "code"])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = load_registry().get()
    model = load_model(spec)
    bare = Bare(spec)
    for name in args.corpus:
        texts = scifact_texts(args.n) if name == "scifact" else code_texts(args.n)
        res = measure(name, texts, spec, model, bare, args.rounds, args.batch)
        print(json.dumps(res) if args.json else "\n".join(f"{k}: {v}" for k, v in res.items()), flush=True)


if __name__ == "__main__":
    main()
