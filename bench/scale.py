"""Search speed at 100k and 1M passages, each figure next to its floor measured in the same
run (issue 16.1, 16.6).

    nice -n 5 .venv/bin/python bench/scale.py [--sizes 100k,1m] [--queries 200] [--cli-runs 5] [--json]

Databases: ``bench/scale_build.py`` (seeded, SciFact sentences recombined, random unit
vectors under the default model id; built once and cached under .cache/scale/).  Queries:
SciFact test claims (the first ``--queries``).  Per query, in rotating order so load
noise spreads evenly over the variants:

    floor fts_or     bare FTS5: MATCH '"a" OR "b" ...' ORDER BY bm25 LIMIT 100 (memo's own MATCH text)
    floor matvec     numpy: all vectors (float32, in memory) @ q, argpartition top-100, sorted
    floor vocab scan (the impact index build's) count(*) over fts5vocab 'instance': every posting
    keyword fts5     memo.retrieve.search, mode keyword, index.keyword = "fts5"
    keyword impact   the same with the derived impact index (memo/retrieve/impact.py)
    hybrid no-embed  mode auto, precomputed query vector (ArmServices.query_vector), impact index
    hybrid embed     mode auto, the query embedded by the ONNX model inside the search

then cold CLI processes (``python -m memo search Q [--mode keyword] --json``) against the
floor ``python -c "import sqlite3"``.  Printed: p50 / p95 (ms), ratio of p50 to the floor's
p50, the impact index build time and size, RSS (before the floor's own matrix is loaded)
and database size.  Timings on a shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
from scale_build import DEFAULT_SEED, ensure_built, parse_size, scifact_queries, size_label  # noqa: E402

from memo.embed import DEFAULT_MODEL_ID  # noqa: E402
from memo.embed.service import semantic_services  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, impact, search  # noqa: E402
from memo.retrieve.services import ArmServices  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.text.fts_query import keyword_match  # noqa: E402

TOP = 100


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def load_matrix(conn) -> np.ndarray:  # noqa: ANN001
    blobs = [r[0] for r in conn.execute("SELECT vec FROM vectors WHERE model_id = ? ORDER BY passage_pk",
                                        (DEFAULT_MODEL_ID,))]
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)


def in_process(path: Path, queries: list[str]) -> dict[str, object]:
    conn = open_db(path, write=False)
    fts5 = load_profile("rrf").with_overrides({"index.keyword": "fts5"})
    fast = load_profile("rrf").with_overrides({"index.keyword": "impact", "index.impact_min_passages": 0})
    rss0 = rss_mb()
    # Build floor: one pass over every posting through fts5vocab (what any index derived
    # from FTS5's own tokens must read), counted in SQLite without Python objects.
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.scale_vocab USING fts5vocab(main, passages_fts, 'instance')")
    t0 = time.perf_counter()
    conn.execute("SELECT count(*) FROM temp.scale_vocab").fetchone()
    scan_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = impact.ensure_index(conn)
    build_s = time.perf_counter() - t0
    rss_index = rss_mb()
    services = ArmServices.of(semantic_services(conn))
    svc = services.semantic
    qvecs = [svc.embed_query(q) for q in queries]          # loads the model (not timed)
    plain = ArmServices(semantic=svc)

    def kw(q: str, prof) -> None:  # noqa: ANN001
        search(conn, SearchRequest(query=q, mode="keyword"), prof, ArmServices())

    def fts_or(q: str) -> None:
        conn.execute("SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ?"
                     " ORDER BY s LIMIT ?", (keyword_match(q), TOP)).fetchall()

    variants = {
        "keyword_fts5": lambda i, q: kw(q, fts5),
        "keyword_impact": lambda i, q: kw(q, fast),
        "hybrid_noembed": lambda i, q: search(conn, SearchRequest(query=q), fast, services.with_(query_vector=qvecs[i])),
        "hybrid_embed": lambda i, q: search(conn, SearchRequest(query=q), fast, plain),
        "floor_fts_or": lambda i, q: fts_or(q),
    }
    for i, q in enumerate(queries[:3]):                     # warm-up: vector matrix, caches
        for fn in variants.values():
            fn(i, q)
    rss_memo = rss_mb()
    matrix = load_matrix(conn)                              # the floor's own copy
    variants["floor_matvec"] = lambda i, q: _matvec(matrix, qvecs[i])
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    before = dict(impact.STATS)
    for i, q in enumerate(queries):
        for name in names[i % len(names):] + names[:i % len(names)]:
            t = time.perf_counter()
            variants[name](i, q)
            times[name].append((time.perf_counter() - t) * 1000.0)
    served = {k: impact.STATS[k] - before[k] for k in ("impact", "fts5")}
    conn.close()
    return {"times": times, "impact_build_s": round(build_s, 2), "vocab_scan_s": round(scan_s, 2), "impact_mb": round(index.nbytes / 1e6, 1),
            "postings": int(len(index.rows)), "rss_open_mb": round(rss0, 1), "rss_after_index_mb": round(rss_index, 1),
            "rss_memo_mb": round(rss_memo, 1), "keyword_served": served}


def _matvec(matrix: np.ndarray, q: np.ndarray) -> None:
    s = matrix @ q
    top = np.argpartition(-s, TOP)[:TOP]
    top[np.argsort(-s[top])]


def cold_cli(path: Path, queries: list[str], runs: int) -> dict[str, list[float]]:
    env = dict(os.environ, MEMO_DB=str(path))
    py = sys.executable
    cmds = {"cli_floor": lambda q: [py, "-c", "import sqlite3"],
            "cli_keyword": lambda q: [py, "-m", "memo", "search", q, "--mode", "keyword", "--json"],
            "cli_hybrid": lambda q: [py, "-m", "memo", "search", q, "--json"]}
    out: dict[str, list[float]] = {k: [] for k in cmds}
    for r in range(runs):
        q = queries[r % len(queries)]
        for name, cmd in cmds.items():
            t = time.perf_counter()
            res = subprocess.run(cmd(q), env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
            out[name].append((time.perf_counter() - t) * 1000.0)
            if res.returncode != 0:
                raise SystemExit(f"{name} failed: {res.stderr[-1500:]}")
    return out


def summarise(n: int, path: Path, res: dict[str, object], cli: dict[str, list[float]]) -> dict[str, object]:
    t = {**res["times"], **cli}  # type: ignore[dict-item]
    p50 = {k: statistics.median(v) for k, v in t.items()}
    p95 = {k: pct(v, 0.95) for k, v in t.items()}
    floors = {"keyword_fts5": ("floor_fts_or",), "keyword_impact": ("floor_fts_or",),
              "hybrid_noembed": ("floor_fts_or", "floor_matvec"), "hybrid_embed": ("floor_fts_or", "floor_matvec"),
              "cli_keyword": ("cli_floor",), "cli_hybrid": ("cli_floor",)}
    rows = []
    for name, fl in floors.items():
        if name not in p50:
            continue
        floor = sum(p50[f] for f in fl)
        rows.append({"what": name, "p50_ms": round(p50[name], 2), "p95_ms": round(p95[name], 2),
                     "floor": "+".join(fl), "floor_p50_ms": round(floor, 2), "ratio": round(p50[name] / floor, 3)})
    for f in ("floor_fts_or", "floor_matvec", "cli_floor"):
        if f in p50:
            rows.append({"what": f, "p50_ms": round(p50[f], 2), "p95_ms": round(p95[f], 2)})
    size = sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists())
    extra = {k: v for k, v in res.items() if k != "times"}
    return {"passages": n, "db": str(path), "db_mb": round(size / 1e6, 1), "queries": len(res["times"]["floor_fts_or"]),
            "rows": rows, **extra, "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cores": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()]}


def show(s: dict[str, object]) -> None:
    print(f"\n{size_label(int(s['passages']))} passages: {s['db']} ({s['db_mb']} MB), {s['queries']} SciFact test claims,"
          f" {s['cores']} cores, load {s['load_avg']}")
    print(f"{'what':<16} {'p50 ms':>9} {'p95 ms':>9}  {'floor':<26} {'floor p50':>9} {'ratio':>7}")
    for r in s["rows"]:  # type: ignore[union-attr]
        print(f"{r['what']:<16} {r['p50_ms']:9.2f} {r['p95_ms']:9.2f}  {r.get('floor', ''):<26} "
              f"{r.get('floor_p50_ms', ''):>9} {r.get('ratio', ''):>7}")
    print(f"impact index: built in {s['impact_build_s']} s (floor: fts5vocab scan {s.get('vocab_scan_s')} s), "
          f"{s['impact_mb']} MB, {s['postings']:,} postings; "
          f"keyword searches served {s['keyword_served']}")
    print(f"RSS: open {s['rss_open_mb']} MB, + impact index {s['rss_after_index_mb']} MB, memo warm "
          f"{s['rss_memo_mb']} MB (before the floor's matrix), max {s['max_rss_mb']} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100k")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cli-runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    queries = [q for _, q in scifact_queries()][:args.queries]
    out = []
    for label in args.sizes.split(","):
        n = parse_size(label)
        path = ensure_built(n, args.seed, "random")
        res = in_process(path, queries)
        cli = cold_cli(path, queries, args.cli_runs) if args.cli_runs else {}
        s = summarise(n, path, res, cli)
        out.append(s)
        if not args.json:
            show(s)
    if args.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
