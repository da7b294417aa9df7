"""Graph arm latency on a synthetic mention graph (issue 11.7: p50 <= 30 ms at 100k passages).

Builds (once, cached under $MEMO_CACHE or ./.cache/memo-bench) a database of N passages
(default 100,000, in records of 100) whose mentions are drawn at random: E entities
(default N / 5) with Zipf-like popularity (weight 1 / rank^0.8), 3-6 distinct entities per
passage.  Rows are written straight into passages / entities / entity_aliases / mentions
(the keyword indexes stay empty: only the graph arm is timed).  Then Q queries "<a> and <b>"
naming two random entities that are not common run through ``memo.retrieve.search``
(profile rrf, mode auto, no model), and the graph arm's own latency is read from the
trace (``trace.arms[graph].latency_ms``; the first search, which builds the scope masks,
is reported apart).  Prints the median, p95 and the graph's size; in the same run two
floors: the median of one scipy sparse matrix-vector product over all mention edges (one
hop of the exact power iteration) and of one bare SQLite read of the two seeds' mention
rows (``SELECT passage_pk FROM mentions WHERE entity_pk IN (?, ?)``, the least any
search naming them reads); and the recall of the push walk's top-100 passages against the
exact power iteration (tolerance 1e-10) for ``--recall-queries`` two-seed walks.

First search of a process (issue 29.5: <= 100 ms at 10k passages): ``--first-runs`` fresh
processes each open the database and time their first search (wall of ``search()`` and
the graph arm's trace latency: mention graph read, scope masks, walk), with numpy already
imported as a search with a model has it (the embedder needs it), memo's bytecode cached as an
installed package has it (one discarded process writes it first); each also times, before
that search, numpy's import and the process's first bare SQLite read of the same mention
rows (the floors of a first search).  ``--memo-path DIR`` runs those processes against
another checkout (the "before" of a comparison in one session).

    python bench/graph_arm.py [--passages 100000] [--queries 200] [--seed 7] [--first-runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo.graph.cache import forget_graphs, mention_graph  # noqa: E402
from memo.graph.ppr import push_walk, transitions, walk  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, search  # noqa: E402
from memo.store import kw_postings  # noqa: E402
from memo.store.connect import write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.derived import rebuild_keyword_index  # noqa: E402


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
    # The keyword index and its postings too: a search counts the in-scope passages from them
    # (without them every passage is out of scope and nothing routes).
    with write_tx(conn):
        rebuild_keyword_index(conn)
    with write_tx(conn):
        kw_postings.rebuild(conn)
    conn.close()


# One fresh process's first search (run with ``python -P -c``; PYTHONPATH picks the code).
FIRST_CHILD = r"""
import json, sqlite3, sys, time
path, q, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
import numpy
numpy_ms = (time.perf_counter() - t0) * 1000
from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.store.db import open_db
prof = load_profile("rrf")
raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
t0 = time.perf_counter()
raw.execute("SELECT passage_pk FROM mentions WHERE entity_pk IN (?, ?)", (a, b)).fetchall()
sql_ms = (time.perf_counter() - t0) * 1000
raw.close()
conn = open_db(path, write=False)
t0 = time.perf_counter()
resp = search(conn, SearchRequest(q, limit=10), prof)
wall = (time.perf_counter() - t0) * 1000
arm = next(x for x in resp.trace.arms if x.name == "graph")
print(json.dumps({"numpy_import_ms": numpy_ms, "first_sql_ms": sql_ms, "search_ms": wall,
                  "graph_ms": arm.latency_ms, "ran": arm.ran, "scipy": "scipy" in sys.modules}))
"""


def first_searches(path: Path, pairs: list[tuple[int, int, str]], memo_path: str) -> dict[str, float]:
    """Medians over fresh processes (one per pair) of their first search (FIRST_CHILD)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [memo_path, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]))
    # As an installed package runs: modules' bytecode cached (a first, discarded process
    # writes it), not compiled from source by every process.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs = []
    for a, b, q in [pairs[0], *pairs]:
        out = subprocess.run([sys.executable, "-P", "-c", FIRST_CHILD, str(path), q, str(a), str(b)],
                             env=env, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    runs = runs[1:]
    keys = ("search_ms", "graph_ms", "numpy_import_ms", "first_sql_ms")
    res: dict[str, float] = {f"first_{k}_p50": round(statistics.median(r[k] for r in runs), 1) for k in keys}
    res["first_runs"] = len(runs)
    res["first_graph_ms_runs"] = [round(r["graph_ms"], 1) for r in runs]
    res["first_loaded_scipy"] = any(r["scipy"] for r in runs)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--recall-queries", type=int, default=30)
    ap.add_argument("--epsilon", type=float, default=None, help="graph.epsilon (default: the rrf profile's)")
    ap.add_argument("--first-runs", type=int, default=5, help="fresh processes timing their first search")
    ap.add_argument("--memo-path", default=str(Path(__file__).resolve().parents[1]),
                    help="checkout whose memo the first-search processes import")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = Path(os.environ.get("MEMO_CACHE", ".cache")) / "memo-bench"
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"graph-{args.passages}-{args.seed}-kw.db"   # -kw: with the keyword index (see build)
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
    df = np.diff(g.WT.indptr)
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
    # Floors measured in the same run: one sparse matrix-vector product over every mention
    # edge (scipy), the unit of work of each power-iteration hop; one bare SQLite read of
    # two seeds' mention rows.
    W = g.W.to_scipy() if hasattr(g.W, "to_scipy") else g.W
    vec = np.ones(n_e)
    mv = []
    for _ in range(50):
        t0 = time.perf_counter()
        W @ vec
        mv.append((time.perf_counter() - t0) * 1000)
    floor = statistics.median(mv)
    sql = []
    for _ in range(50):
        a, b = (int(g.entity_pks[x]) for x in rng.choice(pool, size=2, replace=False))
        t0 = time.perf_counter()
        conn.execute("SELECT passage_pk FROM mentions WHERE entity_pk IN (?, ?)", (a, b)).fetchall()
        sql.append((time.perf_counter() - t0) * 1000)
    sql_floor = statistics.median(sql)
    firsts: dict[str, object] = {}
    if args.first_runs > 0:
        pairs = []
        for _ in range(args.first_runs):
            a, b = rng.choice(pool, size=2, replace=False)
            pairs.append((int(g.entity_pks[a]), int(g.entity_pks[b]),
                          f"entity{g.entity_pks[a] - 1} and entity{g.entity_pks[b] - 1}"))
        firsts = first_searches(path, pairs, args.memo_path)
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
        direct[np.intersect1d(g.WT.indices[g.WT.indptr[a]:g.WT.indptr[a + 1]],
                              g.WT.indices[g.WT.indptr[b]:g.WT.indptr[b + 1]])] = True
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
    p50 = statistics.median(lat)
    out = {"passages": n_p, "entities": n_e, "edges": int(g.W.nnz), "matrix_load_ms": round(load, 1),
           "queries": args.queries, "routed": ran, "p50_ms": round(p50, 2),
           "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2), "max_ms": round(lat[-1], 2),
           "first_in_process_ms": round(first, 1), "median_candidates": statistics.median(cands),
           "matvec_floor_ms": round(floor, 3), "p50_over_matvec": round(p50 / floor, 1),
           "sql_floor_ms": round(sql_floor, 3), "p50_over_sql": round(p50 / sql_floor, 1), **firsts,
           "load_avg_1m": round(os.getloadavg()[0], 1)}
    if recalls:
        out.update({"recall_walks": len(recalls), "top100_recall_mean": round(statistics.mean(recalls), 3),
                    "top100_recall_min": round(min(recalls), 3),
                    "reported_recall_mean": round(statistics.mean(reported), 3),
                    "reported_recall_min": round(min(reported), 3)})
    if args.json:
        print(json.dumps(out))
        return
    print(f"graph: {n_p:,} passages, {n_e:,} entities, {g.W.nnz:,} mention edges; matrix load {load:.0f} ms")
    print(f"graph arm over {ran} routed queries (of {args.queries}): p50 {p50:.2f} ms, "
          f"p95 {lat[int(0.95 * (len(lat) - 1))]:.2f} ms, max {lat[-1]:.2f} ms; first search {first:.1f} ms "
          f"(matrix loaded, scope masks built); median candidates {statistics.median(cands):.0f}")
    print(f"floors: one sparse mat-vec over all edges (scipy) p50 {floor:.2f} ms, graph arm p50 / floor = "
          f"{p50 / floor:.1f}; one bare SQLite read of two entities' mentions p50 {sql_floor:.3f} ms, "
          f"graph arm p50 / floor = {p50 / sql_floor:.1f}")
    if firsts:
        print(f"first search of a fresh process (median of {firsts['first_runs']}, numpy imported before): "
              f"search {firsts['first_search_ms_p50']} ms, graph arm {firsts['first_graph_ms_p50']} ms "
              f"(runs {firsts['first_graph_ms_runs']}); floors in those processes: numpy import "
              f"{firsts['first_numpy_import_ms_p50']} ms, first bare SQLite read {firsts['first_first_sql_ms_p50']} ms; "
              f"scipy loaded: {firsts['first_loaded_scipy']}")
    if not recalls:
        return
    print(f"push (epsilon {prof.graph.epsilon:g}) vs exact power iteration over {len(recalls)} two-seed walks: "
          f"top-100 recall mean {statistics.mean(recalls):.3f}, min {min(recalls):.3f}; recall of the reported "
          f"set (mass >= graph.report_floor x max) mean {statistics.mean(reported):.3f}, min {min(reported):.3f}")


if __name__ == "__main__":
    main()
