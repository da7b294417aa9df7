"""Eval replay speed: SciFact test, 2 profiles x a 9-point grid (18 runs x 300 queries),
cached index and vectors, run 3 times; prints the median queries/s and the per-stage
median milliseconds (``trace.stage_ms``, one value per search, from the runs' traces).

    .venv/bin/python bench/replay_speed.py [--runs 3] [--no-arm-cache] [--json]

Each run is the exact command below, in a fresh process (as a user runs it), writing its
traces to a temporary folder (from the repository root: the cached index is there):

    memo eval run --dataset scifact --split test --profile rrf --profile minmax \
        --set fusion.k=20,60,100 --set weights.semantic=0.3,0.5,0.7 -q --json

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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]   # the eval cache is <checkout>/.cache/memo-eval
GRID = ["eval", "run", "--dataset", "scifact", "--split", "test", "--profile", "rrf", "--profile", "minmax",
        "--set", "fusion.k=20,60,100", "--set", "weights.semantic=0.3,0.5,0.7", "-q", "--json"]
# The `memo` console script, run by this interpreter (so PYTHONPATH picks the code; -P:
# the working directory, the repository root, must not shadow it).
_MEMO = "import sys; from memo.cli import main; sys.argv[0] = 'memo'; sys.exit(main())"


def one_run(out_dir: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-P", "-c", _MEMO, *GRID, "--runs-dir", str(out_dir)],
                          capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"memo eval run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def stage_ms(res: dict) -> dict[str, list[float]]:
    """Every search's stage_ms of one batch, per stage (plus wall_ms around search())."""
    import pyarrow.parquet as pq

    per: dict[str, list[float]] = {}
    for run in res["runs"]:
        table = pq.read_table(Path(run["path"]) / "queries.parquet", columns=["stage_ms", "wall_ms"])
        for text, wall in zip(table.column("stage_ms").to_pylist(), table.column("wall_ms").to_pylist(),
                              strict=True):
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
    qps, stages = [], {}
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="memo-replay-speed-") as tmp:
            res = one_run(Path(tmp), env)
            qps.append(res["replay"]["qps"])
            for stage, values in stage_ms(res).items():
                stages.setdefault(stage, []).extend(values)
        print(f"run {i + 1}: {res['replay']['qps']} q/s ({res['replay']['searches']} searches, "
              f"{res['replay']['workers']} workers)", file=sys.stderr)
    report = {"command": "memo " + " ".join(GRID), "arm_cache": not args.no_arm_cache, "qps_runs": qps,
              "qps_median": statistics.median(qps),
              "stage_ms_median": {s: round(statistics.median(v), 3) for s, v in stages.items()}}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"median {report['qps_median']} q/s over {len(qps)} runs: {qps}"
          f"{'' if report['arm_cache'] else ' (arm cache off)'}")
    for stage, ms in report["stage_ms_median"].items():
        print(f"  {stage:<22} {ms:8.3f} ms")


if __name__ == "__main__":
    main()
