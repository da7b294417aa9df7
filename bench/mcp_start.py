"""memo-mcp start-up over stdio (issue 31.2): a fresh server process on the 300-abstract
sample, timed from process start to its answers.

Imports the bundled sample (datasets/sample/scifact, embedded) into a temporary database
(or uses ``--db``), then, for each round, spawns ``python -m memo.serve.mcp --db DB`` and
speaks raw JSON-RPC over its pipes (no client library in the timed path: the requests are
written at once, so the times below are the server's):

    initialize     process start -> the initialize response
    tools/list     -> the tools/list response (sent right after notifications/initialized)
    first search   -> the first memory_search response (sent right after tools/list's answer)
    next search    -> the next one (the same query again)
    hybrid ready   -> the first search answered with the semantic arm (searches repeated
                      every 50 ms until one is not degraded; the model loads in the background)

and beside them, measured in the same rounds, the floors:

    sqlite         python -c "import sqlite3"           (interpreter start-up, the whole process)
    sdk            python -c "import mcp.server.lowlevel; print()" until the line arrives (the
                   official SDK's import: `import mcp` runs the package's __init__, which
                   imports the client, both servers and mcp_types' pydantic models, whichever
                   submodule is asked for).  Timed to its output, as the server is, not to
                   its exit: tearing down that many modules takes 0.2-0.5 s more.
    types          python -c "import mcp_types; print()" to its line: the protocol's pydantic
                   models alone, which any server built on the SDK must load to parse and
                   answer initialize (the least the SDK could cost, were its package lighter).

Prints medians, min/max, ratios to the sqlite floor, and how each first search was
answered (degraded or not, and why); ``--json`` prints one JSON document instead.

    .venv/bin/python bench/mcp_start.py [--rounds 5] [--db PATH] [--code LABEL=DIR ...] [--json]

``--code LABEL=DIR`` (repeatable) runs the server with DIR first on PYTHONPATH, each
variant in every round, interleaved (the fair before/after on a machine whose load
changes: --code before=/path/to/main --code after=.), each with a cache folder of its own
(XDG_CACHE_HOME: the recorded initialize answer is keyed by the code); without it the server
runs with the environment as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "scifact" / "corpus.jsonl"
QUERY = "ADAR1 binds to Dicer to cleave pre-miRNA"   # SciFact test claim 49
READY_TIMEOUT = 60.0


def _to_line(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """ms from the process start to its first line on stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    ms = (time.perf_counter() - t0) * 1000.0
    proc.stdout.close()
    if proc.wait(timeout=60) != 0 or not line:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return ms


def _wall(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    ms = (time.perf_counter() - t0) * 1000.0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr[-2000:]}")
    return ms


class Server:
    """One memo-mcp process and a line reader over its stdout."""

    def __init__(self, py: str, db: Path, env: dict[str, str], cwd: Path) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([py, "-m", "memo.serve.mcp", "--db", str(db)], env=env, cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._buf = b""
        self._next_id = 0

    def ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1000.0

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        rid = -1
        if not notify:
            self._next_id += 1
            rid = msg["id"] = self._next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def reply(self, rid: int, timeout: float = 120.0) -> dict[str, Any]:
        """The response to ``rid`` (notifications and other lines are skipped)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("id") == rid:
                    if "error" in msg:
                        raise SystemExit(f"request {rid} failed: {msg['error']}")
                    return msg["result"]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise SystemExit(f"no answer to request {rid} within {timeout} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise SystemExit(f"memo-mcp exited ({self.proc.wait()}): {err[-2000:]}")
            self._buf += chunk

    def search(self) -> dict[str, Any]:
        res = self.reply(self.send("tools/call", {"name": "memory_search", "arguments": {"query": QUERY}}))
        if res.get("isError"):
            raise SystemExit(f"memory_search failed: {res['content'][0]['text']}")
        return res["structuredContent"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def one_round(py: str, db: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    s = Server(py, db, env, cwd)
    try:
        init = s.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "0"}})
        s.reply(init)
        t_init = s.ms()
        s.send("notifications/initialized", notify=True)
        s.reply(s.send("tools/list"))
        t_list = s.ms()
        first = s.search()
        t_first = s.ms()
        nxt = s.search()
        t_next = s.ms()
        ready_doc, t_ready = (first, t_first) if not first["trace"]["degraded"]["flag"] else (nxt, t_next)
        deadline = time.monotonic() + READY_TIMEOUT
        while ready_doc["trace"]["degraded"]["flag"] and time.monotonic() < deadline:
            time.sleep(0.05)
            ready_doc = s.search()
            t_ready = s.ms()
        if ready_doc["trace"]["degraded"]["flag"]:
            raise SystemExit(f"searches still degraded after {READY_TIMEOUT} s: "
                             f"{ready_doc['trace']['degraded']['reason']}")
    finally:
        s.close()
    return {"initialize": t_init, "tools_list": t_list, "first_search": t_first, "next_search": t_next - t_first,
            "hybrid_ready": t_ready, "first_degraded": first["trace"]["degraded"],
            "first_results": len(first["results"])}


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--db", type=Path, default=None, help="an existing database (default: the sample, imported)")
    ap.add_argument("--code", action="append", default=[], metavar="LABEL=DIR",
                    help="run the server with DIR first on PYTHONPATH (repeatable; interleaved per round)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    py = sys.executable
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    variants: dict[str, dict[str, str]] = {}
    for spec in args.code or ["server="]:
        label, _, path = spec.partition("=")
        env = dict(os.environ)
        if path:
            env["PYTHONPATH"] = os.pathsep.join([str(Path(path).resolve()), *filter(None, [env.get("PYTHONPATH")])])
        variants[label] = env
    with tempfile.TemporaryDirectory(prefix="memo-mcp-start-") as tmp:
        work = Path(tmp)
        if len(variants) > 1:
            # Each variant its own cache folder: the recorded initialize answer is keyed by the
            # server's code, so variants sharing one file would overwrite each other's every
            # round and none would answer early.  (Its ONNX cache too: built in the warm-up.)
            for label, env in variants.items():
                env["XDG_CACHE_HOME"] = str(work / f"cache-{label}")
        db = args.db.resolve() if args.db else work / "memo.db"
        base = dict(next(iter(variants.values())), MEMO_DB=str(db))
        if args.db is None:
            t0 = time.perf_counter()
            _wall([py, "-m", "memo", "import", str(SAMPLE), "--format", "beir", "--namespace", "scifact", "--json"],
                  base, work)
            say(f"sample imported and embedded in {time.perf_counter() - t0:.1f} s ({SAMPLE.relative_to(ROOT)})")
        floors: dict[str, list[float]] = {"sqlite": [], "sdk": [], "types": []}
        stages = ("initialize", "tools_list", "first_search", "next_search", "hybrid_ready")
        times = {label: {k: [] for k in stages} for label in variants}
        firsts: dict[str, list[dict[str, Any]]] = {label: [] for label in variants}
        for env in variants.values():
            one_round(py, db, env, work)          # warm the OS page cache once (not counted)
        for _ in range(args.rounds):
            floors["sqlite"].append(_wall([py, "-c", "import sqlite3"], base, work))
            floors["sdk"].append(_to_line([py, "-c", "import mcp.server.lowlevel; print()"], base, work))
            floors["types"].append(_to_line([py, "-c", "import mcp_types; print()"], base, work))
            for label, env in variants.items():
                got = one_round(py, db, env, work)
                for k in stages:
                    times[label][k].append(got[k])
                firsts[label].append({"degraded": got["first_degraded"], "results": got["first_results"]})
    floor = {k: _summary(v) for k, v in floors.items()}
    sqlite = floor["sqlite"]["median"]
    out: dict[str, Any] = {}
    for label in variants:
        summary = {k: _summary(v) for k, v in times[label].items()}
        out[label] = {"ms": summary,
                      "x_sqlite_floor": {k: round(v["median"] / sqlite, 2) for k, v in summary.items()
                                         if k != "next_search"},
                      "initialize_minus_sdk_ms": round(summary["initialize"]["median"] - floor["sdk"]["median"], 1),
                      "first_searches": firsts[label]}
    doc = {"rounds": args.rounds, "cores": os.cpu_count(), "python": sys.version.split()[0],
           "floors_ms": floor, "sdk_x_sqlite": round(floor["sdk"]["median"] / sqlite, 2), "variants": out}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"\nmemo-mcp start-up, median of {args.rounds} rounds (ms from process start), {os.cpu_count()} cores")
    print(f"{'':<22} {'median':>9} {'min':>9} {'max':>9} {'x sqlite':>9}")
    for name, f in floor.items():
        print(f"{'floor ' + name:<22} {f['median']:9.1f} {f['min']:9.1f} {f['max']:9.1f} {f['median'] / sqlite:9.2f}")
    for label, v in out.items():
        for name, s in v["ms"].items():
            ratio = f"{v['x_sqlite_floor'][name]:9.2f}" if name in v["x_sqlite_floor"] else f"{'':>9}"
            print(f"{label + ' ' + name.replace('_', ' '):<22} {s['median']:9.1f} {s['min']:9.1f} {s['max']:9.1f} {ratio}")
    print("(next search: that search alone; floor sqlite: python -c 'import sqlite3', the whole process; floor sdk: "
          "python -c 'import mcp.server.lowlevel; print()' to its line; floor types: the same with mcp_types)")
    for label, v in out.items():
        print(f"{label}: initialize - sdk floor {v['initialize_minus_sdk_ms']:.1f} ms")
        for i, f in enumerate(v["first_searches"], 1):
            d = f["degraded"]
            print(f"  round {i}: first search {f['results']} results, "
                  + (f"degraded: {d['reason']}" if d["flag"] else "not degraded"))


if __name__ == "__main__":
    main()
