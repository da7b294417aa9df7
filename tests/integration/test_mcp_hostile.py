"""Hostile input for ``memo-mcp`` over real stdio (issue 9, points 4 and 8: the MCP skin).

Raw JSON-RPC lines go to a real server subprocess (``python -m memo.serve.mcp``) so the
replies to malformed messages can be seen:

* every malformed message that carries an id gets a JSON-RPC error with that id (-32700
  parse error, -32600 invalid request, -32602 invalid params); when the id cannot be
  read at all the error carries ``id: null`` (JSON-RPC 2.0 section 5);
* a message over ``MAX_MESSAGE_BYTES`` is refused at the transport without being held in
  memory, with its id when the id is at either end of the line;
* hypothesis drives every tool with arbitrary Unicode (lone surrogates included), dates,
  numbers and nested JSON: every request is answered, each tool error is a memo error;
* slow: 10,000 mixed valid / invalid / huge requests keep the server's RSS (VmRSS of the
  child, /proc/PID/status) under 400 MB;
* a 2 MB ``memory_add`` does not block searches: they answer while it runs;
* slow: after a large ``memory_add`` (embedded in the background; and a 4.5 MB one) the
  server's RSS comes back to within ``WARM_SLACK_MB`` of its warm RSS (issue 33.3).
"""

from __future__ import annotations

import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo import errors as memo_errors
from memo.embed.warmup import LOADING
from memo.serve.mcp_server import MAX_MESSAGE_BYTES

REPO = Path(__file__).resolve().parents[2]
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
ERROR_NAMES = {name for name, obj in vars(memo_errors).items()
               if isinstance(obj, type) and issubclass(obj, memo_errors.MemoError)}
TOOLS = ("memory_search", "memory_add", "memory_get", "memory_list", "memory_supersede", "memory_forget",
         "memory_stats", "memory_fact_supersede")
NOTE = "The staging deploy key rotates every 30 days; ask the platform team for a new one."


class Server:
    """A real ``memo-mcp`` child speaking raw JSON-RPC lines over its pipes."""

    def __init__(self, db: Path, stderr: Path, env: dict[str, str] | None = None) -> None:
        self.stderr_path = stderr
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "memo.serve.mcp", "--db", str(db), "--no-backfill"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, cwd=REPO,
                                     env=None if env is None else {**os.environ, **env})
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_errors: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next = 1000

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            msg = json.loads(line)          # every stdout line must be JSON (else the test thread sees it)
            with self._cond:
                if "id" in msg and msg["id"] is not None:
                    self.replies[msg["id"]] = msg
                elif "error" in msg:
                    self.null_errors.append(msg)
                self._cond.notify_all()

    def send(self, data: bytes | str | dict[str, Any]) -> None:
        if isinstance(data, dict):
            data = json.dumps(data, ensure_ascii=True)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        assert self.proc.stdin is not None
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def wait(self, rid: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no reply to id {rid!r} within {timeout}s (server rc {self.proc.poll()}); "
                                         f"stderr: {self.stderr_path.read_text(errors='replace')[-2000:]}")
                self._cond.wait(left)
            return self.replies.pop(rid)

    def wait_null_error(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.null_errors) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} id-null errors, got {self.null_errors}")
                self._cond.wait(left)
            got, self.null_errors = self.null_errors[:count], self.null_errors[count:]
            return got

    def next_id(self) -> int:
        self._next += 1
        return self._next

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        rid = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait(rid, timeout)

    def call(self, tool: str, args: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": args}, timeout)

    def initialize(self) -> None:
        reply = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "hostile-test", "version": "1"}})
        assert "result" in reply, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def close(self) -> str:
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)
        self._err.close()
        stderr = self.stderr_path.read_text(errors="replace")
        assert "Traceback" not in stderr, stderr[-3000:]
        return stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "memo.db", tmp_path / "stderr.log")
    try:
        srv.initialize()
        yield srv
    finally:
        srv.close()


def until_warm(server: Server, timeout: float = 120.0) -> None:
    """Searches until one is no longer degraded for the model loading in the background
    (the warm-up after initialize): a test that compares RSS samples starts after it."""
    deadline = time.monotonic() + timeout
    while True:
        result = server.call("memory_search", {"query": "warm-up"})["result"]
        reason = (result.get("structuredContent") or {}).get("trace", {}).get("degraded", {}).get("reason") or ""
        if LOADING not in reason:
            return
        assert time.monotonic() < deadline, f"the model did not load within {timeout} s: {reason}"
        time.sleep(0.05)


def assert_error(reply: dict[str, Any], code: int | tuple[int, ...]) -> dict[str, Any]:
    codes = code if isinstance(code, tuple) else (code,)
    assert "error" in reply and "result" not in reply, reply
    assert reply["error"]["code"] in codes, reply
    assert reply["error"]["message"], reply
    return reply["error"]


def tool_outcome(reply: dict[str, Any]) -> dict[str, Any]:
    """A tools/call reply: a JSON-RPC error for malformed params, else a result whose
    error (isError) is one of memo's error classes."""
    if "error" in reply:
        assert reply["error"]["code"] in (INVALID_REQUEST, INVALID_PARAMS, METHOD_NOT_FOUND), reply
        return reply
    result = reply["result"]
    if result.get("isError"):
        doc = result.get("structuredContent") or {}
        assert doc.get("error") in ERROR_NAMES, result
    return result


# --- malformed messages: each one answered ------------------------------------------------------
MALFORMED_WITH_ID = [
    ('{"id": 8, "method": "tools/list"}', 8, INVALID_REQUEST),                            # no jsonrpc
    ('{"jsonrpc": "1.0", "id": 9, "method": "ping"}', 9, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 10, "method": 5}', 10, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": [1, 2]}', 11, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": "s12", "method": "ping", "params": "x"}', "s12", INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 13, "method": "tools/list"', 13, PARSE_ERROR),             # cut short
    ('{"jsonrpc": "2.0", "id": 14, "method": "ping", "params": {"a": NaN}}', 14, PARSE_ERROR),
    ('{"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "memory_search", '
     '"arguments": {"query": "\\ud800"}}}', 15, INVALID_PARAMS),                          # lone surrogate
    ('{"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "memory_add", "arguments": '
     '{"text": "x", "meta": {"a": ' + "[" * 100_000 + "]" * 100_000 + '}}}}', 16, INVALID_REQUEST),  # deep
    ('{"jsonrpc": "2.0", "method": "ping", "id": 17, "params": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
     17, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 18, "method": "ping", "params": {"n": ' + "9" * 5000 + "}}", 18, PARSE_ERROR),
]


@pytest.mark.parametrize("line,rid,code", MALFORMED_WITH_ID, ids=[str(m[1]) for m in MALFORMED_WITH_ID])
def test_malformed_request_with_an_id_gets_an_error(server: Server, line: str, rid: Any, code: int) -> None:
    server.send(line)
    assert_error(server.wait(rid), code)
    assert "result" in server.request("ping")                 # still serving


def test_invalid_utf8_line_is_a_parse_error_with_its_id(server: Server) -> None:
    server.send(b'{"jsonrpc": "2.0", "id": 20, "method": "ping", "params": {"x": "\xff\xfe"}}')
    assert_error(server.wait(20), PARSE_ERROR)


@pytest.mark.parametrize("line", [
    "not json at all", "[]", "42", '"a string"', "null", '{"jsonrpc": "2.0", "id": [1], "method": "ping"}',
    '{"jsonrpc": "2.0", "id": true, "method": "ping"}', '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', '{"jsonrpc": "2.0", "method": 7}',
    "{" * 100_000,
])
def test_malformed_without_a_usable_id_gets_an_id_null_error(server: Server, line: str) -> None:
    server.send(line)
    (err,) = server.wait_null_error(1)
    assert err["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), err
    assert "result" in server.request("ping")


def test_batch_elements_each_get_an_error(server: Server) -> None:
    server.send(json.dumps([{"jsonrpc": "2.0", "id": 31, "method": "ping"},
                            {"jsonrpc": "2.0", "id": 32, "method": "tools/list"}]))
    assert_error(server.wait(31), INVALID_REQUEST)
    assert_error(server.wait(32), INVALID_REQUEST)


def test_sdk_level_errors_still_answer(server: Server) -> None:
    assert_error(server.request("no/such/method"), METHOD_NOT_FOUND)
    reply = server.request("tools/call", {"name": "memory_search", "arguments": "not an object"})
    assert_error(reply, (INVALID_PARAMS, INVALID_REQUEST))
    assert server.call("no_such_tool", {})["result"]["isError"]


@pytest.mark.parametrize("where", ["head", "tail", "none"])
def test_oversized_message_is_refused_at_the_transport(server: Server, where: str) -> None:
    filler = "a" * (MAX_MESSAGE_BYTES + 1000)
    args = json.dumps({"name": "memory_search", "arguments": {"query": filler}})
    if where == "head":
        line = f'{{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {args}}}'
    elif where == "tail":
        line = f'{{"jsonrpc": "2.0", "method": "tools/call", "params": {args}, "id": 41}}'
    else:
        line = f'{{"jsonrpc": "2.0", "method": "tools/call", "params": {args}}}'
    until_warm(server)          # the model's load (~100 MB) must not land between the samples
    before = server.rss_mb()
    server.send(line)
    if where == "none":
        (err,) = server.wait_null_error(1)
        err = err["error"]
    else:
        err = assert_error(server.wait(41), INVALID_REQUEST)
    assert str(MAX_MESSAGE_BYTES) in err["message"].replace(",", ""), err
    assert server.rss_mb() - before < 64, "an oversized line must not be held in memory"
    assert "result" in server.call("memory_stats", {})


def test_a_message_just_under_the_cap_is_served(server: Server) -> None:
    text = ("word " * (2 * 1024 * 1024 // 5))[: 2 * 1024 * 1024]
    reply = server.call("memory_search", {"query": text, "mode": "keyword"}, timeout=120)
    assert "result" in reply and not reply["result"].get("isError"), str(reply)[:500]


# --- hypothesis: every tool, hostile arguments ---------------------------------------------------
TEXT = st.text(max_size=30)          # any code point, lone surrogates included
DATES = st.sampled_from(["9999-12-31T23:59:59", "0001-01-01", "99999-01-01", "2024-13-01", "2024-01-01T25:00",
                         "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "", "now", "2024-01-01"])
NUMBERS = st.one_of(st.integers(min_value=-(10 ** 30), max_value=10 ** 30), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0, 1, 100, 101, 1000, 1001, -1, 0.5, 10 ** 300]))
JSONISH = st.recursive(st.none() | st.booleans() | NUMBERS | TEXT,
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3),
                       max_leaves=10)
VALUE = st.one_of(TEXT, DATES, NUMBERS, JSONISH, st.lists(TEXT, max_size=3))
ARGS = {
    "memory_search": ["query", "namespaces", "kinds", "sources", "library", "version", "tags", "date_from",
                      "date_to", "min_trust", "as_of", "mode", "profile", "limit", "max_tokens", "response_format"],
    "memory_add": ["text", "namespace", "kind", "title", "source", "library", "version", "tags", "event_at",
                   "trust", "author", "ext_id", "meta", "entities", "wait"],
    "memory_get": ["id"], "memory_list": ["namespaces", "kinds", "library", "tags", "limit", "offset",
                                          "include_forgotten"],
    "memory_supersede": ["id", "text", "title", "tags", "event_at", "trust", "wait"],
    "memory_forget": ["ids", "confirm"], "memory_stats": [], "memory_fact_supersede": ["id", "text", "evidence", "wait"],
}


@st.composite
def tool_call(draw: st.DrawFn) -> dict[str, Any]:
    tool = draw(st.sampled_from(TOOLS))
    names = draw(st.lists(st.sampled_from([*ARGS[tool], "bogus"]), unique=True, max_size=5)) if ARGS[tool] else []
    args = {n: draw(DATES if "date" in n or n in ("as_of", "event_at") else VALUE) for n in names}
    if tool in ("memory_search", "memory_add") and draw(st.booleans()):
        args.setdefault("query" if tool == "memory_search" else "text", draw(TEXT))
    return {"name": tool, "arguments": args}


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("mcphostile")
    srv = Server(base / "memo.db", base / "stderr.log")
    try:
        srv.initialize()
        assert not srv.call("memory_add", {"text": NOTE, "tags": ["keys"]})["result"].get("isError")
        yield srv
    finally:
        srv.close()


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(params=tool_call())
def test_every_tool_answers_hostile_arguments(shared_server: Server, params: dict[str, Any]) -> None:
    tool_outcome(shared_server.request("tools/call", params))


# --- a long add does not block searches -------------------------------------------------------
SEARCH_BOUND_S = 5.0   # measured p50 0.05 s / max 1.4 s on the 2-core VM under a 2 MB add (docs/mcp.md)


def test_a_long_add_never_blocks_searches(server: Server) -> None:
    """Searches run while a 2 MB add splits, inserts and then embeds its ~1,900 passages
    (minutes of ONNX on 2 cores); each answers within SEARCH_BOUND_S, also once the add
    has committed and is embedding.  wait=true keeps the embedding inside the call (the
    worst case; by default the add answers after its commit and the server's background
    embedder does the same work)."""
    server.call("memory_add", {"text": NOTE})
    words = [f"w{i % 5000}" for i in range(400_000)]
    text = " ".join(words)[: 2 * 1024 * 1024]
    add_id = server.next_id()
    server.send({"jsonrpc": "2.0", "id": add_id, "method": "tools/call",
                 "params": {"name": "memory_add", "arguments": {"text": text, "wait": True}}})
    before: list[float] = []       # while the add splits and inserts
    during: list[float] = []       # after its commit, while it embeds
    deadline = time.monotonic() + 120
    i = 0
    while len(during) < 15 and time.monotonic() < deadline and add_id not in server.replies:
        i += 1
        t0 = time.monotonic()
        reply = server.call("memory_search", {"query": random.choice(["deploy key", "platform team", "rotates"]),
                                              "mode": "auto" if i % 2 else "keyword"}, timeout=60)
        took = time.monotonic() - t0
        assert not reply["result"].get("isError"), reply
        stats = json.loads(server.call("memory_stats", {})["result"]["content"][0]["text"])
        (during if stats["passages"] > 2 else before).append(took)
        time.sleep(0.2)
    assert add_id not in server.replies, "the add finished before searches could run during its embedding"
    assert len(during) >= 15, (len(before), len(during))
    every = before + during
    print(f"search latency during a 2 MB add: {len(before)} searches before its commit "
          f"(max {max(before, default=0):.3f}s), {len(during)} while it embeds: p50 "
          f"{statistics.median(during):.3f}s, max {max(during):.3f}s")
    assert max(every) < SEARCH_BOUND_S, every


# --- slow: 10,000 requests, RSS bounded --------------------------------------------------------
@pytest.mark.slow
def test_rss_stays_bounded_through_a_10k_request_fuzz(tmp_path: Path) -> None:
    srv = Server(tmp_path / "memo.db", tmp_path / "stderr.log")
    rng = random.Random(9)
    peak = 0.0
    try:
        srv.initialize()
        for i in range(20):
            srv.call("memory_add", {"text": f"{NOTE} variant {i}", "tags": ["keys"]})
        huge_query = "deploy " * (MAX_MESSAGE_BYTES // 7 + 10)
        big_query = "deploy key rotation " * 50_000             # 1 MB: under the cap
        samples = []
        for i in range(10_000):
            kind = 0.9999 if i % 1000 == 999 else 0.9992 if i % 1000 == 499 else rng.random()
            rid = srv.next_id()
            if kind < 0.5:
                params = {"name": "memory_search", "arguments": {
                    "query": rng.choice(["deploy key", "platform", "\u00e9t\u00e9 caf\u00e9", "ERR_42", "x" * 3000]),
                    "mode": rng.choice(["auto", "keyword", "exact", "semantic"])}}
                srv.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
            elif kind < 0.6:
                srv.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": rng.choice(TOOLS), "arguments": {"limit": rng.choice([0, 10**9, "x"])}}})
            elif kind < 0.8:
                srv.send(rng.choice([
                    f'{{"id": {rid}, "method": "ping"}}', f'{{"jsonrpc": "2.0", "id": {rid}, "method": 1}}',
                    f'{{"jsonrpc": "2.0", "id": {rid}, "method": "ping", "params": [1]}}',
                    f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/list"',
                    f'{{"jsonrpc": "2.0", "id": {rid}, "method": "ping", "params": {{"a": ' + "[" * 300 + "]" * 300
                    + "}}",
                    f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/call", "params": {{"name": "memory_search", '
                    f'"arguments": {{"query": "\\udc00"}}}}}}']))
            elif kind < 0.999:
                srv.send({"jsonrpc": "2.0", "id": rid, "method": rng.choice(["ping", "tools/list", "nope"])})
            elif kind < 0.9995:          # every 1000th (and by chance): a 1 MB query, under the cap
                srv.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": "memory_search", "arguments": {"query": big_query}}})
            else:                        # every 1000th (and by chance): 8 MiB+, refused at the transport
                srv.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": "memory_search", "arguments": {"query": huge_query}}})
            srv.wait(rid, timeout=120)
            if i % 100 == 0:
                samples.append(srv.rss_mb())
                peak = max(peak, samples[-1])
        peak = max(peak, srv.rss_mb())
        print(f"memo-mcp RSS through 10,000 requests: start {samples[0]:.0f} MB, peak {peak:.0f} MB, "
              f"end {samples[-1]:.0f} MB")
        assert peak < 400, samples
    finally:
        srv.close()


# --- slow: a large add leaves the server near its warm size (issue 33.3) ------------------------
WARM_SLACK_MB = 100


def _pending(srv: Server) -> int:
    stats = json.loads(srv.call("memory_stats", {})["result"]["content"][0]["text"])
    return sum(stats["pending_vectors"].values())


def _long_words(chars: int, seed: int) -> str:
    """Text of distinct made-up words: each passage fills the model's 256-token window."""
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(50_000)}" for _ in range(chars // 6 + 10))[:chars]


def _warm(srv: Server) -> float:
    srv.initialize()
    for i in range(20):
        srv.call("memory_add", {"text": f"{NOTE} variant {i}"})
    for query in ("deploy key", "platform team", "rotates every") * 3:
        srv.call("memory_search", {"query": query})
    return srv.rss_mb()


@pytest.mark.slow
def test_rss_returns_to_warm_after_a_large_add_is_embedded(tmp_path: Path) -> None:
    """Embedding: onnxruntime's arena grew to the largest forward pass and kept it (16 rows
    x 256 tokens: memo-mcp stayed 300-800 MB larger after one 4.5 MB note).  Passes are now
    smaller and the arena is released after each large embedding call.  A 64 KB note (~160
    full-window passages) grows the arena as much as 4.5 MB would (it grows per pass, not
    per note) and embeds in seconds."""
    srv = Server(tmp_path / "memo.db", tmp_path / "stderr.log")
    try:
        _warm(srv)
        deadline = time.monotonic() + 60
        while _pending(srv) and time.monotonic() < deadline:
            time.sleep(0.5)
        warm = srv.rss_mb()
        reply = srv.call("memory_add", {"text": _long_words(64 * 1024, 1)}, timeout=120)
        assert not reply["result"].get("isError"), reply
        deadline = time.monotonic() + 600
        while _pending(srv):
            assert time.monotonic() < deadline, "the background embedder did not finish"
            time.sleep(1)
        for i in range(50):                                   # the server goes on serving
            srv.call("memory_search", {"query": f"deploy key {i}"})
        after = srv.rss_mb()
        print(f"memo-mcp RSS: warm {warm:.0f} MB, after a 64 KB add was embedded {after:.0f} MB")
        assert after - warm < WARM_SLACK_MB, (warm, after)
    finally:
        srv.close()


@pytest.mark.slow
def test_rss_returns_to_warm_after_a_4_5_mb_add(tmp_path: Path) -> None:
    """Storing: parsing, splitting (~11,000 passages) and indexing a 4.5 MB note left the
    server ~160 MB larger (glibc kept the freed heap, the write connection its page cache).
    The model is made unavailable (MEMO_MODEL names no model) so the passages stay queued
    and only the add is measured: embedding them would take many minutes on 2 cores."""
    srv = Server(tmp_path / "memo.db", tmp_path / "stderr.log", env={"MEMO_MODEL": "no-such-model"})
    try:
        warm = _warm(srv)
        reply = srv.call("memory_add", {"text": _long_words(4_500_000, 2)}, timeout=300)
        doc = json.loads(reply["result"]["content"][0]["text"])
        assert doc["passages"] > 10_000, doc
        for i in range(50):
            srv.call("memory_search", {"query": f"deploy key {i}", "mode": "keyword"})
        after = srv.rss_mb()
        print(f"memo-mcp RSS: warm {warm:.0f} MB, after a 4.5 MB add {after:.0f} MB")
        assert after - warm < WARM_SLACK_MB, (warm, after)
    finally:
        srv.close()
