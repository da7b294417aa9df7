"""Query-embedding latency (p50 / p95) of the default model, plus the one-off costs.

    .venv/bin/python bench/embed_latency.py [--n 300] [--json]

Also times the in-memory vector index (search without query embedding) at 10k and 100k
random unit vectors, unscoped and with a 10 % scope mask.

Queries: the SciFact test claims (short sentences, like agent queries).  Reports the
first-load cost (sha256 check + onnxruntime session + tokenizer), then per-query
``embed_query`` latency after 10 warm-up calls, one query at a time as search does it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from scifact_semantic import load_qrels, load_queries  # noqa: E402

from memo.embed.integrity import sha256_file  # noqa: E402
from memo.embed.registry import load_registry  # noqa: E402
from memo.embed.service import load_model  # noqa: E402


def index_latency(n: int, dim: int = 384, queries: int = 200) -> dict[str, float]:
    """In-memory index search (probe + masked matvec + argpartition, top 100) over ``n``
    random unit vectors, unscoped and with a 10 % scope; plus the first (full) load."""
    import sqlite3

    from memo.embed.index import VectorIndex

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE memo_meta(key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO memo_meta VALUES ('vectors_epoch', '0')")
    conn.execute("CREATE TABLE vectors(seq INTEGER PRIMARY KEY AUTOINCREMENT, passage_pk INTEGER, "
                  "model_id TEXT, vec BLOB)")
    rng = np.random.default_rng(0)
    mat = rng.standard_normal((n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    conn.executemany("INSERT INTO vectors(passage_pk, model_id, vec) VALUES (?, 'm', ?)",
                     ((i + 1, mat[i].tobytes()) for i in range(n)))
    idx = VectorIndex("m", dim)
    t0 = time.perf_counter()
    idx.refresh(conn)
    load_ms = (time.perf_counter() - t0) * 1000
    qs = rng.standard_normal((queries, dim)).astype(np.float32)
    scoped = np.arange(1, n + 1, 10, dtype=np.int64)
    out = {"n": n, "full_load_ms": round(load_ms, 1)}
    for label, allowed in (("unscoped", None), ("scope10pct", scoped)):
        lat = []
        for q in qs:
            t = time.perf_counter()
            idx.search(conn, q, allowed, 100)
            lat.append((time.perf_counter() - t) * 1000)
        out[f"{label}_p50_ms"] = round(float(np.percentile(lat, 50)), 2)
        out[f"{label}_p95_ms"] = round(float(np.percentile(lat, 95)), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--model", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--index-sizes", default="10000,100000",
                    help="also time the in-memory index at these sizes ('' to skip)")
    args = ap.parse_args()
    spec = load_registry().get(args.model)
    t0 = time.perf_counter()
    sha256_file(spec.onnx)
    hash_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    model = load_model(spec)                       # hashes again (new process cache) + loads
    load_ms = (time.perf_counter() - t0) * 1000
    queries = list(load_queries(set(load_qrels("test"))).values())[: args.n]
    for q in queries[:10]:
        model.embed_query(q)
    lat = []
    for q in queries:
        t = time.perf_counter()
        model.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    toks = [len(x) for x in model.tokenize(queries)]
    out = {"model": spec.id, "queries": len(lat), "query_tokens_p50": int(np.median(toks)),
           "sha256_ms": round(hash_ms, 1), "first_load_ms": round(load_ms, 1),
           "p50_ms": round(float(np.percentile(lat, 50)), 2), "p95_ms": round(float(np.percentile(lat, 95)), 2),
           "mean_ms": round(float(np.mean(lat)), 2),
           "index": [index_latency(int(x)) for x in args.index_sizes.split(",") if x.strip()]}
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
