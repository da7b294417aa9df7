"""A running memo-mcp embeds the passages another process queued after it started
(memo/serve/pending_vectors.py, shared with memo web): the ``vectors_pending`` hint says a
server embeds them within moments, and memo-mcp only did at its next start.

Real parts: memo-mcp over stdio with the SDK's client and the real embedding model, and a
second process, ``memo import --no-embed``, writing to the same database while the server
runs.  The searches' phase reads the queue from the database, not through memory_stats
(which starts the catch-up too): each answer that shows queued vectors starts it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memo.embed.registry import default_model_id
from memo.embed.vectors import pending_count
from memo.store.db import open_db
from tests.integration.test_mcp_stdio import REPO, assert_jsonrpc_lines, doc

QUOKKA = "The quokka enclosure is cleaned on Tuesdays by the keeper."
KOALA = "The koalas are weighed every second Thursday in the clinic."
DEADLINE_S = 60.0          # the model loads and embeds on a loaded 2-core machine


def _pending(db: Path) -> int:
    conn = open_db(db, write=False)
    try:
        return pending_count(conn, default_model_id())
    finally:
        conn.close()


async def _import_without_vectors(db: Path, folder: Path, namespace: str) -> None:
    """Another process queues passages: ``memo import --no-embed``."""
    run = await anyio.to_thread.run_sync(lambda: subprocess.run(
        [sys.executable, "-m", "memo", "import", str(folder), "--no-embed", "--namespace", namespace],
        cwd=REPO, env={**os.environ, "MEMO_DB": str(db)}, capture_output=True, text=True, timeout=120))
    assert run.returncode == 0, run.stderr


def _folder(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{name}.txt").write_text(text + "\n")
    return folder


def test_the_server_embeds_what_another_process_queued(tmp_path: Path) -> None:
    db, out, err = tmp_path / "memo.db", tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    open_db(db).close()
    zoo, bush = _folder(tmp_path, "zoo", QUOKKA), _folder(tmp_path, "bush", KOALA)
    server_cmd = f'"{sys.executable}" -m memo.serve.mcp --db "{db}" | tee "{out}"'
    params = StdioServerParameters(command="sh", args=["-c", server_cmd], cwd=str(REPO))

    async def scenario(s: ClientSession) -> None:
        # The server's start-up backfill must be over first (else it would embed the import
        # below): an add's vector lands only after it, through the same embedder thread.
        added = doc(await s.call_tool("memory_add", {"text": "Lunch on Fridays is pizza.", "namespace": "team"}))
        assert added["vectors"]["queued"] == 1, added
        with anyio.fail_after(DEADLINE_S):
            while _pending(db):
                await anyio.sleep(0.2)

        # 1. searches: each degraded answer (the passage has no vector) starts the catch-up
        await _import_without_vectors(db, zoo, "zoo")
        assert _pending(db) == 1                          # the other process left it queued
        args = {"query": "when is the quokka enclosure cleaned", "namespaces": ["zoo"], "mode": "semantic"}
        deadline, res, answers = time.monotonic() + DEADLINE_S, None, 0
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            res = doc(await s.call_tool("memory_search", args))
            answers += 1
            assert time.monotonic() - t0 < 30                # none waits for the backfill
            if res["results"]:
                break
            await anyio.sleep(0.5)
        assert res is not None and res["results"], (answers, res and res["trace"]["degraded"], err.read_text())
        assert res["results"][0]["text"] == QUOKKA and not res["trace"]["degraded"]["flag"]
        assert _pending(db) == 0

        # 2. memory_stats alone: an answer counting queued vectors starts the catch-up too
        await _import_without_vectors(db, bush, "bush")
        model = default_model_id()
        deadline, stats = time.monotonic() + DEADLINE_S, {}
        while time.monotonic() < deadline:
            stats = doc(await s.call_tool("memory_stats", {}))
            if stats["pending_vectors"][model] == 0:
                break
            await anyio.sleep(0.5)
        assert stats["pending_vectors"][model] == 0, (stats["pending_vectors"], err.read_text())
        res = doc(await s.call_tool("memory_search", {"query": "when are the koalas weighed",
                                                      "namespaces": ["bush"], "mode": "semantic"}))
        assert res["results"] and res["results"][0]["text"] == KOALA, res

    async def main() -> None:
        with anyio.fail_after(4 * DEADLINE_S), err.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await scenario(session)

    anyio.run(main)
    stderr = err.read_text()
    assert "Traceback" not in stderr, stderr
    assert_jsonrpc_lines(out.read_text())
