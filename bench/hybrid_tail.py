"""Warm hybrid searches one claim at a time, and where the slow ones spend their time (issue
31.5: the p95 of scale.py's hybrid row).

    nice -n 5 .venv/bin/python bench/hybrid_tail.py --db .cache/scale/memo-1m-s16-random-b1-v7.db \
        [--profile zscore] [--queries 100] [--slowest 8] [--json]

Each SciFact test claim (the first ``--queries``) is searched once, mode auto, its query
vector embedded before the clock (as scale.py's ``hybrid_noembed``), after three warm-up
searches; then the floor, bare FTS5 ``MATCH '"a" OR "b" ...' ORDER BY bm25 LIMIT 100`` over
the same claims, timed after the searches (not interleaved: the floor's scans would empty
the CPU caches the searches see).  Printed: p50 / p95 / max of the search, their ratios to
the floor's p50, each arm's p50 / p95 (trace latencies), and the slowest searches with their
arms' latencies: what to look at next.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_build import scifact_queries  # noqa: E402

from memo.embed.service import semantic_services  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, search  # noqa: E402
from memo.retrieve.services import ArmServices  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.text.fts_query import keyword_match  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--profile", default="zscore")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--slowest", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    conn = open_db(args.db, write=False)
    prof = load_profile(args.profile)
    services = ArmServices.of(semantic_services(conn))
    queries = [q for _, q in scifact_queries()][:args.queries]
    vectors = [services.semantic.embed_query(q) for q in queries]       # loads the model (not timed)
    for i in range(min(3, len(queries))):
        search(conn, SearchRequest(query=queries[i]), prof, services.with_(query_vector=vectors[i]))
    rows = []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        res = search(conn, SearchRequest(query=q, response_format="explain"), prof,
                     services.with_(query_vector=vectors[i]))
        ms = (time.perf_counter() - t) * 1000.0
        rows.append({"ms": round(ms, 2), "query": q,
                     "arms": {a.name: round(a.latency_ms, 1) for a in res.trace.arms if a.latency_ms}})
    floor = []
    for q in queries:
        t = time.perf_counter()
        conn.execute("SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ?"
                     " ORDER BY s LIMIT 100", (keyword_match(q),)).fetchall()
        floor.append((time.perf_counter() - t) * 1000.0)
    conn.close()
    ms = [r["ms"] for r in rows]
    f50 = statistics.median(floor)
    arms = sorted({a for r in rows for a in r["arms"]})
    out = {"db": args.db, "profile": args.profile, "queries": len(queries),
           "search_ms": {"p50": round(statistics.median(ms), 1), "p95": round(pct(ms, 0.95), 1), "max": round(max(ms), 1)},
           "floor_fts_or_p50_ms": round(f50, 1),
           "ratio_to_floor": {"p50": round(statistics.median(ms) / f50, 3), "p95": round(pct(ms, 0.95) / f50, 3)},
           "arms_ms": {a: {"p50": round(statistics.median([r["arms"].get(a, 0.0) for r in rows]), 1),
                           "p95": round(pct([r["arms"].get(a, 0.0) for r in rows], 0.95), 1)} for a in arms},
           "slowest": sorted(rows, key=lambda r: -r["ms"])[:args.slowest]}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    s = out["search_ms"]
    print(f"{out['queries']} claims, {args.profile}: search p50 {s['p50']} ms, p95 {s['p95']}, max {s['max']}; "
          f"FTS5 OR floor p50 {out['floor_fts_or_p50_ms']} ms (ratio p50 {out['ratio_to_floor']['p50']}, "
          f"p95 {out['ratio_to_floor']['p95']})")
    for a, v in out["arms_ms"].items():
        print(f"  arm {a:9s} p50 {v['p50']:8.1f} ms  p95 {v['p95']:8.1f} ms")
    print("slowest:")
    for r in out["slowest"]:
        print(f"  {r['ms']:8.1f} ms  {r['arms']}  {r['query'][:60]}")


if __name__ == "__main__":
    main()
