"""Issue 33.1: every list a write takes has one cap (memo.text.limits), refused as a
ValidationError on every surface: the CLI (exit 2, the JSON error document), MCP (the
tool schemas carry the caps as maxItems; a call over one is a ValidationError result) and
the web API (400).  Nothing is written by a refused request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from starlette.testclient import TestClient
from typer.testing import CliRunner

from memo.cli import app
from memo.serve.web import create_app
from memo.store.connect import connect
from memo.text.limits import MAX_ENTITIES, MAX_EVIDENCE_IDS, MAX_IDS, MAX_TAGS
from tests.integration.test_mcp_stdio import doc, error_line, run_session

runner = CliRunner()


def _cli(*args: str) -> tuple[int, dict]:
    res = runner.invoke(app, [*args, "--json"])
    return res.exit_code, json.loads(res.stdout) if res.stdout.strip() else {}


def _count(db: Path, table: str) -> int:
    conn = connect(db)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def test_cli_refuses_lists_over_their_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "c.db"
    monkeypatch.setenv("MEMO_DB", str(db))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    code, rec = _cli("add", "the proxy log shows resets every hour")
    assert code == 0
    rid = rec["record_id"]
    over = {
        "fact add": ["fact", "add", "x", *[a for _ in range(MAX_EVIDENCE_IDS + 1) for a in ("--evidence", rid)]],
        "add --tag": ["add", "tagged", *[a for i in range(MAX_TAGS + 1) for a in ("--tag", f"t{i}")]],
        "add --entity": ["add", "named", *[a for i in range(MAX_ENTITIES + 1) for a in ("--entity", f"E{i}")]],
        "forget": ["forget", rid, *(f"r-missing-{i}" for i in range(MAX_IDS)), "--yes"],
        "fact forget": ["fact", "forget", *(f"f{i}" for i in range(MAX_IDS + 1)), "--yes"],
    }
    for name, args in over.items():
        code, err = _cli(*args)
        assert code == 2 and err["error"] == "ValidationError", (name, err)
        assert "over the cap" in err["message"], (name, err)
    assert _count(db, "records") == 1 and _count(db, "facts") == 0
    code, _ = _cli("fact", "add", "x", *[a for _ in range(MAX_EVIDENCE_IDS) for a in ("--evidence", rid)])
    assert code == 0    # at the cap is fine


def test_mcp_schemas_carry_the_caps_and_calls_over_them_are_validation_errors(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t.input_schema["properties"] for t in (await s.list_tools()).tools}

        def max_items(tool: str, arg: str) -> int:
            prop = tools[tool][arg]
            return next(p for p in prop.get("anyOf", [prop]) if p.get("type") == "array")["maxItems"]

        assert max_items("memory_fact_add", "evidence") == MAX_EVIDENCE_IDS
        assert max_items("memory_add", "tags") == max_items("memory_supersede", "tags") == MAX_TAGS
        assert max_items("memory_add", "entities") == MAX_ENTITIES
        assert max_items("memory_forget", "ids") == max_items("memory_fact_forget", "ids") == MAX_IDS

        rid = doc(await s.call_tool("memory_add", {"text": "The proxy resets every hour."}))["record_id"]
        calls = [
            ("memory_fact_add", {"text": "x", "evidence": [rid] * (MAX_EVIDENCE_IDS + 1)}),
            ("memory_add", {"text": "tagged", "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}),
            ("memory_add", {"text": "named", "entities": [f"E{i}" for i in range(MAX_ENTITIES + 1)]}),
            # within the schema, over the cap once merged with meta.entities: the library's check
            ("memory_add", {"text": "named too", "entities": ["A"],
                            "meta": {"entities": [f"E{i}" for i in range(MAX_ENTITIES)]}}),
            ("memory_supersede", {"id": rid, "text": "new", "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}),
            ("memory_forget", {"ids": [f"r{i}" for i in range(MAX_IDS + 1)], "confirm": MAX_IDS + 1}),
            ("memory_fact_forget", {"ids": [f"f{i}" for i in range(MAX_IDS + 1)], "confirm": MAX_IDS + 1}),
        ]
        for name, args in calls:
            line = error_line(await s.call_tool(name, args))
            assert line.startswith("ValidationError: "), (name, line[:300])
        stats = doc(await s.call_tool("memory_stats", {}))
        assert stats["records"] == 1, stats

    run_session(tmp_path, scenario)


def test_web_add_refuses_tags_and_entities_over_their_caps(tmp_path: Path) -> None:
    token = "test-token-0123456789abcdef"
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(tmp_path / "w.db", token=token), base_url="http://127.0.0.1:8765") as c:
        for body in ({"text": "tagged", "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]},
                     {"text": "named", "meta": {"entities": [f"E{i}" for i in range(MAX_ENTITIES + 1)]}}):
            resp = c.post("/api/memories", json=body, headers=auth)
            assert resp.status_code == 400 and resp.json()["type"] == "ValidationError", resp.text
            assert "over the cap" in resp.json()["error"]
        assert c.get("/api/stats", headers=auth).json()["records"] == 0
