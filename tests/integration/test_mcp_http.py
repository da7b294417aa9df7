"""memo-mcp over Streamable HTTP (issue 32.2): the official SDK client
(``streamable_http_client`` + ``ClientSession``) against a real ``memo-mcp --http``
subprocess on 127.0.0.1, and raw HTTP requests for what the guard refuses (the same
predicates as the web UI: Host, Origin, cross-site writes, the bearer token, body size)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memo.serve.mcp_server import MAX_MESSAGE_BYTES
from tests.integration.mcp_http_server import AUTH, REPO, mcp_http, session
from tests.integration.test_mcp_stdio import TOOLS

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _doc(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


def test_official_client_over_http_adds_searches_and_gets(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    with mcp_http(db) as url:
        assert url.startswith("http://127.0.0.1:")

        async def main() -> dict[str, Any]:
            with anyio.fail_after(120):
                async with session(url) as s:
                    names = {t.name for t in (await s.list_tools()).tools}
                    assert names == TOOLS
                    added = _doc(await s.call_tool("memory_add", {
                        "text": "The staging deploy key rotates every 30 days.", "namespace": "ops", "wait": True}))
                    found = _doc(await s.call_tool("memory_search", {"query": "deploy key rotation",
                                                                     "mode": "keyword"}))
                    got = _doc(await s.call_tool("memory_get", {"id": added["record_id"]}))
                    bad = await s.call_tool("memory_search", {"query": "x", "limit": -1})
                    return {"added": added, "found": found, "got": got, "bad": bad}

        out = anyio.run(main)
    assert out["found"]["results"][0]["record_id"] == out["added"]["record_id"]
    assert out["got"]["namespace"] == "ops"
    assert out["bad"].is_error and out["bad"].content[0].text.startswith("ValidationError")


def test_two_clients_share_one_server(tmp_path: Path) -> None:
    """HTTP's reason to exist: several clients on one server (and one database)."""
    with mcp_http(tmp_path / "memo.db") as url:
        async def main() -> list[int]:
            with anyio.fail_after(120):
                async with session(url) as a, session(url) as b:
                    _doc(await a.call_tool("memory_add", {"text": "alpha note from client a", "wait": True}))
                    _doc(await b.call_tool("memory_add", {"text": "beta note from client b", "wait": True}))
                    seen = []
                    for s in (a, b):
                        doc = _doc(await s.call_tool("memory_search", {"query": "note client", "mode": "keyword"}))
                        seen.append(len(doc["results"]))
                    return seen

        assert anyio.run(main) == [2, 2]


def _post(url: str, headers: dict[str, str], body: bytes | None = None) -> httpx.Response:
    return httpx.post(url, headers={**ACCEPT, **headers}, content=body or json.dumps(INIT).encode(), timeout=30)


def test_guard_refuses_what_the_web_ui_refuses(tmp_path: Path) -> None:
    with mcp_http(tmp_path / "memo.db") as url:
        port = url.split(":")[2].split("/")[0]
        assert _post(url, AUTH).status_code == 200                               # the control: accepted
        assert _post(url, {}).status_code == 401                                  # no token
        assert _post(url, {"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
        assert _post(url, {**AUTH, "Host": f"evil.example:{port}"}).status_code == 403     # DNS rebinding
        assert _post(url, {**AUTH, "Host": "127.0.0.1:1"}).status_code == 403              # another port
        assert _post(url, {**AUTH, "Origin": "http://evil.example"}).status_code == 403    # a foreign page
        assert _post(url, {**AUTH, "Origin": "null"}).status_code == 403
        assert _post(url, {**AUTH, "Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert _post(url, {**AUTH, "Origin": f"http://localhost:{port}"}).status_code == 200
        big = _post(url, AUTH, b" " * (MAX_MESSAGE_BYTES + 1))
        assert big.status_code == 413
        refused = _post(url, {})
        assert refused.headers["x-content-type-options"] == "nosniff"
        assert "MEMO_MCP_TOKEN" in refused.json()["hint"] and "memo web" not in refused.json()["hint"]
        assert "memo web" not in _post(url, {**AUTH, "Origin": "http://evil.example"}).json()["hint"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memo.serve.mcp", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)


def test_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    out = _run("--http", "--host", "0.0.0.0", "--port", "0", "--db", str(tmp_path / "m.db"))
    assert out.returncode == 2, out.stderr
    assert "not a loopback address" in out.stderr and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize("port", ["70000", "-1", "eight", "²"])
def test_bad_port_is_a_usage_error(tmp_path: Path, port: str) -> None:
    out = _run("--http", "--port", port, "--db", str(tmp_path / "m.db"))
    assert out.returncode == 2 and "is not a port" in out.stderr and "Traceback" not in out.stderr


def test_bad_token_in_the_environment_is_one_line(tmp_path: Path) -> None:
    import os
    out = _run("--http", "--port", "0", "--db", str(tmp_path / "m.db"), env={**os.environ, "MEMO_MCP_TOKEN": "short"})
    assert out.returncode == 2 and "MEMO_MCP_TOKEN" in out.stderr and "Traceback" not in out.stderr


def test_an_unknown_option_is_named() -> None:
    """Issue 32: `memo-mcp --dbb x` answered "invalid choice: 'x' (choose from 'backfill')"."""
    out = _run("--dbb", "x")
    assert out.returncode == 2 and "unknown option --dbb" in out.stderr and "invalid choice" not in out.stderr
