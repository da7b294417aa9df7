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

    sqlite         python -c "import sqlite3"           (interpreter start-up)
    sdk            python -c "import mcp.server.lowlevel"  (the official SDK's import: `import mcp`
                   runs the package's __init__, which imports the client, both servers and
                   mcp_types' pydantic models, whichever submodule is asked for)

Prints medians, min/max, ratios to the sqlite floor, and how each first search was
answered (degraded or not, and why); ``--json`` prints one JSON document instead.

    .venv/bin/python bench/mcp_start.py [--rounds 5] [--db PATH] [--json]

Run against another checkout's code by putting it first on PYTHONPATH (the server
subprocess inherits the environment), e.g. PYTHONPATH=/path/to/main for the before figures.
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
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    py = sys.executable
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    with tempfile.TemporaryDirectory(prefix="memo-mcp-start-") as tmp:
        work = Path(tmp)
        db = args.db.resolve() if args.db else work / "memo.db"
        env = dict(os.environ, MEMO_DB=str(db))
        if args.db is None:
            t0 = time.perf_counter()
            _wall([py, "-m", "memo", "import", str(SAMPLE), "--format", "beir", "--namespace", "scifact", "--json"],
                  env, work)
            say(f"sample imported and embedded in {time.perf_counter() - t0:.1f} s ({SAMPLE.relative_to(ROOT)})")
        floors = {"sqlite": [py, "-c", "import sqlite3"], "sdk": [py, "-c", "import mcp.server.lowlevel"]}
        times: dict[str, list[float]] = {k: [] for k in (*floors, "initialize", "tools_list", "first_search",
                                                          "next_search", "hybrid_ready")}
        firsts: list[dict[str, Any]] = []
        one_round(py, db, env, work)              # warm the OS page cache once (not counted)
        for _ in range(args.rounds):
            for name, cmd in floors.items():
                times[name].append(_wall(cmd, env, work))
            got = one_round(py, db, env, work)
            for k in times:
                if k in got:
                    times[k].append(got[k])
            firsts.append({"degraded": got["first_degraded"], "results": got["first_results"]})
    summary = {k: _summary(v) for k, v in times.items()}
    med = {k: v["median"] for k, v in summary.items()}
    ratios = {k: round(med[k] / med["sqlite"], 2) for k in med if k != "next_search"}
    doc = {"rounds": args.rounds, "cores": os.cpu_count(), "ms": summary, "x_sqlite_floor": ratios,
           "initialize_minus_sdk_ms": round(med["initialize"] - med["sdk"], 1), "first_searches": firsts,
           "python": sys.version.split()[0]}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"\nmemo-mcp start-up, median of {args.rounds} rounds (ms from process start), {os.cpu_count()} cores")
    print(f"{'':<14} {'median':>9} {'min':>9} {'max':>9} {'x sqlite':>9}")
    for name, s in summary.items():
        ratio = f"{ratios[name]:9.2f}" if name in ratios else f"{'':>9}"
        label = "next search" if name == "next_search" else name.replace("_", " ")
        print(f"{label:<14} {s['median']:9.1f} {s['min']:9.1f} {s['max']:9.1f} {ratio}")
    print("(next search: that search alone; the floors are whole processes: sqlite = python -c 'import sqlite3', "
          "sdk = python -c 'import mcp.server.lowlevel')")
    print(f"initialize - sdk import: {doc['initialize_minus_sdk_ms']:.1f} ms")
    for i, f in enumerate(firsts, 1):
        d = f["degraded"]
        print(f"round {i}: first search {f['results']} results, "
              + (f"degraded: {d['reason']}" if d["flag"] else "not degraded"))


if __name__ == "__main__":
    main()
