"""The keyword arm under writes, and a fresh CLI's keyword search (issue 31.1, 31.2), every
figure next to a floor timed in the same run.

    nice -n 5 .venv/bin/python bench/keyword_live.py [--n 100k] [--seconds 60] [--cli-runs 7] [--db PATH] [--json]

Database: ``bench/scale_build.py``'s cached one (``--vectors none``), copied to a scratch
file the run writes to (``--db``: copy that file instead).

**Mixed workload** (``--seconds`` per phase): a writer *process* adds one record (a
SciFact-sentence passage, as ``memo add`` writes it) every second; this process searches
in between, in rotating order over SciFact test claims:

    keyword    memo.retrieve.search, mode keyword, rrf as shipped (index.impact_min_passages
               lowered to 0 so a small --n runs the same path)
    floor      bare FTS5: MATCH '"a" OR "b" ...' ORDER BY bm25 LIMIT 100 (memo's own MATCH text)

Phase ``postings``: the persistent postings (memo/store/kw_postings.py) answer.  Phase
``inmemory``: the same with them switched off in this process (``kw_search.topk`` returns
None), i.e. the code before issue 31.1: the in-memory impact index, stale after every write,
FTS5 while it is rebuilt in a background thread.  Printed per phase: p50 / p99 of each,
the ratio of keyword p50 and p99 to the floor's p50, searches served by each path, and the
writer's own figures (its writes' median wall, of it the postings' delta append).

The rotation repeats each claim every ~300 searches, so most of a claim's terms are in the
process's postings cache by then; ``--novel`` searches each of the 1,109 train and test
claims once (``queries_seen_before`` counts the repeats once they run out): the first search
of a question nobody asked this process before, which reads its terms' postings and its
candidates' meta from the database.

**Cold CLI** (``--cli-runs``): ``python -m memo search Q --mode keyword --json`` as a fresh
process against ``python -c "import sqlite3"``, interleaved; medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_build import DEFAULT_SEED, ensure_built, load_sentences, parse_size, scifact_queries  # noqa: E402

TOP = 100


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


# --- the writer process -------------------------------------------------------------------

def writer(db: str, seconds: float, seed: int, out: str) -> None:
    """Add one record a second for ``seconds``; write {walls_ms, hook_ms} to ``out``."""
    import random

    from memo.store import kw_postings
    from memo.store.connect import write_tx
    from memo.store.db import open_db
    from memo.store.records import insert_record
    from memo.stored import PassageDraft, RecordDraft

    titles, sentences = load_sentences()
    rng = random.Random(seed)
    conn = open_db(db)
    hook: list[float] = []
    real = kw_postings.note_added

    def timed(c, rows):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        real(c, rows)
        hook.append((time.perf_counter() - t) * 1000.0)

    kw_postings.note_added = timed      # memo.store.derived calls it through the module
    walls: list[float] = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        tick = time.monotonic()
        text = " ".join(rng.choice(sentences) for _ in range(rng.randint(2, 8)))
        title = rng.choice(titles)
        t = time.perf_counter()
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=text, kind="note", namespace="live", title=title,
                                            id=f"live-{seed}-{i}"),
                          (PassageDraft(text=text, section=title),))
        walls.append((time.perf_counter() - t) * 1000.0)
        i += 1
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    conn.close()
    Path(out).write_text(json.dumps({"walls_ms": walls, "hook_ms": hook}))


# --- the searching process ------------------------------------------------------------------

def phase(db: str, queries: list[str], seconds: float, seed: int, *, postings: bool) -> dict[str, object]:
    from memo.profile import load_profile
    from memo.retrieve import SearchRequest, impact, kw_search, search
    from memo.retrieve import scope as scope_module
    from memo.retrieve.services import ArmServices
    from memo.store.db import open_db
    from memo.text.fts_query import keyword_match

    real_topk, real_live = kw_search.topk, scope_module._live_scope_stats
    if not postings:        # the code before 31.1: no postings, scope counts by scanning
        kw_search.topk = lambda *a, **k: None
        scope_module._live_scope_stats = lambda *a, **k: None
    conn = open_db(db, write=False)
    prof = load_profile("rrf").with_overrides({"index.keyword": "impact", "index.impact_min_passages": 0})

    def kw(q: str) -> None:
        search(conn, SearchRequest(query=q, mode="keyword"), prof, ArmServices())

    def floor(q: str) -> None:
        conn.execute("SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ?"
                     " ORDER BY s LIMIT ?", (keyword_match(q), TOP)).fetchall()

    for q in queries[-5:]:       # warm-up: page cache, the stemmer, an in-memory index for the old path
        kw(q)
        floor(q)
    if not postings:
        impact.ensure_index(conn)
    before = dict(impact.STATS)
    out_file = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    proc = subprocess.Popen([sys.executable, __file__, "--writer", db, "--seconds", str(seconds),
                             "--seed", str(seed), "--out", out_file], cwd=ROOT)
    times: dict[str, list[float]] = {"keyword": [], "floor": []}
    variants = {"keyword": kw, "floor": floor}
    i = 0
    while proc.poll() is None:
        q = queries[i % len(queries)]
        for name in (("keyword", "floor") if i % 2 == 0 else ("floor", "keyword")):
            t = time.perf_counter()
            variants[name](q)
            times[name].append((time.perf_counter() - t) * 1000.0)
        i += 1
    if proc.returncode != 0:
        raise SystemExit(f"writer failed ({proc.returncode})")
    served = {k: impact.STATS[k] - before[k] for k in ("impact", "postings", "fts5")}
    from memo.store import kw_postings
    meta = kw_postings.read_meta(conn)
    conn.close()
    kw_search.topk, scope_module._live_scope_stats = real_topk, real_live
    wrote = json.loads(Path(out_file).read_text())
    os.unlink(out_file)
    f50 = statistics.median(times["floor"])
    k50, k99 = statistics.median(times["keyword"]), pct(times["keyword"], 0.99)
    return {"phase": "postings" if postings else "inmemory", "searches": len(times["keyword"]),
            "keyword_p50_ms": round(k50, 3), "keyword_p99_ms": round(k99, 3),
            "floor_p50_ms": round(f50, 3), "floor_p99_ms": round(pct(times["floor"], 0.99), 3),
            "p50_ratio": round(k50 / f50, 3), "p99_ratio": round(k99 / f50, 3),
            "served": served, "writes": len(wrote["walls_ms"]),
            "queries_seen_before": max(0, len(times["keyword"]) - (len(queries) - 5)),
            "write_p50_ms": round(statistics.median(wrote["walls_ms"]), 2) if wrote["walls_ms"] else None,
            "delta_append_p50_ms": round(statistics.median(wrote["hook_ms"]), 2) if wrote["hook_ms"] else None,
            "delta_rows_at_end": meta.delta if meta else None}


def cold_cli(db: str, queries: list[str], runs: int) -> dict[str, object]:
    env = dict(os.environ, MEMO_DB=db)
    py = sys.executable
    times: dict[str, list[float]] = {"sqlite": [], "cli_keyword": []}
    subprocess.run([py, "-m", "memo", "search", queries[0], "--mode", "keyword", "--json"], env=env, cwd=ROOT,
                   capture_output=True, check=True)          # page cache, bytecode (not counted)
    traces = []
    for r in range(runs):
        q = queries[r % len(queries)]
        for name, cmd in (("sqlite", [py, "-c", "import sqlite3"]),
                          ("cli_keyword", [py, "-m", "memo", "search", q, "--mode", "keyword", "--json"])):
            t = time.perf_counter()
            res = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
            times[name].append((time.perf_counter() - t) * 1000.0)
            if res.returncode != 0:
                raise SystemExit(f"{name} failed: {res.stderr[-1500:]}")
            if name == "cli_keyword":
                traces.append(json.loads(res.stdout)["trace"])
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"runs": runs, "sqlite_ms": round(med["sqlite"], 1), "cli_keyword_ms": round(med["cli_keyword"], 1),
            "ratio": round(med["cli_keyword"] / med["sqlite"], 2),
            "search_latency_ms": round(statistics.median(t["latency_ms"] for t in traces), 2),
            "scope_ms": round(statistics.median(t["stage_ms"].get("scope", 0.0) for t in traces), 2),
            "arms_ms": round(statistics.median(t["stage_ms"].get("arms", 0.0) for t in traces), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="100k")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--phases", default="postings,inmemory")
    ap.add_argument("--cli-runs", type=int, default=7)
    ap.add_argument("--novel", action="store_true",
                    help="search the 1,109 SciFact train and test claims in turn instead of rotating over "
                         "the 300 test claims: no search repeats one of this process's (until they run out), "
                         "so no term's postings and no candidate's meta were read before")
    ap.add_argument("--db", help="copy this database instead of the cached build")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--writer", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.writer:
        writer(args.writer, args.seconds, args.seed, args.out)
        return
    source = Path(args.db) if args.db else ensure_built(parse_size(args.n), args.seed, "none")
    queries = [q for _, q in scifact_queries()]
    if args.novel:
        queries = list(dict.fromkeys(queries + [q for _, q in scifact_queries("train")]))
    out: dict[str, object] = {"source": str(source), "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="memo-kwlive-") as tmp:
        for name in args.phases.split(","):
            db = str(Path(tmp) / f"{name}.db")
            shutil.copyfile(source, db)
            from memo.store.db import open_db
            open_db(db).close()          # migrate a copy of an older build (builds the postings), not timed
            out[name] = phase(db, queries, args.seconds, args.seed, postings=name == "postings")
            if not args.json:
                print(json.dumps(out[name]), flush=True)
        if args.cli_runs:
            db = str(Path(tmp) / "cli.db")
            shutil.copyfile(source, db)
            from memo.store.db import open_db
            open_db(db).close()
            out["cold_cli"] = cold_cli(db, queries, args.cli_runs)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
