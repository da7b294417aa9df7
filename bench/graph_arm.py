"""Graph arm latency on a synthetic mention graph (issue 11.7: p50 <= 30 ms at 100k passages).

Builds (once, cached under $MEMO_CACHE or ./.cache/memo-bench) a database of N passages
(default 100,000, in records of 100) whose mentions are drawn at random: E entities
(default N / 5) with Zipf-like popularity (weight 1 / rank^0.8), 3-6 distinct entities per
passage.  Rows are written straight into passages / entities / entity_aliases / mentions
(the keyword indexes stay empty: only the graph arm is timed).  Then Q queries "<a> and <b>"
naming two random entities that are not common run through ``memo.retrieve.search``
(profile rrf, mode auto, no model), and the graph arm's own latency is read from the
trace (``trace.arms[graph].latency_ms``; the first search, which loads the matrix, is
reported apart).  Prints the median, p95 and the graph's size; the median of one scipy
sparse matrix-vector product over all mention edges in the same run (the floor: one hop
of the exact power iteration); and the recall of the push walk's top-100 passages
against the exact power iteration (tolerance 1e-10) for ``--recall-queries`` two-seed
walks.

    python bench/graph_arm.py [--passages 100000] [--queries 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo.graph.cache import forget_graphs, mention_graph  # noqa: E402
from memo.graph.ppr import push_walk, transitions, walk  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, search  # noqa: E402
from memo.store.connect import write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402


def build(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_ent = max(n // 5, 10)
    conn = open_db(path)
    weights = 1.0 / np.arange(1, n_ent + 1) ** 0.8
    weights /= weights.sum()
    with write_tx(conn):
        conn.executemany("INSERT INTO entities(pk, key, name, kind) VALUES (?, ?, ?, 'name')",
                         [(i + 1, f"entity{i}", f"Entity{i}") for i in range(n_ent)])
        conn.executemany("INSERT INTO entity_aliases(alias, entity_pk) VALUES (?, ?)",
                         [(f"entity{i}", i + 1) for i in range(n_ent)])
        pk = 0
        for r in range(n // 100):
            rid = f"rbench{r:07d}"
            conn.execute("INSERT INTO records(id, namespace, kind, recorded_at, content_hash, body) "
                         "VALUES (?, 'bench', 'doc', '2026-01-01T00:00:00.000000Z', ?, 'x')", (rid, rid))
            rows, mrows = [], []
            for o in range(100):
                pk += 1
                rows.append((pk, f"{rid}:{o}", rid, o, "synthetic passage", 3))
                k = int(rng.integers(3, 7))
                for e in set(rng.choice(n_ent, size=k, p=weights).tolist()):
                    mrows.append((pk, e + 1))
            conn.executemany("INSERT INTO passages(pk, id, record_id, ord, text, tokens) VALUES (?, ?, ?, ?, ?, ?)",
                             rows)
            conn.executemany("INSERT INTO mentions(passage_pk, entity_pk, count) VALUES (?, ?, 1)", mrows)
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--recall-queries", type=int, default=30)
    ap.add_argument("--epsilon", type=float, default=None, help="graph.epsilon (default: the rrf profile's)")
    args = ap.parse_args()
    root = Path(os.environ.get("MEMO_CACHE", ".cache")) / "memo-bench"
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"graph-{args.passages}-{args.seed}.db"
    if not path.exists():
        t0 = time.perf_counter()
        build(path, args.passages, args.seed)
        print(f"built {path} in {time.perf_counter() - t0:.1f} s")
    conn = open_db(path, write=False)
    prof = load_profile("rrf")
    if args.epsilon is not None:
        prof = prof.with_overrides({"graph.epsilon": args.epsilon})
    forget_graphs()
    t0 = time.perf_counter()
    g = mention_graph(conn)
    load = (time.perf_counter() - t0) * 1000
    n_p, n_e = g.W.shape
    df = np.asarray(g.WT.sum(axis=1)).ravel()
    rng = np.random.default_rng(args.seed + 1)
    # entities that are not common (<= 25% of passages) and mentioned at least twice
    pool = np.flatnonzero((df >= 2) & (df <= 0.25 * n_p))
    lat, ran, cands = [], 0, []
    first = None
    for i in range(args.queries + 1):
        a, b = rng.choice(pool, size=2, replace=False)
        q = f"entity{g.entity_pks[a] - 1} and entity{g.entity_pks[b] - 1}"
        resp = search(conn, SearchRequest(q, limit=10), prof)
        arm = next(x for x in resp.trace.arms if x.name == "graph")
        if i == 0:
            first = arm.latency_ms
            continue
        if arm.ran:
            ran += 1
            lat.append(arm.latency_ms)
            cands.append(arm.candidates)
    lat.sort()
    # Floor measured in the same run: one sparse matrix-vector product over every mention
    # edge (scipy), the unit of work of each power-iteration hop.
    vec = np.ones(n_e)
    mv = []
    for _ in range(50):
        t0 = time.perf_counter()
        g.W @ vec
        mv.append((time.perf_counter() - t0) * 1000)
    floor = statistics.median(mv)
    # Recall of the push walk's top-100 against the exact power iteration (same masks, same
    # seeds, tolerance 1e-10), passages every seed mentions excluded as the arm does.
    t = transitions(g.W, g.WT, np.ones(n_p, dtype=bool), (df <= prof.entities.common_share * n_p))
    recalls, reported = [], []
    for _ in range(args.recall_queries if prof.graph.epsilon > 0 else 0):
        a, b = (int(x) for x in rng.choice(pool, size=2, replace=False))
        exact = walk(t, [a, b], damping=prof.graph.damping, iterations=1000, tolerance=1e-10).passages.sum(axis=1)
        approx = push_walk(t, [a, b], damping=prof.graph.damping, epsilon=prof.graph.epsilon).passages.sum(axis=1)
        floor_e = prof.graph.report_floor * exact.max()
        floor_a = prof.graph.report_floor * approx.max()
        direct = np.zeros(n_p, dtype=bool)
        direct[np.intersect1d(g.WT[a].indices, g.WT[b].indices)] = True
        exact[direct] = approx[direct] = 0.0
        k = min(100, int((exact > 0).sum()))
        if k == 0:
            continue
        # top-100 of the exact walk, ties at the 100th value counted as hits
        kth = np.sort(exact)[::-1][k - 1]
        top_a = np.argsort(-approx, kind="stable")[:k]
        recalls.append(float((exact[top_a] >= kth * (1 - 1e-9)).sum()) / k)
        # what the arm reports: mass >= report_floor x the largest, at most fetch_depth
        rep_e = set(np.flatnonzero(exact >= max(floor_e, 1e-300)).tolist())
        rep_a = set(np.flatnonzero(approx >= max(floor_a, 1e-300)).tolist())
        if rep_e:
            reported.append(len(rep_e & rep_a) / len(rep_e))
    print(f"graph: {n_p:,} passages, {n_e:,} entities, {g.W.nnz:,} mention edges; matrix load {load:.0f} ms")
    print(f"graph arm over {ran} routed queries (of {args.queries}): p50 {statistics.median(lat):.2f} ms, "
          f"p95 {lat[int(0.95 * (len(lat) - 1))]:.2f} ms, max {lat[-1]:.2f} ms; first search {first:.1f} ms "
          f"(scope mask built); median candidates {statistics.median(cands):.0f}")
    print(f"floor: one sparse mat-vec over all edges (scipy) p50 {floor:.2f} ms; graph arm p50 / floor = "
          f"{statistics.median(lat) / floor:.1f}")
    if not recalls:
        return
    print(f"push (epsilon {prof.graph.epsilon:g}) vs exact power iteration over {len(recalls)} two-seed walks: "
          f"top-100 recall mean {statistics.mean(recalls):.3f}, min {min(recalls):.3f}; recall of the reported "
          f"set (mass >= graph.report_floor x max) mean {statistics.mean(reported):.3f}, min {min(reported):.3f}")


if __name__ == "__main__":
    main()
