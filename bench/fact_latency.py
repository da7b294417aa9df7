"""Fact arm latency on LoCoMo with observations (issue 10.6): p50 / p95 of the fact arm
alone (``FactArm.run``: fact keyword top-k, fact meaning top-k, the votes query) per
question, each searched inside its own conversation as the eval does, plus the arm's cost
on the same index without facts and on SciFact (no facts: the arm finds nothing).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/fact_latency.py [--json] [--repeat 3]

Uses the eval harness's cached indexes and query vectors (``memo eval run -d locomo-obs``
builds them; this script builds them too when missing).  Times are wall clock per call,
after one warm-up pass (the per-scope allowed-fact sets and the fact matrix are cached per
connection / process, as in a server or an eval replay).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo.embed.service import semantic_services  # noqa: E402
from memo.retrieve.arms.base import ArmContext  # noqa: E402
from memo.retrieve.arms.fact import FactArm  # noqa: E402
from memo.retrieve.scope import build_scope_sql  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.types import Scope  # noqa: E402
from memo_eval.datasets import load_eval_set  # noqa: E402
from memo_eval.index import build_index, ensure_fact_vectors, ensure_passage_vectors, query_vectors  # noqa: E402


def measure(name: str, repeat: int) -> dict[str, object]:
    es = load_eval_set(name)
    built = build_index(es)
    ensure_passage_vectors(built.path, es.name.removesuffix("-obs"), progress=False)
    if es.facts is not None:
        ensure_fact_vectors(built.path, es.name)
    model_id, qvecs = query_vectors(es)
    conn = open_db(built.path, write=False)
    services = semantic_services(conn, model_id)
    services["semantic"].status()
    arm = FactArm()
    ctxs = []
    for q, vec in zip(es.queries, qvecs, strict=True):
        scope = Scope(namespaces=(q.namespace,) if q.namespace else ())
        ctxs.append(ArmContext(conn=conn, query=q.text, mode="auto", scope_sql=build_scope_sql(scope),
                               fetch_depth=100, services={**services, "query_vector": vec}, scope=scope))
    for ctx in ctxs:                      # warm-up: caches, fact matrix load
        arm.run(ctx)
    times, hits, matched = [], [], []
    for _ in range(repeat):
        for ctx in ctxs:
            t0 = time.perf_counter()
            out = arm.run(ctx)
            times.append((time.perf_counter() - t0) * 1000.0)
            hits.append(len(out))
            matched.append(len({v.fact_id for h in out for v in h.votes}))
    conn.close()
    times.sort()
    return {"dataset": name, "queries": len(ctxs), "calls": len(times),
            "p50_ms": round(statistics.median(times), 3), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
            "mean_candidates": round(statistics.mean(hits), 1), "mean_matched_facts": round(statistics.mean(matched), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dataset", action="append", help="default: locomo-obs, locomo, scifact")
    args = ap.parse_args()
    rows = [measure(name, args.repeat) for name in (args.dataset or ["locomo-obs", "locomo", "scifact"])]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'data set':<12} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8} {'candidates':>10} {'facts':>6}")
    for r in rows:
        print(f"{r['dataset']:<12} {r['queries']:>7} {r['p50_ms']:>8} {r['p95_ms']:>8} "
              f"{r['mean_candidates']:>10} {r['mean_matched_facts']:>6}")


if __name__ == "__main__":
    main()
