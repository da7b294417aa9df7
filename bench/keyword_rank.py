"""The keyword arm's rankings over the persistent postings, alone (issue 31.2: a cold keyword
search's ranking; 31.5: the warm one at 1M).

Reads SciFact claims (the bundled sample's 20, then the full set's from ../shared/datasets,
``--queries`` in all) and ranks each over a database's postings (e.g. the 100k or 1M file of
``bench/scale_build.py``), the first ``--depth`` (100, the keyword arm's fetch depth) of the
order, in one process:

    python   the Python ranking a cold process uses (numpy not needed), uncapped: time and
             postings visited
    dense    numpy's sum of every posting of every word, warm (the words' postings and
             terms cached by a first pass, as a server has them)
    pruned   numpy with MaxScore's pruning (``memo.retrieve.kw_rank.NumpyPruned``), warm; the
             arm uses it once a query's words hold ``kw_search.PRUNE_POSTINGS`` postings

and prints the median, p90 and mean of each (ms), the median postings visited and held, and
checks that every ranking returns the dense sum's order and scores (``--no-check`` skips it).
The floor of the same run: one ``numpy.bincount`` over the same postings with precomputed
weights (the dense sum without reading, caching or ordering).

``--memo-path DIR`` ranks with another checkout's memo (the "before" of a comparison; a
checkout without ``kw_rank`` has no pruned numpy ranking and its Python ranking is
``kw_search._PyRank``).

    python bench/keyword_rank.py --db <the 100k file of bench/scale_build.py> [--queries 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "scifact" / "queries.jsonl"
SHARED = ROOT.parent / "shared" / "datasets" / "scifact" / "queries.jsonl"


def claims(n: int) -> list[str]:
    out = [json.loads(line)["text"] for line in SAMPLE.read_text().splitlines()]
    if SHARED.exists():
        seen = set(out)
        out += [t for t in (json.loads(line)["text"] for line in SHARED.read_text().splitlines()) if t not in seen]
    return out[:n]


def _stats(ms: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(ms), 2), "p90_ms": round(sorted(ms)[int(0.9 * len(ms))], 2),
            "mean_ms": round(statistics.mean(ms), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--memo-path", help="rank with this checkout's memo")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.memo_path).resolve()) if args.memo_path else str(ROOT))
    import numpy as np

    from memo.retrieve import kw_search
    from memo.store.connect import read_tx
    from memo.store.db import open_db
    try:
        from memo.retrieve import kw_rank
    except ImportError:          # an older checkout: the rankings lived in kw_search
        kw_rank = None

    def python_rank(conn, meta, stems):
        if kw_rank is None:
            return kw_search._PyRank.of(conn, meta, stems, 1.0, None)
        return kw_search._py_rank(conn, meta, stems, 1.0, None)

    def dense_rank(conn, meta, stems):
        cls = kw_search._NumpyRank if kw_rank is None else kw_rank.NumpyRank
        return cls(kw_search.scores(conn, meta, stems, 1.0))

    def pruned_rank(conn, meta, stems):
        return kw_rank.NumpyPruned(kw_search._terms(conn, meta, stems), meta, 1.0)

    rankings = {"python": python_rank, "dense": dense_rank}
    if kw_rank is not None:
        rankings["pruned"] = pruned_rank
    conn = open_db(args.db, write=False)
    times: dict[str, list[float]] = {k: [] for k in rankings}
    floor: list[float] = []
    visited: list[int] = []
    held: list[int] = []
    with read_tx(conn):
        meta = kw_search.usable(conn)
        if meta is None:
            raise SystemExit(f"{args.db}: no usable keyword postings (memo reindex builds them)")
        queries = [s for s in (kw_search.stems_of(conn, tuple(re.findall(r"\w+", q.lower())))
                               for q in claims(args.queries)) if s]
        for stems in queries:                    # warm: postings and their terms cached
            dense_rank(conn, meta, stems).order(args.depth)
        for stems in queries:
            expected = None
            for name, rank in rankings.items():
                t0 = time.perf_counter()
                r = rank(conn, meta, stems)
                order = r.order(args.depth)
                times[name].append((time.perf_counter() - t0) * 1000)
                got = (order, [r.score(p) for p in order])
                if name == "python":
                    visited.append(r._visited)
                if expected is None:
                    expected = got
                elif not args.no_check and got != expected:
                    raise SystemExit(f"{name} ranks {stems} differently from the python ranking")
            terms = kw_search._terms(conn, meta, stems)
            held.append(sum(len(t.pks) for t in terms))
            every = np.concatenate([t.pks.astype(np.int64) for t in terms])
            weights = np.ones(len(every), dtype=np.float64)
            t0 = time.perf_counter()
            np.bincount(every, weights=weights, minlength=int(every.max()) + 1)
            floor.append((time.perf_counter() - t0) * 1000)
    doc = {"db": args.db, "queries": len(queries), "depth": args.depth, "rows": meta.rows,
           "rankings": {k: _stats(v) for k, v in times.items()}, "floor_bincount": _stats(floor),
           "python_visited_median": statistics.median(visited), "postings_held_median": statistics.median(held)}
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    print(f"{doc['queries']} claims over {args.db} ({meta.rows:,} passages), first {args.depth}; "
          f"postings held per claim (median) {doc['postings_held_median']:,.0f}, "
          f"visited by the Python ranking {doc['python_visited_median']:,.0f}")
    print(f"{'ranking':<10} {'median ms':>10} {'p90 ms':>8} {'mean ms':>8} {'x floor':>8}")
    for name, st in [*doc["rankings"].items(), ("floor", doc["floor_bincount"])]:
        x = st["median_ms"] / doc["floor_bincount"]["median_ms"]
        print(f"{name:<10} {st['median_ms']:10.2f} {st['p90_ms']:8.2f} {st['mean_ms']:8.2f} {x:8.2f}")


if __name__ == "__main__":
    main()
