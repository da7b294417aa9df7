"""Cold CLI wall time: a fresh `memo search` process, keyword and hybrid (issues 12.8, 31.2).

Without ``--db``, imports the bundled sample (datasets/sample/scifact, 300 abstracts,
embedded) into a temporary database; with ``--db PATH`` searches that database (read as it
is: e.g. the 100k file of ``bench/scale_build.py --n 100k --vectors none``).  Then times
whole processes, interleaved (one run of each command per round), several rounds:

    floor     python -c pass                         (interpreter start-up)
    sqlite    python -c "import sqlite3"             (issue 31.2's floor)
    keyword   python -m memo search Q --mode keyword --json
    hybrid    python -m memo search Q --json         (loads the model and the vector matrix;
                                                      --no-hybrid leaves it out)
    keyword_before / hybrid_before                   (with --memo-path DIR: the same commands
                                                      with another checkout's memo first on
                                                      PYTHONPATH, e.g. an older commit)
    keyword_claims                                   (with --claims N: keyword mode, run i asks
                                                      the bundled sample's claim i mod N, as
                                                      users write them: one query can be lucky)

and prints medians, ratios to the floors, the keyword trace's latency_ms and arms stage
(the search alone), and for hybrid its stage_ms model_load / matrix_load (start-up,
reported apart); ``--json`` prints the same figures as one JSON document instead (progress
on stderr).

    .venv/bin/python bench/cold_cli.py [--runs 7] [--json]
    .venv/bin/python bench/cold_cli.py --db /tmp/100k.db --no-hybrid --memo-path /tmp/old --runs 9
    .venv/bin/python bench/cold_cli.py --db /tmp/1m.db --memo-path /tmp/old --before-env MEMO_ONNX_CACHE=/tmp/old-onnx
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "scifact" / "corpus.jsonl"
QUERY = "ADAR1 binds to Dicer to cleave pre-miRNA"   # SciFact test claim 49
CLAIMS = ROOT / "datasets" / "sample" / "scifact" / "queries.jsonl"


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    ms = (time.perf_counter() - t0) * 1000.0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr[-2000:]}{res.stdout[-2000:]}")
    return ms, res.stdout


def _doc(args: argparse.Namespace, times: dict[str, list[float]], traces: dict[str, list[dict]],
         load: list[float]) -> dict[str, object]:
    """``--json``: the printed table's figures (ms; ratios of medians)."""
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict[str, object] = {}
    for name, v in times.items():
        row: dict[str, object] = {"median_ms": round(med[name], 1), "min_ms": round(min(v), 1),
                                  "max_ms": round(max(v), 1), "x_sqlite": round(med[name] / med["sqlite"], 2),
                                  "x_floor": round(med[name] / med["floor"], 2)}
        tr = traces.get(name)
        if tr:
            row["latency_ms"] = round(statistics.median(t["latency_ms"] for t in tr), 1)
            row["arms_ms"] = round(statistics.median(t["stage_ms"].get("arms", 0.0) for t in tr), 1)
            if name.startswith("hybrid"):
                row["model_ms"] = round(statistics.median(t["stage_ms"].get("model_load", 0.0) for t in tr), 1)
        out[name] = row
    doc: dict[str, object] = {"runs": args.runs, "cores": os.cpu_count(), "db": args.db or "the sample",
                              "load_avg": [round(min(load), 2), round(max(load), 2)], "commands": out}
    for name in ("keyword", "keyword_claims"):
        if name + "_before" in med:
            doc[name + "_after_over_before"] = round(med[name] / med[name + "_before"], 3)
    return doc


CLAIM = "<claim>"     # keyword_claims' query: the run's claim


def _ask(cmd: list[str], claim: str) -> list[str]:
    return [claim if a == CLAIM else a for a in cmd]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--db", help="search this database instead of importing the sample into a temporary one")
    ap.add_argument("--query", default=QUERY)
    ap.add_argument("--claims", type=int, default=0, metavar="N",
                    help="also time keyword searches of the sample's first N claims, one per run in turn")
    ap.add_argument("--no-hybrid", action="store_true", help="time keyword mode only (a database without vectors)")
    ap.add_argument("--memo-path", help="also time the searches with this checkout's memo first on PYTHONPATH")
    ap.add_argument("--before-env", action="append", default=[], metavar="KEY=VALUE",
                    help="with --memo-path: set this in the older checkout's environment only, e.g. "
                         "MEMO_ONNX_CACHE=/tmp/old-cache when the two write the model's cache differently")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="memo-cold-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, MEMO_DB=str(Path(args.db).resolve()) if args.db else str(work / "memo.db"))
        if not args.db:
            t0 = time.perf_counter()
            wall([py, "-m", "memo", "import", str(SAMPLE), "--format", "beir", "--namespace", "scifact", "--json"],
                 env, work)
            say(f"sample imported and embedded in {time.perf_counter() - t0:.1f} s ({SAMPLE.relative_to(ROOT)})")
        here = str(ROOT)
        envs = {"": dict(env, PYTHONPATH=os.pathsep.join([here, env.get("PYTHONPATH", "")]).rstrip(os.pathsep))}
        if args.memo_path:
            envs["_before"] = dict(env, PYTHONPATH=os.pathsep.join(
                [str(Path(args.memo_path).resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
            for item in args.before_env:
                k, sep, v = item.partition("=")
                if not sep or not k:
                    raise SystemExit(f"--before-env wants KEY=VALUE, got {item!r}")
                envs["_before"][k] = v
        searches = {"keyword": [py, "-m", "memo", "search", args.query, "--mode", "keyword", "--json"]}
        if not args.no_hybrid:
            searches["hybrid"] = [py, "-m", "memo", "search", args.query, "--json"]
        claims = [json.loads(line)["text"] for line in CLAIMS.read_text().splitlines()[:args.claims]]
        if claims:
            searches["keyword_claims"] = [py, "-m", "memo", "search", CLAIM, "--mode", "keyword", "--json"]
        cmds: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": ([py, "-c", "pass"], env),
            "sqlite": ([py, "-c", "import sqlite3"], env),
            **{name + suffix: (cmd, e) for suffix, e in envs.items() for name, cmd in searches.items()},
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        traces: dict[str, list[dict]] = {k: [] for k in cmds if k not in ("floor", "sqlite")}
        for name in traces:                     # warm the OS page cache once (not counted)
            for claim in claims if "claims" in name else [""]:
                wall(_ask(cmds[name][0], claim), cmds[name][1], work)
        load = [os.getloadavg()[0]]
        for run in range(args.runs):
            for name, (cmd, e) in cmds.items():
                ms, out = wall(_ask(cmd, claims[run % len(claims)] if claims else ""), e, work)
                times[name].append(ms)
                if name in traces:
                    traces[name].append(json.loads(out)["trace"])
            load.append(os.getloadavg()[0])
    med = {k: statistics.median(v) for k, v in times.items()}
    if args.json:
        print(json.dumps(_doc(args, times, traces, load), indent=1))
        return
    print(f"\ncold process wall time, median of {args.runs} interleaved runs (ms), {os.cpu_count()} cores, "
          f"load average {min(load):.2f}-{max(load):.2f}; database {args.db or 'the sample'}")
    print(f"{'command':<16} {'median':>9} {'min':>9} {'max':>9} {'x sqlite':>9} {'x floor':>9} "
          f"{'latency_ms':>10} {'arms_ms':>8} {'model_ms':>8}")
    for name, v in times.items():
        tr = traces.get(name)
        lat = f"{statistics.median(t['latency_ms'] for t in tr):10.1f}" if tr else f"{'':>10}"
        arms = f"{statistics.median(t['stage_ms'].get('arms', 0.0) for t in tr):8.1f}" if tr else f"{'':>8}"
        model = (f"{statistics.median(t['stage_ms'].get('model_load', 0.0) for t in tr):8.1f}"
                 if tr and name.startswith("hybrid") else f"{'':>8}")
        print(f"{name:<16} {med[name]:9.1f} {min(v):9.1f} {max(v):9.1f} {med[name] / med['sqlite']:9.2f} "
              f"{med[name] / med['floor']:9.2f} {lat} {arms} {model}")
    for name in ("keyword", "keyword_claims"):
        if name + "_before" in med:
            print(f"{name} after / before: {med[name] / med[name + '_before']:.3f}")


if __name__ == "__main__":
    main()
