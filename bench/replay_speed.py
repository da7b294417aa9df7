"""Eval replay speed: what a grid costs next to one run (issue 34.1).

Each round times two commands in fresh processes (as a user runs them), in alternating
order, writing traces to a temporary folder (from the repository root: the cached index
and vectors are there):

    single:  memo eval run --dataset scifact --split test --profile rrf -q --json
    grid:    memo eval run --dataset scifact --split test --profile rrf --profile minmax \
                 --set fusion.k=20,60,100 --set weights.semantic=0.3,0.5,0.7 -q --json

and prints, as medians over the rounds: each command's wall time, the grid/single ratio
(paired per round; the goal is <= 1.5), the grid's replay queries/s (searches / seconds of
replay after the workers warmed up; goal >= 1,000) and the per-stage milliseconds of the
grid's searches whose arms came from the arm-hit cache (``trace.stage_ms``).

    .venv/bin/python bench/replay_speed.py [--runs 3] [--no-arm-cache] [--json]

``--no-arm-cache`` sets MEMO_EVAL_ARM_CACHE=0 (every run runs every arm again; see
eval/replay.py).  The code measured is whatever ``memo`` the running interpreter imports,
so PYTHONPATH=<a checkout> times another version of the code with the same script.
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

ROOT = Path(__file__).resolve().parents[1]   # the eval cache is <checkout>/.cache/memo-eval
SINGLE = ["eval", "run", "--dataset", "scifact", "--split", "test", "--profile", "rrf", "-q", "--json"]
GRID = ["eval", "run", "--dataset", "scifact", "--split", "test", "--profile", "rrf", "--profile", "minmax",
        "--set", "fusion.k=20,60,100", "--set", "weights.semantic=0.3,0.5,0.7", "-q", "--json"]
# The `memo` console script, run by this interpreter (so PYTHONPATH picks the code; -P:
# the working directory, the repository root, must not shadow it).
_MEMO = "import sys; from memo.cli import main; sys.argv[0] = 'memo'; sys.exit(main())"


def one_run(argv: list[str], out_dir: Path, env: dict[str, str]) -> tuple[dict, float]:
    """(the command's JSON, its wall seconds: process start to exit)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-P", "-c", _MEMO, *argv, "--runs-dir", str(out_dir)],
                          capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"memo eval run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout), wall


def stage_ms(res: dict) -> dict[str, list[float]]:
    """The stage_ms of every search of one batch whose arms came from the arm-hit cache,
    per stage (plus wall_ms around search())."""
    import pyarrow.parquet as pq

    per: dict[str, list[float]] = {}
    for run in res["runs"]:
        table = pq.read_table(Path(run["path"]) / "queries.parquet", columns=["stage_ms", "wall_ms", "arm_cached"])
        for text, wall, cached in zip(table.column("stage_ms").to_pylist(), table.column("wall_ms").to_pylist(),
                                      table.column("arm_cached").to_pylist(), strict=True):
            if not cached:            # the searches that ran their arms are the single run's cost
                continue
            # stage_ms: a struct since 2026-12-01 (JSON text before)
            stages = text if isinstance(text, dict) else json.loads(text or "{}")
            for stage, ms in stages.items():
                if ms is not None:
                    per.setdefault(stage, []).append(ms)
            per.setdefault("wall (search call)", []).append(wall)
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-arm-cache", action="store_true", help="MEMO_EVAL_ARM_CACHE=0")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.no_arm_cache:
        env["MEMO_EVAL_ARM_CACHE"] = "0"
    walls: dict[str, list[float]] = {"single": [], "grid": []}
    qps, ratios, stages, searches = [], [], {}, 0
    for i in range(args.runs):
        order = ("single", "grid") if i % 2 == 0 else ("grid", "single")   # paired, alternating
        got: dict[str, float] = {}
        with tempfile.TemporaryDirectory(prefix="memo-replay-speed-") as tmp:
            for name in order:
                res, wall = one_run(SINGLE if name == "single" else GRID, Path(tmp), env)
                got[name] = wall
                walls[name].append(wall)
                if name == "grid":
                    qps.append(res["replay"]["qps"])
                    searches = res["replay"]["searches"]
                    for stage, values in stage_ms(res).items():
                        stages.setdefault(stage, []).extend(values)
        ratios.append(got["grid"] / got["single"])
        print(f"round {i + 1}: single {got['single']:.2f} s, grid {got['grid']:.2f} s "
              f"(x{ratios[-1]:.2f}), grid replay {qps[-1]} q/s", file=sys.stderr)
    med = statistics.median
    report = {"single": "memo " + " ".join(SINGLE), "grid": "memo " + " ".join(GRID),
              "arm_cache": not args.no_arm_cache, "rounds": args.runs, "grid_searches": searches,
              "single_wall_s": round(med(walls["single"]), 2), "grid_wall_s": round(med(walls["grid"]), 2),
              "ratio_median": round(med(ratios), 3), "ratios": [round(r, 3) for r in ratios],
              "qps_runs": qps, "qps_median": med(qps),
              "cached_stage_ms_median": {s: round(med(v), 3) for s, v in stages.items()}}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"single run  {report['single_wall_s']:7.2f} s  (median of {args.runs})")
    print(f"grid        {report['grid_wall_s']:7.2f} s  ({searches} searches)")
    print(f"ratio       {report['ratio_median']:7.3f}  (paired per round: {report['ratios']}; goal <= 1.5)")
    print(f"grid replay {report['qps_median']:7.1f} queries/s (runs {qps}; goal >= 1000)"
          f"{'' if report['arm_cache'] else ' (arm cache off)'}")
    print("searches served from the arm-hit cache, median ms per stage:")
    for stage, ms in report["cached_stage_ms_median"].items():
        print(f"  {stage:<22} {ms:8.3f}")


if __name__ == "__main__":
    main()
