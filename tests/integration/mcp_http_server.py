"""Helper for the MCP-over-HTTP tests: run the real ``memo-mcp --http --port 0`` in a
subprocess against a given database, read the endpoint line it prints on stderr, and open
the official SDK client (``streamable_http_client``) on it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.integration.web_server import wait_for_line

REPO = Path(__file__).resolve().parents[2]
TOKEN = "mcp-http-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
URL_LINE = re.compile(r"^memo-mcp: Streamable HTTP at (http://\S+/mcp) ", re.MULTILINE)


@contextmanager
def mcp_http(db: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 90.0) -> Iterator[str]:
    """``memo-mcp --http --port 0 --db DB ARGS`` with $MEMO_MCP_TOKEN=TOKEN; yields the
    endpoint URL once printed."""
    err_path = db.parent / f"memo-mcp-http-{os.getpid()}-{time.monotonic_ns()}.stderr"
    full_env = {**os.environ, "MEMO_MCP_TOKEN": TOKEN, **(env or {})}
    with err_path.open("wb") as err:     # a file, not a pipe: nobody drains a pipe meanwhile
        proc = subprocess.Popen([sys.executable, "-m", "memo.serve.mcp", "--http", "--port", "0", "--db", str(db),
                                 "--no-backfill", *args], cwd=REPO, env=full_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        m = wait_for_line(proc, err_path, URL_LINE, timeout, "memo-mcp --http")
        yield m.group(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@asynccontextmanager
async def session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialised official ``ClientSession`` over Streamable HTTP."""
    async with create_mcp_http_client(headers=AUTH if headers is None else headers) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s
