"""Search speed and storage on PostgreSQL (issue 17.5), each figure next to a floor measured
on the same server in the same run.

    .venv/bin/python bench/scale_build.py --n 100k --out postgresql://.../s100k   # once
    nice -n 5 .venv/bin/python bench/pg_scale.py --db postgresql://.../s100k [--queries 100] [--json]

Queries: SciFact test claims (the first ``--queries``), each with a seeded random unit
query vector (the database's vectors are random too: bench/scale_build.py), precomputed
as a warm server's embedder hands it over.  Per query, in rotating order:

    floor ts_rank     PostgreSQL's own full text: tsv @@ (OR of the lexemes) ORDER BY ts_rank LIMIT 100
    floor exact scan  pgvector alone: ORDER BY vec <#> q LIMIT 100 over every vector, no join
    keyword           memo.retrieve.search, mode keyword (bm25 over the postings tables)
    hybrid exact      mode auto, precomputed query vector, [vectors] ann_min above the size (exact scan)
    hybrid hnsw       the same with the HNSW index (ann_min 0; built first if missing: its time is printed)

Printed: p50 / p95 (ms) and the ratio of p50 to the floor of the same kind, then the size of
each table and index (pg_total_relation_size) per passage, the figures docs/scale.md
extrapolates to 10M passages.  Timings on a shared 2-core VM are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_build import scifact_queries  # noqa: E402

from memo.embed import DEFAULT_MODEL_ID  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, search  # noqa: E402
from memo.retrieve.services import ArmServices  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.postgres.fts import lexemes, tsquery_of  # noqa: E402
from memo.store.postgres.vectors import build_ann_index, literal  # noqa: E402

TABLES = ("records", "passages", "passage_terms", "exact_fts", "exact_terms", "vectors", "mentions", "entities")


def _ms(f) -> float:  # noqa: ANN001
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000.0


def _profile_with(vectors_ann_min: int):  # noqa: ANN202
    return load_profile("rrf").with_overrides({"index.ann_min": vectors_ann_min})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    conn = open_db(args.db)
    n = int(conn.execute("SELECT count(*) FROM passages").fetchone()[0])
    from memo.embed.service import semantic_services

    services = ArmServices.of(semantic_services(conn, DEFAULT_MODEL_ID))
    dims = services.semantic.index.dimensions
    t0 = time.perf_counter()
    built = build_ann_index(conn, DEFAULT_MODEL_ID, dims)
    build_s = time.perf_counter() - t0
    conn.execute_native("ANALYZE", None)

    rng = np.random.default_rng(16)
    queries = [q for _, q in scifact_queries()][: args.queries]
    qvecs = rng.standard_normal((len(queries), dims)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    exact_prof, hnsw_prof = _profile_with(n + 1), _profile_with(0)

    def floor_text(q: str) -> None:
        words = q.split()
        lx = lexemes(conn, "passages_fts", words)
        if lx:
            conn.execute_native("SELECT pk FROM passages WHERE tsv @@ %s::tsquery "
                                "ORDER BY ts_rank(tsv, %s::tsquery) DESC LIMIT 100",
                                (tsquery_of(lx), tsquery_of(lx))).fetchall()

    def floor_vec(v: np.ndarray) -> None:
        conn.execute_native("SELECT passage_pk FROM vectors WHERE model_id = %s ORDER BY vec <#> %s::vector LIMIT 100",
                            (DEFAULT_MODEL_ID, literal(v))).fetchall()

    variants = {
        "floor ts_rank": lambda q, v: floor_text(q),
        "floor exact scan": lambda q, v: floor_vec(v),
        "keyword": lambda q, v: search(conn, SearchRequest(q, mode="keyword", limit=10), exact_prof),
        "hybrid exact": lambda q, v: search(conn, SearchRequest(q, limit=10), exact_prof,
                                            services.with_(query_vector=v)),
        "hybrid hnsw": lambda q, v: search(conn, SearchRequest(q, limit=10), hnsw_prof,
                                           services.with_(query_vector=v)),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for i, (q, v) in enumerate(zip(queries, qvecs, strict=True)):
        for k in names[i % len(names):] + names[: i % len(names)]:
            times[k].append(_ms(lambda: variants[k](q, v)))   # noqa: B023
    p50 = {k: statistics.median(t) for k, t in times.items()}
    p95 = {k: float(np.percentile(t, 95)) for k, t in times.items()}
    floors = {"keyword": "floor ts_rank", "hybrid exact": "floor exact scan", "hybrid hnsw": "floor exact scan"}
    sizes = {t: int(conn.execute_native("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0]) for t in TABLES}
    ann = conn.execute_native("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'vectors_hnsw_%%'").fetchall()
    ann_bytes = sum(int(conn.execute_native("SELECT pg_relation_size(%s)", (r[0],)).fetchone()[0]) for r in ann)
    db_bytes = int(conn.execute_native("SELECT pg_database_size(current_database())").fetchone()[0])
    out = {"passages": n, "queries": len(queries), "hnsw_build_s": round(build_s, 1) if built else None,
           "p50_ms": {k: round(v, 2) for k, v in p50.items()},
           "p95_ms": {k: round(v, 2) for k, v in p95.items()},
           "ratio_to_floor": {k: round(p50[k] / p50[f], 3) for k, f in floors.items()},
           "bytes_per_passage": {t: round(b / n, 1) for t, b in sizes.items()},
           "hnsw_index_bytes_per_passage": round(ann_bytes / n, 1),
           "database_bytes": db_bytes}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{n:,} passages, {len(queries)} queries" + (f"; HNSW built in {build_s:.0f} s" if built else ""))
        for k in names:
            r = f"  ratio {p50[k] / p50[floors[k]]:.3f} to {floors[k]}" if k in floors else ""
            print(f"  {k:18s} p50 {p50[k]:8.2f} ms  p95 {p95[k]:8.2f} ms{r}")
        print("  bytes per passage: " + ", ".join(f"{t} {b / n:,.0f}" for t, b in sizes.items())
              + f", hnsw index {ann_bytes / n:,.0f}; database {db_bytes / 2**20:,.0f} MiB")
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
