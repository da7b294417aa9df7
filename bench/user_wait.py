"""Every figure of issue 31 (what a user waits for) with one command (issue 31.6).

Runs the scripts that measure the figures, each as a subprocess of this interpreter with
``--json`` (so PYTHONPATH and the venv pick the code and the libraries; note that each script
also puts its own checkout first on sys.path: run the checkout you mean to measure), reads
their JSON, and prints ONE table: figure, measured value, floor (timed in the same run by
the same script), goal, met.  ``--json`` prints the same rows, each step's command, time and
parsed output as one JSON document instead.  Progress (the step running, elapsed time, the
step's last stderr line) goes to stderr.

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/user_wait.py [--passages 100000] [--only 31.1,31.3] [--json]
    PYTHONPATH=. nice -n 19 .venv/bin/python bench/user_wait.py --quick       # smoke run, 2,000 passages

Steps, in this order (``--only`` keeps the figures named and the steps they need; N is
``--passages``; the second size of each pair is ``--quick``'s):

  31.5 build  bench/scale_build.py --n N --vectors random --json: the cached N-passage
              database (built when missing: build time; ``--rebuild`` builds it again).
              Also run for 31.2, whose cold CLI searches that file.
  31.2        bench/cold_cli.py --db <that file> --runs 10|3 --claims 10|3 --json: a fresh
              `memo search --mode keyword` (the benchmark query, and the bundled sample's
              claims one per run) and `memo search` (hybrid) process against `python -c
              "import sqlite3"`;
              bench/mcp_start.py --rounds 5|1 --json: memo-mcp's `initialize`, on the script's
              own database (the 300-abstract sample, imported and embedded first).
  31.1        bench/keyword_live.py --n N --phases postings --cli-runs 0 --seconds 60|8
              --json: the mixed workload (a writer process adds one record a second, searches
              in between) on the script's own N-passage database without vectors.
  31.3        bench/ingest_scale.py --n N --rounds 2|1 --json: index-only import of N records
              (entity extraction on) against the bare SQLite floor;
              bench/ingest_throughput.py [--n 64 --rounds 1] --json: ingest with embedding
              against a bare onnxruntime loop (its own size: 1,000 SciFact abstracts).
  31.4        bench/embed_throughput.py [--n 64 --rounds 1] --json: memo's embedder against a
              bare onnxruntime loop on SciFact abstracts and standard-library code passages
              (its own size: 600 of each).
  31.5        bench/scale.py --sizes N --queries 200|20 --cli-runs 5|2 --json: warm keyword and
              hybrid p50 against their floors, cold CLI, database size, RSS.

Goals (issue 31), read from each script's output:

  31.1  keyword p50 <= 0.1x and p99 <= 0.5x the bare FTS5 OR query's p50, same run
  31.2  cold `memo search --mode keyword` <= 5x `python -c "import sqlite3"`, hybrid <= 15x;
        memo-mcp answers `initialize` within 300 ms of its start
  31.3  index-only import >= 0.7x the bare SQLite floor, CPU seconds (the wall ratio shown
        beside it); ingest with embedding >= 0.8x the bare loop (ingest_throughput.py's own
        target, wall)
  31.4  embedding >= 0.9x a bare onnxruntime loop, passages per CPU-second
  31.5  warm hybrid p50 <= 1.5x the sum of its floors (FTS5 OR + numpy matvec); cold CLI
        as 31.2; warm keyword p50, build time, database size and RSS reported, no goal

A step that fails (non-zero exit, no JSON, unreadable JSON) makes its row "failed: <one
line>" and the run goes on; the exit status is 1 when any step failed (a goal not met is
not a failure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
FIGURES = ("31.1", "31.2", "31.3", "31.4", "31.5")
QUICK_PASSAGES = 2000
HEARTBEAT_S = 30.0


# --- rows -----------------------------------------------------------------------------------

@dataclass
class Row:
    """One line of the table.  ``goal`` is (op, limit) with op "<=" or ">="; None: reported only."""

    figure: str
    measured: str
    value: float | None = None
    floor: str = ""
    goal: tuple[str, float] | None = None
    unit: str = ""
    met: bool | None = None
    failed: bool = False

    def __post_init__(self) -> None:
        if self.goal is not None and self.met is None and self.value is not None and not self.failed:
            self.met = judge(self.value, *self.goal)

    @property
    def fig(self) -> str:
        return self.figure.split()[0]

    def goal_text(self) -> str:
        if self.goal is None:
            return ""
        op, limit = self.goal
        return f"{op} {limit:g}{self.unit}"

    def met_text(self) -> str:
        if self.failed:
            return "no"
        return "" if self.met is None else ("yes" if self.met else "no")


def judge(value: float, op: str, limit: float) -> bool:
    if op == "<=":
        return value <= limit
    if op == ">=":
        return value >= limit
    raise ValueError(f"unknown goal operator {op!r}")


def failed_row(figure: str, message: str) -> Row:
    return Row(figure=figure, measured=f"failed: {one_line(message)}", failed=True)


def one_line(text: str, width: int = 160) -> str:
    """The last non-empty line of ``text`` (a traceback's exception, a SystemExit's message)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else "(no output)"
    return line if len(line) <= width else line[:width - 3] + "..."


def json_docs(text: str) -> list[dict[str, Any]]:
    """A script's stdout as a list of JSON objects: one document (an object, or a list of
    them as bench/scale.py prints), or JSON lines (one object per line)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        docs = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    else:
        docs = doc if isinstance(doc, list) else [doc]
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ValueError("no JSON object in the output")
    return docs


# --- one parser per script: its JSON -> rows --------------------------------------------------

def rows_keyword_live(docs: list[dict[str, Any]]) -> list[Row]:
    p = docs[0]["postings"]
    floor = f"FTS5 OR p50 {p['floor_p50_ms']:.2f} ms"
    note = f"{p['searches']} searches, {p['writes']} writes"
    return [Row("31.1 keyword p50 / FTS5 OR p50, mixed workload", f"{p['p50_ratio']:.3f} ({p['keyword_p50_ms']:.2f} ms; "
                f"{note})", p["p50_ratio"], floor, ("<=", 0.1)),
            Row("31.1 keyword p99 / FTS5 OR p50, mixed workload", f"{p['p99_ratio']:.3f} ({p['keyword_p99_ms']:.2f} ms)",
                p["p99_ratio"], floor, ("<=", 0.5))]


def rows_cold_cli(docs: list[dict[str, Any]]) -> list[Row]:
    c = docs[0]["commands"]
    floor = f"import sqlite3 {c['sqlite']['median_ms']:.1f} ms"
    out = []
    for name, what, limit in (("keyword", "keyword", 5.0), ("keyword_claims", "keyword, the sample's claims", 5.0),
                              ("hybrid", "hybrid", 15.0)):
        if name in c:
            x = c[name]["x_sqlite"]
            out.append(Row(f"31.2 cold `memo search` {what} / import sqlite3", f"{x:.2f}x ({c[name]['median_ms']:.0f} ms)",
                           x, floor, ("<=", limit), "x"))
    return out


def rows_mcp_start(docs: list[dict[str, Any]]) -> list[Row]:
    d = docs[0]
    server = next(iter(d["variants"].values()))
    init = server["ms"]["initialize"]["median"]
    f = d["floors_ms"]
    return [Row("31.2 memo-mcp initialize, from process start", f"{init:.0f} ms", init,
                f"SDK import {f['sdk']['median']:.0f} ms, import sqlite3 {f['sqlite']['median']:.0f} ms",
                ("<=", 300.0), " ms")]


def rows_ingest_scale(docs: list[dict[str, Any]]) -> list[Row]:
    out = []
    for d in docs:
        r = d["cpu_ratio_floor_over_memo"]
        out.append(Row(f"31.3 index-only import, {d['records']:,} records: memo / SQLite floor, CPU",
                       f"{r:.3f} (wall {d['ratio_floor_over_memo']:.3f}; {d['memo_cpu_per_s']:,} passages/CPU-s)",
                       r, f"{d['floor_cpu_per_s']:,} passages/CPU-s", (">=", 0.7)))
    return out


def rows_ingest_throughput(docs: list[dict[str, Any]]) -> list[Row]:
    d = docs[0]
    return [Row(f"31.3 ingest with embedding, {d['n']:,} abstracts: memo / bare loop, wall",
                f"{d['ratio']:.3f} ({d['memo_per_s']} passages/s)", d["ratio"],
                f"bare onnxruntime {d['bare_per_s']} passages/s", (">=", 0.8))]


def rows_embed_throughput(docs: list[dict[str, Any]]) -> list[Row]:
    out = []
    for d in docs:
        r = d["cpu_ratio"]
        out.append(Row(f"31.4 embedding, {d['corpus']} ({d['passages']:,}): memo / bare loop, CPU",
                       f"{r:.3f} (wall {d['ratio']:.3f}; {d['memo_per_cpu_s']} passages/CPU-s)", r,
                       f"bare onnxruntime {d['bare_per_cpu_s']} passages/CPU-s", (">=", 0.9)))
    return out


def rows_scale_build(docs: list[dict[str, Any]]) -> list[Row]:
    d = docs[0]
    if not d["built"]:
        return [Row(f"31.5 build, {d['passages']:,} passages", "cached, not built in this run (--rebuild times it)")]
    secs = d["build_s"]
    return [Row(f"31.5 build, {d['passages']:,} passages", f"{secs:.1f} s ({d['passages'] / max(secs, 1e-9):,.0f} passages/s)",
                secs, unit=" s")]


SCALE_FLOORS = {"floor_fts_or": "FTS5 OR", "floor_matvec": "numpy matvec", "cli_floor": "import sqlite3"}


def rows_scale(docs: list[dict[str, Any]]) -> list[Row]:
    wanted = (("keyword_impact", "31.5 warm keyword p50 / floor", None),
              ("hybrid_noembed", "31.5 warm hybrid p50 / sum of floors", ("<=", 1.5)),
              ("hybrid_embed", "31.5 warm hybrid p50, query embedded / floors", None),
              ("cli_keyword", "31.5 cold keyword p50 / import sqlite3", ("<=", 5.0)),
              ("cli_hybrid", "31.5 cold hybrid p50 / import sqlite3", ("<=", 15.0)))
    out = []
    for d in docs:
        by = {r["what"]: r for r in d["rows"]}
        for what, figure, goal in wanted:
            r = by.get(what)
            if r is None:           # no cold rows with --cli-runs 0
                continue
            floor = " + ".join(SCALE_FLOORS.get(f, f) for f in r["floor"].split("+"))
            out.append(Row(figure, f"{r['ratio']:.3f} ({r['p50_ms']:.2f} ms)", r["ratio"],
                           f"{floor} {r['floor_p50_ms']:.2f} ms", goal, "x" if goal else ""))
        n = d["passages"]
        out.append(Row("31.5 database size", f"{d['db_mb']:,} MB ({d['db_mb'] * 1e6 / n:,.0f} bytes/passage)",
                       d["db_mb"], unit=" MB"))
        out.append(Row("31.5 RSS, warm process", f"{d['rss_memo_mb']:,} MB (peak {d['max_rss_mb']:,} MB with "
                       "the floor's matrix)", d["rss_memo_mb"], unit=" MB"))
    return out


# --- steps ----------------------------------------------------------------------------------

@dataclass
class Config:
    passages: int
    quick: bool
    rebuild: bool = False
    timeout: float | None = None
    context: dict[str, Any] = field(default_factory=dict)   # what a step leaves for later ones

    def pick(self, full: list[str], quick: list[str]) -> list[str]:
        return quick if self.quick else full


class NotRun(Exception):
    """A step whose input is missing (the build it needs failed)."""


def _built_db(cfg: Config) -> str:
    if "db" not in cfg.context:
        raise NotRun(f"no database: the build failed ({cfg.context.get('build_error', 'not run')})")
    return cfg.context["db"]


@dataclass
class Step:
    fig: str                      # the figure --only selects
    script: str
    args: Callable[[Config], list[str]]
    parse: Callable[[list[dict[str, Any]]], list[Row]]
    needed_by: tuple[str, ...] = ()     # other figures that need this step to run

    @property
    def label(self) -> str:
        return f"{self.fig} {self.script}"


def _remember_build(cfg: Config, docs: list[dict[str, Any]]) -> list[Row]:
    cfg.context["db"] = docs[0]["path"]
    return rows_scale_build(docs)


def steps(cfg: Config) -> list[Step]:
    n = str(cfg.passages)
    return [
        Step("31.5", "scale_build.py",
             lambda c: ["--n", n, "--vectors", "random", "--json", *(["--force"] if c.rebuild else [])],
             lambda docs: _remember_build(cfg, docs), needed_by=("31.2",)),
        Step("31.2", "cold_cli.py", lambda c: ["--db", _built_db(c), "--runs", c.pick(["10"], ["3"])[0],
                                               "--claims", c.pick(["10"], ["3"])[0], "--json"],
             rows_cold_cli),
        Step("31.2", "mcp_start.py", lambda c: ["--rounds", c.pick(["5"], ["1"])[0], "--json"], rows_mcp_start),
        Step("31.1", "keyword_live.py",
             lambda c: ["--n", n, "--phases", "postings", "--cli-runs", "0", "--seconds", c.pick(["60"], ["8"])[0],
                        "--json"], rows_keyword_live),
        Step("31.3", "ingest_scale.py", lambda c: ["--n", n, "--rounds", c.pick(["2"], ["1"])[0], "--json"],
             rows_ingest_scale),
        Step("31.3", "ingest_throughput.py", lambda c: [*c.pick([], ["--n", "64", "--rounds", "1"]), "--json"],
             rows_ingest_throughput),
        Step("31.4", "embed_throughput.py", lambda c: [*c.pick([], ["--n", "64", "--rounds", "1"]), "--json"],
             rows_embed_throughput),
        Step("31.5", "scale.py",
             lambda c: ["--sizes", n, "--queries", c.pick(["200"], ["20"])[0],
                        "--cli-runs", c.pick(["5"], ["2"])[0], "--json"], rows_scale),
    ]


class Progress:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self, msg: str) -> None:
        print(f"[user_wait {time.monotonic() - self.t0:7.1f} s] {msg}", file=sys.stderr, flush=True)


@dataclass
class Outcome:
    label: str
    cmd: list[str]
    seconds: float = 0.0
    returncode: int | None = None
    error: str | None = None
    output: list[dict[str, Any]] | None = None


def run_script(cmd: list[str], timeout: float | None, say: Progress, label: str) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of ``cmd``; every HEARTBEAT_S the elapsed time and the
    script's last stderr line go to ``say``.  Past ``timeout`` the process is killed (-9)."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        while True:
            wait = HEARTBEAT_S if timeout is None else min(HEARTBEAT_S, max(0.1, timeout - (time.monotonic() - t0)))
            try:
                out, _ = proc.communicate(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                spent = time.monotonic() - t0
                err.seek(0)
                text = err.read()
                tail = one_line(text, 100) if text.strip() else "nothing on stderr yet"
                if timeout is not None and spent >= timeout:
                    proc.kill()
                    out, _ = proc.communicate()
                    err.seek(0)
                    return -9, out, err.read() + f"\ntimed out after {timeout:g} s"
                say(f"{label}: running, {spent:.0f} s ({tail})")
        err.seek(0)
        return proc.returncode, out, err.read()


def run_step(step: Step, cfg: Config, say: Progress) -> tuple[list[Row], Outcome]:
    try:
        args = step.args(cfg)
    except NotRun as e:
        say(f"{step.label}: not run: {e}")
        return [failed_row(step.label, str(e))], Outcome(step.label, [], error=str(e))
    cmd = [sys.executable, str(BENCH / step.script), *args]
    outcome = Outcome(step.label, cmd)
    say(f"{step.label}: started: {' '.join(cmd[1:])}")
    t0 = time.monotonic()
    code, out, err = run_script(cmd, cfg.timeout, say, step.label)
    outcome.seconds, outcome.returncode = round(time.monotonic() - t0, 1), code
    try:
        if code != 0:
            raise RuntimeError(f"exit {code}: {one_line(err)}")
        outcome.output = json_docs(out)
        rows = step.parse(outcome.output)
        if not rows:
            raise ValueError("no figure in its output")
    except Exception as e:  # noqa: BLE001 - any failure of the step becomes its row
        msg = str(e) if isinstance(e, RuntimeError) else f"cannot read its output: {type(e).__name__}: {e}"
        outcome.error = one_line(msg)
        if step.fig == "31.5" and step.script == "scale_build.py":
            cfg.context["build_error"] = outcome.error
        say(f"{step.label}: failed in {outcome.seconds:.1f} s: {outcome.error}")
        return [failed_row(step.label, msg)], outcome
    say(f"{step.label}: done in {outcome.seconds:.1f} s")
    return rows, outcome


def selected(step: Step, only: set[str]) -> bool:
    return step.fig in only or any(f in only for f in step.needed_by)


# --- output ---------------------------------------------------------------------------------

HEADER = ("figure", "measured", "floor (same run)", "goal", "met")


def table_lines(rows: list[Row]) -> list[str]:
    cells = [HEADER] + [(r.figure, r.measured, r.floor, r.goal_text(), r.met_text()) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(HEADER))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def row_dict(r: Row) -> dict[str, Any]:
    d = asdict(r)
    d["goal"] = r.goal_text() or None
    d["met"] = None if r.goal is None and not r.failed else (False if r.failed else r.met)
    return d


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def parse_only(text: str | None) -> set[str]:
    if not text:
        return set(FIGURES)
    only = {f.strip() for f in text.split(",") if f.strip()}
    bad = sorted(only - set(FIGURES))
    if bad:
        raise SystemExit(f"--only: unknown figure {', '.join(bad)} (known: {', '.join(FIGURES)})")
    return only


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, help="N: database and import size (default 100000; --quick: "
                                                  f"{QUICK_PASSAGES})")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK_PASSAGES:,} passages (unless --passages is given), fewer rounds, "
                         "8 s of mixed workload, 64 passages embedded")
    ap.add_argument("--only", help="comma-separated figures to run, e.g. 31.1,31.3 (default: all)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the 31.5 database even when cached (times it)")
    ap.add_argument("--timeout", type=float, help="kill a step after this many seconds (its row: failed)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = ap.parse_args(argv)
    only = parse_only(args.only)
    passages = args.passages or (QUICK_PASSAGES if args.quick else 100_000)
    cfg = Config(passages=passages, quick=args.quick, rebuild=args.rebuild, timeout=args.timeout)
    say = Progress()
    rows: list[Row] = []
    outcomes: list[Outcome] = []
    todo = [s for s in steps(cfg) if selected(s, only)]
    say(f"{len(todo)} steps at {passages:,} passages{' (quick)' if args.quick else ''}, figures {', '.join(sorted(only))}")
    for step in todo:
        got, outcome = run_step(step, cfg, say)
        rows.extend(r for r in got if r.fig in only)
        outcomes.append(outcome)
    failed = [o.label for o in outcomes if o.error]
    head = {"passages": passages, "quick": args.quick, "commit": commit(), "python": sys.version.split()[0],
            "cores": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
            "seconds": round(time.monotonic() - say.t0, 1)}
    if args.json:
        print(json.dumps({**head, "rows": [row_dict(r) for r in rows], "failed": failed,
                          "steps": [asdict(o) for o in outcomes]}, indent=1))
    else:
        print(f"issue 31 figures at {passages:,} passages{' (--quick)' if args.quick else ''}, code {head['commit']}, "
              f"{head['cores']} cores, load {head['load_avg']}, {head['seconds']:.0f} s")
        print("\n".join(table_lines(rows)))
        if failed:
            print(f"failed steps: {', '.join(failed)}")
    say(f"finished: {len(outcomes) - len(failed)} of {len(outcomes)} steps succeeded")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
