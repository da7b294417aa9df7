"""memo-mcp answers ``initialize`` before the SDK is imported (memo/serve/mcp.py,
memo/serve/mcp_early.py; issue 31.2): with the answer the SDK gave at an earlier start,
recorded per protocol version; the SDK still sees the handshake and the session goes on as
usual.  ``MEMO_MCP_IMPORT_GATE`` holds the server module's import until a file exists, so
an answer that arrives while it is held was written without the SDK."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memo.serve import mcp_early

REPO = Path(__file__).resolve().parents[2]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


class Raw:
    """One memo-mcp child and its stdout lines."""

    def __init__(self, db: Path, err: Path, **env: str) -> None:
        self.err = err
        self.proc = subprocess.Popen([sys.executable, "-m", "memo.serve.mcp", "--db", str(db), "--no-backfill"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err.open("wb"),
                                     cwd=REPO, env={**os.environ, **env})
        self.buf = b""

    def send(self, msg: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(msg if isinstance(msg, bytes) else json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def line(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise TimeoutError("no line from memo-mcp")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError(self.err.read_text(errors="replace")[-2000:])
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def close(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        return self.err.read_text(errors="replace")


def _session(srv: Raw) -> dict[str, Any]:
    """initialize, initialized, tools/list: the initialize reply."""
    srv.send(INIT)
    reply = srv.line()
    srv.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    srv.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = srv.line()
    assert tools["id"] == 2 and any(t["name"] == "memory_search" for t in tools["result"]["tools"]), tools
    return reply


def _recorded() -> dict[str, Any]:
    return json.loads(mcp_early.cache_path().read_text(encoding="utf-8"))


def test_a_second_start_answers_with_the_sdks_answer_before_importing_it(tmp_path):
    first = Raw(tmp_path / "m.db", tmp_path / "1.err")
    sdk = _session(first)
    first.close()
    assert _recorded()["results"]["2025-06-18"] == sdk["result"]       # recorded for the next start
    gate = tmp_path / "open"
    second = Raw(tmp_path / "m.db", tmp_path / "2.err", MEMO_MCP_IMPORT_GATE=str(gate))
    second.send(INIT)
    early = second.line(timeout=30)               # the SDK's import is held: no SDK wrote this
    assert early == sdk
    gate.write_text("go")
    second.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    second.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert second.line()["id"] == 2                # the SDK's own reply to initialize was not written again
    second.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "memory_stats", "arguments": {}}})
    stats = second.line()
    assert stats["id"] == 3 and not stats["result"].get("isError"), stats
    err = second.close()
    assert "differs" not in err


def test_another_protocol_version_is_answered_by_the_sdk(tmp_path):
    Raw(tmp_path / "m.db", tmp_path / "1.err").close()          # nothing recorded by a start without initialize
    first = Raw(tmp_path / "m.db", tmp_path / "2.err")
    _session(first)
    first.close()
    gate = tmp_path / "open"
    other = Raw(tmp_path / "m.db", tmp_path / "3.err", MEMO_MCP_IMPORT_GATE=str(gate))
    newer = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-11-25"}}
    other.send(newer)
    with pytest.raises(TimeoutError):
        other.line(timeout=1.5)                   # not recorded for this version: the SDK answers
    gate.write_text("go")
    reply = other.line()
    assert reply["id"] == 1 and "result" in reply
    other.close()
    assert set(_recorded()["results"]) == {"2025-06-18", "2025-11-25"}     # kept per version asked


def test_a_recorded_answer_the_sdk_disagrees_with_is_replaced(tmp_path):
    first = Raw(tmp_path / "m.db", tmp_path / "1.err")
    sdk = _session(first)
    first.close()
    doc = _recorded()
    doc["results"]["2025-06-18"] = {**doc["results"]["2025-06-18"], "instructions": "stale"}
    mcp_early.cache_path().write_text(json.dumps(doc), encoding="utf-8")
    second = Raw(tmp_path / "m.db", tmp_path / "2.err")
    assert _session(second)["result"]["instructions"] == "stale"     # what the cache said went out
    assert "differs from the SDK's" in second.close()
    assert _recorded()["results"]["2025-06-18"] == sdk["result"]       # the SDK's, for the next start
    third = Raw(tmp_path / "m.db", tmp_path / "3.err")
    assert _session(third) == sdk
    third.close()


def test_another_code_key_is_not_trusted(tmp_path):
    first = Raw(tmp_path / "m.db", tmp_path / "1.err")
    sdk = _session(first)
    first.close()
    doc = _recorded()
    doc["key"] = "an older memo"
    doc["results"]["2025-06-18"] = {**doc["results"]["2025-06-18"], "instructions": "old"}
    mcp_early.cache_path().write_text(json.dumps(doc), encoding="utf-8")
    second = Raw(tmp_path / "m.db", tmp_path / "2.err")
    assert _session(second) == sdk                 # answered by the SDK, then recorded under the key
    second.close()
    assert _recorded()["key"] == mcp_early.code_key()


def test_a_first_line_that_is_not_initialize_goes_the_ordinary_way(tmp_path):
    first = Raw(tmp_path / "m.db", tmp_path / "1.err")
    _session(first)
    first.close()
    srv = Raw(tmp_path / "m.db", tmp_path / "2.err")
    srv.send(b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": \n')
    bad = srv.line()
    assert bad["id"] in (7, None) and bad["error"]["code"] == -32700, bad       # the SDK's transport's answer
    srv.send(INIT)
    assert srv.line()["id"] == 1
    srv.close()
