"""Seeded memo databases of N passages made of real text, for the scale benchmarks (issue 16).

    .venv/bin/python bench/scale_build.py --n 100000 [--seed 16] [--vectors random|none] [--force] [--json]

Prints the cached file's path; ``--json`` prints {path, passages, vectors, built, build_s,
db_mb} instead (``built`` false and ``build_s`` null when the cached file was already there).

Text: the sentences of SciFact's 5,183 abstracts (datasets/scifact/corpus.jsonl.gz),
recombined deterministically (``random.Random(seed)``): each record takes a SciFact title as
its title and as the section of its passages (as ``memo import --format beir`` does), and
1-3 passages of 2-8 sentences drawn at random from the whole corpus (about SciFact's
abstract length: 5 sentences, ~130 words on average).  Records are ``doc`` records spread
over ``NAMESPACES`` (a scope to filter on), with ids ``s<seed>-<i>`` and ``recorded_at``
one second apart from ``EPOCH``, so two builds with the same (n, seed) hold the same rows.

Rows go through memo's own store code (``memo.store.records.insert_records``, the bulk
insert ``memo import`` uses, inside ``write_tx``; ``memo.embed.vectors.write_vectors``), so every derived index exists (FTS5
keyword and exact indexes, mentions) exactly as an import would make it; batches of
``BATCH`` records per transaction, ``MEMO_SYNCHRONOUS=NORMAL`` while building (a benchmark
file needs no power-loss durability).  Vectors (``--vectors random``): seeded random unit
vectors (numpy ``default_rng(seed)``) under the default model id, so the semantic arm and
the vector floors run on a real matrix without the ONNX model at build time.

Queries: the SciFact test claims (``scifact_queries``), 300 in qrels/test.tsv order.

Built files are cached under ``.cache/scale/`` keyed by (n, seed, vectors, BUILDER_VERSION,
schema version); a build writes ``<name>.building`` and renames it into place when done,
so a cached file is always complete.  Bump ``BUILDER_VERSION`` whenever the rows change.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memo.embed import DEFAULT_MODEL_ID  # noqa: E402
from memo.store import kw_postings  # noqa: E402
from memo.store.connect import write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.dialect import is_db_url  # noqa: E402
from memo.store.migrations import LATEST as SCHEMA_VERSION  # noqa: E402
from memo.store.records import NewRecord, content_hash, derive_passages, insert_records  # noqa: E402
from memo.stored import PassageDraft, RecordDraft  # noqa: E402

BUILDER_VERSION = 1
CORPUS = ROOT / "datasets" / "scifact" / "corpus.jsonl.gz"
QUERIES = ROOT / "datasets" / "scifact" / "queries.jsonl"
QRELS_TEST = ROOT / "datasets" / "scifact" / "qrels" / "test.tsv"
CACHE = ROOT / ".cache" / "scale"
NAMESPACES = ("alpha", "beta", "gamma", "delta")
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
BATCH = 2000          # records per write transaction
VEC_BATCH = 20000     # vectors per write_vectors call
SENTENCES = (2, 8)    # sentences per passage, inclusive
PASSAGES = (1, 3)     # passages per record, inclusive
DEFAULT_SEED = 16

# SciFact abstracts are their sentences joined by one space (datasets/scifact/SOURCE.md).
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def parse_size(text: str) -> int:
    """'100k' -> 100000, '1m' -> 1000000, '2500' -> 2500."""
    t = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def load_sentences() -> tuple[list[str], list[str]]:
    """(titles, sentences) of the SciFact corpus, in file order."""
    titles: list[str] = []
    sentences: list[str] = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title = str(doc.get("title") or "").strip()
            if title:
                titles.append(title)
            sentences.extend(s.strip() for s in _SPLIT.split(str(doc.get("text") or "")) if s.strip())
    return titles, sentences


def scifact_queries(split: str = "test") -> list[tuple[str, str]]:
    """(query id, claim) of the SciFact claims in ``qrels/<split>.tsv``, in that file's order."""
    qrels = QRELS_TEST.with_name(f"{split}.tsv")
    ids = list(dict.fromkeys(line.split("\t")[0] for line in qrels.read_text().splitlines()[1:] if line.strip()))
    text = {}
    for line in QUERIES.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        text[str(q["_id"])] = q["text"]
    return [(qid, text[qid]) for qid in ids if qid in text]


def iter_drafts(n_passages: int, seed: int) -> Iterator[tuple[RecordDraft, str]]:
    """(draft, recorded_at) of records holding exactly ``n_passages`` passages in all."""
    titles, sentences = load_sentences()
    rng = random.Random(seed)
    made = 0
    i = 0
    while made < n_passages:
        title = rng.choice(titles)
        count = min(rng.randint(*PASSAGES), n_passages - made)
        passages = tuple(
            PassageDraft(section=title, text=" ".join(rng.choice(sentences) for _ in range(rng.randint(*SENTENCES))))
            for _ in range(count))
        body = title + "\n\n" + "\n\n".join(p.text for p in passages)
        draft = RecordDraft(body=body, kind="doc", namespace=NAMESPACES[i % len(NAMESPACES)], title=title,
                            id=f"s{seed}-{i}", ext_id=str(i), passages=passages)
        stamp = (EPOCH + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        yield draft, stamp
        made += count
        i += 1


def cache_path(n_passages: int, seed: int, vectors: str) -> Path:
    return CACHE / f"memo-{size_label(n_passages)}-s{seed}-{vectors}-b{BUILDER_VERSION}-v{SCHEMA_VERSION}.db"


def build(db_path: str | Path, n_passages: int, seed: int = DEFAULT_SEED, vectors: str = "random",
          *, log: bool = False) -> dict[str, float]:
    """Write a new memo database of ``n_passages`` passages at ``db_path`` (must not exist).
    Returns timings {records, passages, rows_s, vectors_s}."""
    if vectors not in ("random", "none"):
        raise ValueError(f"vectors must be 'random' or 'none', not {vectors!r}")
    on_server = is_db_url(str(db_path))    # a PostgreSQL database (must be empty)
    path = str(db_path) if on_server else Path(db_path)
    if not on_server and path.exists():
        raise FileExistsError(path)
    old_sync = os.environ.get("MEMO_SYNCHRONOUS")
    os.environ["MEMO_SYNCHRONOUS"] = "NORMAL"
    try:
        conn = open_db(path)
    finally:
        if old_sync is None:
            os.environ.pop("MEMO_SYNCHRONOUS", None)
        else:
            os.environ["MEMO_SYNCHRONOUS"] = old_sync
    t0 = time.perf_counter()
    n_records = 0
    batch: list[tuple[RecordDraft, str]] = []

    def flush() -> None:
        # The import path's bulk insert (same rows as insert_record one by one: its
        # differential test); passages' derived values worked out before BEGIN.
        records = [NewRecord(d.id or "", d, content_hash(d.body), stamp, derive_passages(d, d.passages))
                   for d, stamp in batch]
        with write_tx(conn):
            if not on_server:      # a bulk import: no keyword delta, the base built at the end
                kw_postings.hold_bulk(conn)
            insert_records(conn, records)
        batch.clear()

    for item in iter_drafts(n_passages, seed):
        batch.append(item)
        n_records += 1
        if len(batch) >= BATCH:
            flush()
            if log and n_records % (BATCH * 25) == 0:
                print(f"  {n_records:,} records, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if batch:
        flush()
    rows_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    if vectors == "random":
        write_random_vectors(conn, seed)
    vectors_s = time.perf_counter() - t1
    if on_server:
        conn.execute_native("ANALYZE", None)
    else:
        # A bulk import's end, as `memo import` does it (memo.ops.importer): the keyword
        # postings' base built from passages_fts once, no delta written before it.
        kw_postings.end_bulk(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"records": n_records, "passages": n_passages, "rows_s": round(rows_s, 1),
            "vectors_s": round(vectors_s, 1)}


def write_random_vectors(conn, seed: int) -> None:  # noqa: ANN001 - a memo connection
    import numpy as np

    from memo.embed.registry import load_registry
    from memo.embed.vectors import write_vectors

    dim = load_registry().get(DEFAULT_MODEL_ID).dimensions
    rng = np.random.default_rng(seed)
    pks = [int(r[0]) for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
    for s in range(0, len(pks), VEC_BATCH):
        chunk = pks[s:s + VEC_BATCH]
        vecs = rng.standard_normal((len(chunk), dim), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        write_vectors(conn, DEFAULT_MODEL_ID, chunk, vecs)


def ensure_built(n_passages: int, seed: int = DEFAULT_SEED, vectors: str = "random", *,
                 force: bool = False, log: bool = True) -> Path:
    """The cached database for (n, seed, vectors), built first when missing."""
    path = cache_path(n_passages, seed, vectors)
    if path.exists() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    if log:
        print(f"building {path.name} ({n_passages:,} passages, seed {seed}, vectors {vectors})", file=sys.stderr)
    t0 = time.perf_counter()
    info = build(tmp, n_passages, seed, vectors, log=log)
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)   # checkpointed and closed: nothing in them
    os.replace(tmp, path)
    if log:
        secs = time.perf_counter() - t0
        print(f"built {path} in {secs:.0f} s ({n_passages / max(info['rows_s'], 1e-9):,.0f} passages/s for rows, "
              f"{info['vectors_s']:.0f} s vectors)", file=sys.stderr)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="100k", help="passages: 100k, 1m, 2500 ...")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--vectors", choices=("random", "none"), default="random")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    ap.add_argument("--out", help="write here instead of the cache (must not exist; or an empty PostgreSQL "
                                  "database: postgresql://...)")
    ap.add_argument("--json", action="store_true", help="print {path, built, build_s, db_mb ...} (cache only)")
    args = ap.parse_args()
    n = parse_size(args.n)
    if args.out:
        print(json.dumps(build(args.out, n, args.seed, args.vectors, log=True)))
    elif args.json:
        cached = cache_path(n, args.seed, args.vectors).exists() and not args.force
        t0 = time.perf_counter()
        path = ensure_built(n, args.seed, args.vectors, force=args.force)
        secs = time.perf_counter() - t0
        print(json.dumps({"path": str(path), "passages": n, "vectors": args.vectors, "seed": args.seed,
                          "built": not cached, "build_s": None if cached else round(secs, 1),
                          "db_mb": round(path.stat().st_size / 1e6, 1)}))
    else:
        print(ensure_built(n, args.seed, args.vectors, force=args.force))


if __name__ == "__main__":
    main()
