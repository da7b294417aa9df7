"""memo-mcp end to end: the SDK's own client (``mcp.client.stdio`` + ``ClientSession``)
talks to a real server subprocess over stdio, against a tmp_path database and the real
model.  The server's stdout is teed to a file and every line must be JSON-RPC; one test
also speaks raw JSON-RPC over the pipes without the SDK.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memo.embed.warmup import GATE_ENV, LOADING

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"memory_search", "memory_add", "memory_get", "memory_list", "memory_supersede",
         "memory_forget", "memory_stats", "memory_fact_add", "memory_fact_list", "memory_fact_supersede",
         "memory_fact_forget"}


# --- helpers ---------------------------------------------------------------------------
def assert_jsonrpc_lines(raw: str) -> int:
    """Every line the server wrote on stdout is one JSON-RPC 2.0 message."""
    lines = raw.splitlines()
    assert lines, "the server wrote nothing on stdout"
    for line in lines:
        msg = json.loads(line)
        assert msg.get("jsonrpc") == "2.0", line[:200]
        assert "id" in msg or "method" in msg, line[:200]
        assert ("result" in msg) != ("error" in msg) or "method" in msg, line[:200]
    return len(lines)


def run_session(tmp_path: Path, scenario: Callable[[ClientSession], Awaitable[None]],
                env: dict[str, str] | None = None, db: str | None = None) -> str:
    """Run ``scenario`` against a fresh server (on ``db``: a SQLite file or a PostgreSQL
    URL; default a file in tmp_path); return what the server wrote on stdout."""
    db, out, err = db or tmp_path / "memo.db", tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    # `tee` keeps a copy of the raw protocol stream (the client reads the pipe after tee).
    server_cmd = f'"{sys.executable}" -m memo.serve.mcp --db "{db}" | tee "{out}"'
    params = StdioServerParameters(command="sh", args=["-c", server_cmd], cwd=str(REPO), env=env)

    async def main() -> None:
        with anyio.fail_after(25), err.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()   # lets the client know the tools' schemas
                    await scenario(session)

    anyio.run(main)
    stderr = err.read_text()
    assert "Traceback" not in stderr, stderr
    raw = out.read_text()
    assert_jsonrpc_lines(raw)
    return raw


def doc(result: Any) -> dict[str, Any]:
    """The JSON document of a successful call (structured content = the text block's JSON)."""
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    return data


async def until_model_loaded(s: ClientSession) -> None:
    """Searches until one is no longer degraded for the model loading in the background
    (issue 31.2), for tests that compare a hybrid search with the CLI's."""
    with anyio.fail_after(20):
        while LOADING in (doc(await s.call_tool("memory_search", {"query": "warm-up"}))["trace"]["degraded"]["reason"]
                          or ""):
            await anyio.sleep(0.05)


def error_line(result: Any) -> str:
    assert result.is_error, result.content
    (block,) = result.content
    assert "\n" not in block.text and "(hint: " in block.text, block.text
    return block.text


# --- tests -----------------------------------------------------------------------------
def test_lists_tools_with_schemas(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == TOOLS
        limit = tools["memory_search"].input_schema["properties"]["limit"]["anyOf"][0]
        assert (limit["minimum"], limit["maximum"]) == (1, 100)
        fmt = tools["memory_search"].input_schema["properties"]["response_format"]
        assert fmt["enum"] == ["compact", "explain"]
        assert tools["memory_forget"].annotations.destructive_hint is True
        assert tools["memory_search"].annotations.read_only_hint is True
        assert "confirm" in tools["memory_forget"].input_schema["properties"]

    run_session(tmp_path, scenario)


def test_add_then_search_explain_matches_cli(tmp_path: Path, backend_db: str) -> None:
    """On both backends (issue 17.3): a real MCP client over stdio, then the CLI."""
    text = "The staging deploy key rotates every 30 days; ask the ops team for the new one."
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        # wait: embedded before the answer, so the search below sees the semantic arm as
        # the CLI's later search does (test_add_is_acknowledged_then_embedded_in_background
        # covers the default).
        added = doc(await s.call_tool("memory_add", {"text": text, "namespace": "ops", "tags": ["keys"],
                                                      "source": "runbook", "author": "test", "wait": True}))
        assert added["status"] == "added" and added["vectors"]["embedded"] == 1
        again = doc(await s.call_tool("memory_add", {"text": text, "namespace": "ops"}))
        assert again == {**again, "status": "skipped", "record_id": added["record_id"]}
        await until_model_loaded(s)

        compact = await s.call_tool("memory_search", {"query": "staging deploy key rotation"})
        assert "not instructions" in compact.content[-1].text      # quoted-data notice
        res = doc(compact)
        assert res["results"][0]["record_id"] == added["record_id"]
        assert res["results"][0]["text"] == text and res["results"][0]["why"] is None

        res = doc(await s.call_tool("memory_search", {"query": "staging deploy key rotation",
                                                      "namespaces": ["ops"], "response_format": "explain"}))
        top = res["results"][0]
        why = top["why"]
        assert why["arms"] and all(isinstance(a[k], int | float) for a in why["arms"].values()
                                   for k in ("rank", "raw", "contribution"))
        assert isinstance(why["fused"], float) and isinstance(why["final"], float)
        assert why["provenance"]["source"] == "runbook" and why["provenance"]["author"] == "test"
        trace = res["trace"]
        assert {a["name"] for a in trace["arms"]} >= {"keyword", "semantic"}
        assert trace["filter"]["in_scope"] == 1 and trace["budget"]["max"] > 0
        assert {"abstained", "reason", "hint", "truncated", "narrow_hint"} <= set(res)

        empty = doc(await s.call_tool("memory_search", {"query": "staging deploy key", "namespaces": ["nowhere"]}))
        assert empty["abstained"] is False and empty["cause"] == "no_scope" and empty["reason"] and empty["hint"]

        got = doc(await s.call_tool("memory_get", {"id": added["record_id"]}))
        assert got["body"] == text and got["tags"] == ["keys"]
        listed = doc(await s.call_tool("memory_list", {"namespaces": ["ops"]}))
        assert listed["count"] == 1 and listed["records"][0]["id"] == added["record_id"]
        stats = doc(await s.call_tool("memory_stats", {}))
        assert stats["live"] == 1 and stats["by_namespace"] == {"ops": 1}
        seen.update(mcp=res, record_id=added["record_id"])

    run_session(tmp_path, scenario, db=backend_db)
    # The MCP document has the structure `memo search --json` prints, with the same results.
    cli = subprocess.run([str(REPO / ".venv/bin/memo"), "search", "staging deploy key rotation", "--namespace",
                          "ops", "--explain", "--json", "--db", backend_db],
                         capture_output=True, text=True, timeout=60, check=True)
    cli_doc = json.loads(cli.stdout)
    assert set(cli_doc) == set(seen["mcp"])
    assert set(cli_doc["trace"]) == set(seen["mcp"]["trace"])
    mine, theirs = seen["mcp"]["results"][0], cli_doc["results"][0]
    assert set(mine) == set(theirs) and set(mine["why"]) == set(theirs["why"])
    assert mine["passage_id"] == theirs["passage_id"]
    assert mine["why"]["arms"].keys() == theirs["why"]["arms"].keys()
    for arm, a in mine["why"]["arms"].items():
        assert (a["rank"], a["raw"]) == pytest.approx((theirs["why"]["arms"][arm]["rank"],
                                                       theirs["why"]["arms"][arm]["raw"]))


def test_add_is_acknowledged_then_embedded_in_background(tmp_path: Path) -> None:
    """Issue 9.9: memory_add answers after the commit with its passages queued (no error);
    the server's background embedder embeds them, and a search in semantic mode (only the
    semantic arm runs) then finds the memory.  wait=true embeds before answering."""
    text = "Our quarterly revenue forecast assumes the Lisbon office opens in spring."
    query = "when will the Lisbon office open"      # cosine 0.66 with the text

    async def scenario(s: ClientSession) -> None:
        added = doc(await s.call_tool("memory_add", {"text": text, "namespace": "biz"}))
        assert added["status"] == "added"
        assert added["vectors"]["embedded"] == 0 and added["vectors"]["queued"] == 1
        assert added["vectors"]["error"] is None and added["vectors"]["model_id"]
        args = {"query": query, "mode": "semantic", "namespaces": ["biz"], "response_format": "explain"}
        with anyio.fail_after(20):
            while True:
                res = doc(await s.call_tool("memory_search", args))
                if res["results"]:
                    break
                # before the vector lands the search says so ("no vectors yet" while the
                # database has none at all, else "1 of 1 in-scope passages have no vector"),
                # and before that while the server is still loading the model (issue 31.2)
                reason = res["trace"]["degraded"]["reason"]
                assert res["trace"]["degraded"]["flag"] and ("vector" in reason or LOADING in reason), reason
                await anyio.sleep(0.1)
        assert res["results"][0]["record_id"] == added["record_id"]
        assert "semantic" in res["results"][0]["why"]["arms"]
        assert res["trace"]["degraded"]["flag"] is False
        assert doc(await s.call_tool("memory_stats", {}))["pending_vectors"] == {added["vectors"]["model_id"]: 0}

        sync = doc(await s.call_tool("memory_add", {"text": "The Lisbon office lease starts in April.",
                                                     "namespace": "biz", "wait": True}))
        assert sync["vectors"]["embedded"] == 1 and sync["vectors"]["queued"] == 0
        fact = doc(await s.call_tool("memory_fact_add", {"text": "Lisbon office opens in spring",
                                                         "evidence": [added["record_id"]], "namespace": "biz"}))
        assert fact["status"] == "added" and fact["embedded"] is False
        with anyio.fail_after(20):
            while doc(await s.call_tool("memory_stats", {}))["pending_fact_vectors"].get(
                    added["vectors"]["model_id"]):
                await anyio.sleep(0.1)

    run_session(tmp_path, scenario)


def test_answers_while_the_model_loads_then_searches_are_hybrid(tmp_path: Path) -> None:
    """Issue 31.2: the model and the matrices load in the background.  The warm-up is held
    at its gate ($MEMO_WARMUP_GATE, tests only: memo.embed.warmup), so the model is certainly
    still loading: initialize and tools/list answer, and a search is answered by the keyword
    arm, degraded with the loading reason.  Once the gate opens the searches become hybrid."""
    text = "The backup job copies the invoices bucket to cold storage every night at 02:00."
    query = "when does the invoices backup run"
    rid: dict[str, str] = {}

    async def setup(s: ClientSession) -> None:
        rid["id"] = doc(await s.call_tool("memory_add", {"text": text, "wait": True}))["record_id"]

    run_session(tmp_path, setup)                 # a database whose passage has its vector
    gate = tmp_path / "warmup.gate"

    async def scenario(s: ClientSession) -> None:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        res = doc(await s.call_tool("memory_search", {"query": query, "response_format": "explain"}))
        degraded = res["trace"]["degraded"]
        assert degraded["flag"] is True and LOADING in degraded["reason"], degraded
        assert res["results"][0]["record_id"] == rid["id"]                 # the keyword arm answered
        assert "semantic" not in res["results"][0]["why"]["arms"]
        semantic = next(a for a in res["trace"]["arms"] if a["name"] == "semantic")
        assert semantic["ran"] is False and LOADING in semantic["reason"]
        assert doc(await s.call_tool("memory_stats", {}))["live"] == 1       # the other tools answer too

        gate.touch()
        with anyio.fail_after(20):
            while LOADING in (res["trace"]["degraded"]["reason"] or ""):
                await anyio.sleep(0.05)
                res = doc(await s.call_tool("memory_search", {"query": query, "response_format": "explain"}))
        assert res["trace"]["degraded"]["flag"] is False, res["trace"]["degraded"]
        assert "semantic" in res["results"][0]["why"]["arms"]
        assert res["results"][0]["record_id"] == rid["id"]

    run_session(tmp_path, scenario, {GATE_ENV: str(gate)})


def test_bad_input_is_an_error_result_and_server_stays_up(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        doc(await s.call_tool("memory_add", {"text": "a note about sqlite WAL checkpoints"}))
        cases = [
            ({"query": "wal", "limit": 0}, "ValidationError", "limit"),
            ({"query": "wal", "limit": 1000}, "ValidationError", "limit"),
            ({"query": ""}, "ValidationError", "query"),
            ({"query": "   "}, "QuerySyntaxError", "empty"),
            ({"query": "wal", "profile": "no-such-profile"}, "ProfileError", "no-such-profile"),
            ({"query": "wal", "profile": "/etc/hosts"}, "ProfileError", "not a profile name"),
            ({"query": "wal", "mode": "fuzzy"}, "ValidationError", "mode"),
            ({"query": "wal", "date_from": "yesterday"}, "ValidationError", "yesterday"),
            ({"limit": 5}, "ValidationError", "query"),
        ]
        for args, kind, needle in cases:
            line = error_line(await s.call_tool("memory_search", args))
            assert line.startswith(f"{kind}: ") and needle in line, (args, line)
        line = error_line(await s.call_tool("memory_get", {"id": "r-missing"}))
        assert line.startswith("NotFound: ") and "memory_list" in line
        line = error_line(await s.call_tool("memory_add", {"text": "x", "trust": 2}))
        assert line.startswith("ValidationError: ") and "trust" in line
        line = error_line(await s.call_tool("memory_add", {"text": "x", "event_at": "soon"}))
        assert line.startswith("ValidationError: ") and "ISO" in line
        unknown = await s.call_tool("memory_nope", {})
        assert unknown.is_error and "memory_nope" in unknown.content[0].text
        # ...and the next call is served normally.
        res = doc(await s.call_tool("memory_search", {"query": "sqlite WAL checkpoints", "limit": 1}))
        assert len(res["results"]) == 1

    run_session(tmp_path, scenario)


def test_forget_several_needs_exact_confirmation(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        ids = [doc(await s.call_tool("memory_add", {"text": t}))["record_id"]
               for t in ("The build cache lives in /var/cache/build-farm.",
                         "The build farm runs nightly at 02:00 UTC.",
                         "Keep this build note: the farm has 12 workers.")]
        two = ids[:2]
        line = error_line(await s.call_tool("memory_forget", {"ids": two}))
        assert line.startswith("ConfirmationRequired: ") and "confirm=2" in line
        line = error_line(await s.call_tool("memory_forget", {"ids": two, "confirm": 3}))
        assert line.startswith("ConfirmationRequired: ")
        res = doc(await s.call_tool("memory_search", {"query": "build farm", "limit": 10}))
        assert {r["record_id"] for r in res["results"]} == set(ids)       # nothing was forgotten

        report = doc(await s.call_tool("memory_forget", {"ids": two, "confirm": 2}))
        assert sorted(report["forgotten"]) == sorted(two)
        res = doc(await s.call_tool("memory_search", {"query": "build farm", "limit": 10}))
        assert {r["record_id"] for r in res["results"]} == {ids[2]}
        assert doc(await s.call_tool("memory_get", {"id": two[0]}))["forgotten_at"]
        # One id needs no confirmation.
        assert doc(await s.call_tool("memory_forget", {"ids": [ids[2]]}))["forgotten"] == [ids[2]]

        # supersede: the new text is found, the old version only under as_of.
        new = doc(await s.call_tool("memory_add", {"text": "The VPN gateway is vpn1.example.org."}))
        sup = doc(await s.call_tool("memory_supersede", {"id": new["record_id"],
                                                         "text": "The VPN gateway moved to vpn2.example.org."}))
        res = doc(await s.call_tool("memory_search", {"query": "VPN gateway"}))
        assert [r["record_id"] for r in res["results"]] == [sup["new_id"]]

    run_session(tmp_path, scenario)


def test_raw_jsonrpc_over_pipes(tmp_path: Path) -> None:
    """Without the SDK: initialize, tools/list, tools/call; stdout holds JSON-RPC only."""
    proc = subprocess.Popen([sys.executable, "-m", "memo.serve.mcp", "--db", str(tmp_path / "raw.db")],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: list[str] = []

    def call(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:      # skip notifications (e.g. log messages) until our response
            line = proc.stdout.readline()
            assert line, "server closed stdout"
            lines.append(line)
            msg = json.loads(line)
            if msg.get("id") == msg_id:
                return msg

    try:
        init = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "raw-test", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "memo"
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        names = {t["name"] for t in call(2, "tools/list", {})["result"]["tools"]}
        assert names == TOOLS
        add = call(3, "tools/call", {"name": "memory_add", "arguments": {"text": "raw pipes work"}})
        assert add["result"]["isError"] is False
        bad = call(4, "tools/call", {"name": "memory_search", "arguments": {"query": "pipes", "limit": 0}})
        assert bad["result"]["isError"] is True
        ok = call(5, "tools/call", {"name": "memory_search", "arguments": {"query": "raw pipes"}})
        assert ok["result"]["structuredContent"]["results"][0]["text"] == "raw pipes work"
    finally:
        rest, stderr = proc.communicate(timeout=15)   # closes stdin: the server exits
    lines.extend(rest.splitlines(keepends=True))
    assert assert_jsonrpc_lines("".join(lines)) >= 5
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr


def test_a_client_that_leaves_at_once_does_not_crash_the_server(tmp_path: Path) -> None:
    """initialize, then stdin closes while the warm-up thread may be loading the model: the
    server waits for the load it began and exits 0 (it aborted with "terminate called
    without an active exception", -6, when the interpreter finalised mid-load)."""
    from memo.ops.add import add_record
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    db = tmp_path / "leave.db"
    conn = open_db(db)
    add_record(conn, RecordDraft(body="a passage for the vector matrix"))
    conn.close()
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "memo.serve.mcp", "--db", str(db)], cwd=REPO,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        _, stderr = proc.communicate(timeout=60)      # closes stdin at once
        assert proc.returncode == 0 and "terminate called" not in stderr, stderr


def test_unexpected_exception_becomes_error_result(tmp_path: Path) -> None:
    """In process: a crash inside a tool is an isError result, and the next call works."""
    from memo.serve.mcp_server import build_server
    from memo.serve.mcp_tools import MemoTools

    tools = MemoTools(tmp_path / "crash.db")
    server = build_server(tools, backfill=False)

    def boom() -> dict[str, Any]:
        raise RuntimeError("disk on fire: /secret/path")

    real_stats = tools.stats
    tools.stats = boom  # type: ignore[method-assign]

    async def main() -> None:
        res = await server.call_tool("memory_stats", {})
        assert res.is_error and res.content[0].text.startswith("InternalError: memory_stats failed")
        assert "/secret/path" not in res.content[0].text          # details stay in the server log
        tools.stats = real_stats  # type: ignore[method-assign]
        assert not (await server.call_tool("memory_stats", {})).is_error

    try:
        anyio.run(main)
    finally:
        tools.close()


def test_degraded_without_model_then_backfilled_at_next_start(tmp_path: Path) -> None:
    """Writes made while the model is unavailable queue their vectors; the next server
    start embeds them in the background (memo.embed.background.BackgroundEmbedder)."""
    from memo.embed.registry import load_registry

    real = load_registry().get("all-minilm-l6-v2-int8")
    onnx = tmp_path / "model.onnx"                      # missing during the first session
    models = tmp_path / "models.toml"
    models.write_text(
        f'default = "minilm-copy"\n[models."minilm-copy"]\nonnx = "{onnx}"\nsha256 = "{real.sha256}"\n'
        f'tokenizer = "{real.tokenizer}"\ndimensions = 384\npooling = "mean"\nmax_tokens = 256\n'
        '[models."minilm-copy".bands]\nsemantic_floor = 0.39\nweak = 0.39\nmoderate = 0.47\nstrong = 0.67\n')
    env = {"MEMO_MODELS": str(models)}
    query = "when does the staging certificate expire"

    async def without_model(s: ClientSession) -> None:
        doc(await s.call_tool("memory_add", {"text": "The staging TLS certificate expires on 1 March."}))
        res = doc(await s.call_tool("memory_search", {"query": query}))
        assert res["trace"]["degraded"]["flag"] is True and res["results"]       # keyword still answers
        assert not doc(await s.call_tool("memory_stats", {}))["vectors"]

    run_session(tmp_path, without_model, env)
    onnx.write_bytes(real.onnx.read_bytes())

    async def with_model(s: ClientSession) -> None:
        with anyio.fail_after(15):
            while not doc(await s.call_tool("memory_stats", {}))["vectors"].get("minilm-copy"):
                await anyio.sleep(0.2)
        res = doc(await s.call_tool("memory_search", {"query": query, "response_format": "explain"}))
        assert res["trace"]["degraded"]["flag"] is False
        assert "semantic" in res["results"][0]["why"]["arms"]

    run_session(tmp_path, with_model, env)


def test_unusable_database_stops_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database " * 100)
    proc = subprocess.run([sys.executable, "-m", "memo.serve.mcp", "--db", str(bad)], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 6 and proc.stdout == ""
    assert proc.stderr.startswith("memo-mcp: error: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_concurrent_calls_share_one_connection_safely(tmp_path: Path) -> None:
    """The SDK runs tool calls concurrently (worker threads); the server serialises them
    on its one connection, so interleaved adds and searches all succeed."""
    async def scenario(s: ClientSession) -> None:
        results: list[Any] = []

        async def add(i: int) -> None:
            results.append(await s.call_tool("memory_add", {"text": f"parallel note {i}: cache shard {i} is warm"}))

        async def search() -> None:
            results.append(await s.call_tool("memory_search", {"query": "parallel cache shard"}))

        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(add, i)
                tg.start_soon(search)
        assert not [r.content[0].text for r in results if r.is_error]
        assert doc(await s.call_tool("memory_stats", {}))["live"] == 12

    run_session(tmp_path, scenario)
