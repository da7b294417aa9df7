"""PostgreSQL semantic arm (issue 17.2): recall and latency of the HNSW plan against the
exact plan on the same server, with and without a scope filter.

    .venv/bin/python bench/pg_ann_recall.py --db postgresql://... [--dataset scifact] [--queries 300]
    .venv/bin/python bench/pg_ann_recall.py --db postgresql://... --random 100000 [--queries 100]
    .venv/bin/python bench/pg_ann_recall.py --db postgresql://.../s100k --random-queries [--queries 100]

Default: the data set's index as ``memo eval run --db postgresql://...`` builds it (passages
and vectors must be there), its test queries' vectors from the harness cache.
``--random N``: N seeded random unit vectors (384-d) in a database of their own, the worst
case for an ANN index (no cluster structure); queries are random unit vectors too.
``--random-queries``: the database's own vectors of the default model (bench/scale_build.py's
seeded random ones) and random unit queries.

For each filter (none; ``p.pk % 2 = 0``, half the passages; ``p.pk % 20 = 0``, one in twenty)
and each query: the exact plan's top ``k`` (``vector_topk`` below ``ann_min``) and the
HNSW plan's (``ann_min = 0``, the profile's ``ann_overfetch``), recall@k = shared / k, the
plan the HNSW path actually took (``hnsw`` or ``hnsw_starved_exact``: too few candidates
survived the filter, the exact plan answered) and both latencies.  Prints medians and the
latency ratio HNSW / exact (the exact plan is the floor of the same run).  The index is
built if missing (its build time is printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo.profile import load_profile  # noqa: E402
from memo.store.connect import read_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.postgres.vectors import ann_index_exists, build_ann_index, vector_topk  # noqa: E402

FILTERS = {"none": "", "half": "p.pk % 2 = 0", "twentieth": "p.pk % 20 = 0"}


def _random_db(conn, n: int, dims: int, model_id: str) -> None:  # noqa: ANN001
    from memo.embed.vectors import write_vectors
    from memo.ops.add import add_record
    from memo.stored import RecordDraft

    have = conn.execute("SELECT count(*) FROM vectors WHERE model_id = ?", (model_id,)).fetchone()[0]
    if have >= n:
        return
    rng = np.random.default_rng(7)
    pks = [int(r[0]) for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
    while len(pks) < n:    # one short passage per vector (bulk: one record per 1,000 passages)
        body = "\n\n".join(f"passage {len(pks) + i}" for i in range(min(1000, n - len(pks))))
        add_record(conn, RecordDraft(body=body, kind="note", meta={"split": "paragraphs"}))
        pks = [int(r[0]) for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
    for s in range(0, n, 5000):
        v = rng.standard_normal((min(5000, n - s), dims)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        write_vectors(conn, model_id, pks[s:s + len(v)], v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True, help="postgresql://... (the data set's index, or a random one)")
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--random", type=int, default=0, help="N random vectors instead of a data set")
    ap.add_argument("--random-queries", action="store_true",
                    help="the database's default-model vectors, random unit queries")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--profile", default="rrf")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    cfg = load_profile(args.profile).index
    ann_cfg = dataclasses.replace(cfg, ann_min=0)
    conn = open_db(args.db)
    if args.random_queries:
        from memo.embed import DEFAULT_MODEL_ID

        model_id, dims = DEFAULT_MODEL_ID, 384
        rng = np.random.default_rng(11)
        qv = rng.standard_normal((args.queries, dims)).astype(np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    elif args.random:
        model_id, dims = "random-384", 384
        _random_db(conn, args.random, dims, model_id)
        rng = np.random.default_rng(11)
        qv = rng.standard_normal((args.queries, dims)).astype(np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    else:
        from memo_eval.datasets import load_eval_set
        from memo_eval.index import query_vectors

        model_id, qv = query_vectors(load_eval_set(args.dataset))
        qv = np.asarray(qv, dtype=np.float32)[: args.queries]
        dims = qv.shape[1]
    n_vec = conn.execute("SELECT count(*) FROM vectors WHERE model_id = ?", (model_id,)).fetchone()[0]
    t0 = time.perf_counter()
    built = build_ann_index(conn, model_id, dims)
    build_s = time.perf_counter() - t0
    assert ann_index_exists(conn, model_id)
    conn.execute_native("ANALYZE vectors", None)

    out: dict[str, object] = {"vectors": n_vec, "model_id": model_id, "k": args.k, "queries": len(qv),
                              "ann_overfetch": cfg.ann_overfetch,
                              "index_build_s": round(build_s, 1) if built else None, "filters": {}}
    for name, where in FILTERS.items():
        recalls, t_exact, t_ann, plans = [], [], [], {}
        for q in qv:
            with read_tx(conn):
                t = time.perf_counter()
                exact = vector_topk(conn, model_id, q, where, (), args.k, in_scope=0, cfg=cfg)
                t_exact.append((time.perf_counter() - t) * 1000)
            with read_tx(conn):
                plan: list[str] = []
                t = time.perf_counter()
                ann = vector_topk(conn, model_id, q, where, (), args.k, in_scope=n_vec, cfg=ann_cfg, plan_out=plan)
                t_ann.append((time.perf_counter() - t) * 1000)
            plans[plan[0]] = plans.get(plan[0], 0) + 1
            want = {pk for pk, _ in exact}
            recalls.append(len(want & {pk for pk, _ in ann}) / max(1, len(want)))
        out["filters"][name] = {  # type: ignore[index]
            "recall_at_k_mean": round(statistics.fmean(recalls), 4),
            "recall_at_k_min": round(min(recalls), 4),
            "exact_p50_ms": round(statistics.median(t_exact), 2),
            "hnsw_p50_ms": round(statistics.median(t_ann), 2),
            "ratio_hnsw_to_exact": round(statistics.median(t_ann) / statistics.median(t_exact), 3),
            "plans": plans,
        }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{n_vec} vectors ({model_id}), k={args.k}, {len(qv)} queries, ann_overfetch {cfg.ann_overfetch:g}"
              + (f", HNSW built in {build_s:.1f} s" if built else ""))
        for name, r in out["filters"].items():  # type: ignore[union-attr]
            print(f"  filter {name:9s} recall@{args.k} mean {r['recall_at_k_mean']:.4f} min {r['recall_at_k_min']:.4f}"
                  f"  exact p50 {r['exact_p50_ms']:.1f} ms  hnsw p50 {r['hnsw_p50_ms']:.1f} ms"
                  f"  ratio {r['ratio_hnsw_to_exact']:.3f}  plans {r['plans']}")
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
