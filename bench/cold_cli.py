"""Cold CLI wall time: a fresh `memo search` process, keyword and hybrid, on the 300-abstract
sample (issue 12.8).

Imports the bundled sample (datasets/sample/scifact, embedded) into a temporary database,
then times whole processes, interleaved, several runs each:

    floor     python -c pass                         (interpreter start-up)
    sqlite    python -c "import sqlite3"
    keyword   python -m memo search Q --mode keyword --json
    hybrid    python -m memo search Q --json         (loads the model and the vector matrix)

and prints medians, ratios to the floor, and for hybrid the trace's own figures: latency_ms
(the search alone) and stage_ms model_load / matrix_load (start-up, reported apart).

    .venv/bin/python bench/cold_cli.py [--runs 7]
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


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    ms = (time.perf_counter() - t0) * 1000.0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr[-2000:]}")
    return ms, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="memo-cold-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, MEMO_DB=str(work / "memo.db"))
        t0 = time.perf_counter()
        wall([py, "-m", "memo", "import", str(SAMPLE), "--format", "beir", "--namespace", "scifact", "--json"],
             env, work)
        print(f"sample imported and embedded in {time.perf_counter() - t0:.1f} s ({SAMPLE.relative_to(ROOT)})")
        cmds = {
            "floor": [py, "-c", "pass"],
            "sqlite": [py, "-c", "import sqlite3"],
            "keyword": [py, "-m", "memo", "search", QUERY, "--mode", "keyword", "--json"],
            "hybrid": [py, "-m", "memo", "search", QUERY, "--json"],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        traces: list[dict] = []
        wall(cmds["hybrid"], env, work)          # warm the OS page cache once (not counted)
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                ms, out = wall(cmd, env, work)
                times[name].append(ms)
                if name == "hybrid":
                    traces.append(json.loads(out)["trace"])
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\ncold process wall time, median of {args.runs} runs (ms), {os.cpu_count()} cores")
    print(f"{'command':<10} {'median':>9} {'min':>9} {'max':>9} {'x floor':>9} {'- floor':>9}")
    for name, v in times.items():
        print(f"{name:<10} {med[name]:9.1f} {min(v):9.1f} {max(v):9.1f} {med[name] / med['floor']:9.2f} "
              f"{med[name] - med['floor']:9.1f}")
    print(f"\nratios: keyword/sqlite {med['keyword'] / med['sqlite']:.2f}, hybrid/keyword "
          f"{med['hybrid'] / med['keyword']:.2f}")
    lat = statistics.median(t["latency_ms"] for t in traces)
    model = statistics.median(t["stage_ms"].get("model_load", 0.0) for t in traces)
    matrix = statistics.median(t["stage_ms"].get("matrix_load", 0.0) for t in traces)
    print(f"hybrid trace (median): latency_ms {lat:.1f} (the search alone), model_load {model:.1f}, "
          f"matrix_load {matrix:.1f}; the rest of the wall time is interpreter + imports + CLI")


if __name__ == "__main__":
    main()
