"""memo entities list / show (library ops and the CLI's --json), explicit entities from
JSONL and --entity."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.errors import NotFound
from memo.ingest.jsonl import parse_line
from memo.ops.add import add_record
from memo.ops.entities import list_entities, show_entity
from memo.stored import RecordDraft


def test_list_and_show(fresh_db):
    add_record(fresh_db, RecordDraft(body="Alice met Bob in Paris.", namespace="a"))
    add_record(fresh_db, RecordDraft(body="Bob lives in Paris with Carol.", namespace="b"))
    rows = list_entities(fresh_db)
    assert [(e.key, e.passages) for e in rows[:2]] == [("bob", 2), ("paris", 2)]
    assert [e.key for e in list_entities(fresh_db, namespaces=["a"])] == ["alice", "bob", "paris"]
    assert [e.key for e in list_entities(fresh_db, contains="AR")] == ["paris", "carol"]
    d = show_entity(fresh_db, "PARIS")
    assert d.passages == 2 and {c.key for c in d.co_mentioned} == {"alice", "bob", "carol"}
    with pytest.raises(NotFound):
        show_entity(fresh_db, "nobody")


def test_cli_json_and_explicit_entities(db_path):
    runner = CliRunner()
    r = runner.invoke(app, ["add", "Quarterly review.", "--entity", "Acme Corp", "--db", str(db_path), "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["entities", "show", "acme corp", "--db", str(db_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "explicit" and doc["passages"] == 1
    r = runner.invoke(app, ["entities", "list", "--db", str(db_path), "--json"])
    assert "acme corp" in {e["key"] for e in json.loads(r.stdout)["entities"]}
    r = runner.invoke(app, ["entities", "show", "nobody", "--db", str(db_path), "--json"])
    assert r.exit_code == 3


def test_jsonl_entities_field():
    d = parse_line({"text": "x", "entities": ["Acme", "Bob", "Acme"], "meta": {"k": 1}}, RecordDraft(body="-"), "f", 1)
    assert d.meta == {"k": 1, "entities": ["Acme", "Bob"]}
    with pytest.raises(ValueError):
        parse_line({"text": "x", "entities": [1]}, RecordDraft(body="-"), "f", 1)


def test_mcp_add_entities_and_reindex_counts(db_path, tmp_path, monkeypatch):
    from memo.ops.maintenance import reindex
    from memo.serve.mcp_tools import MemoTools

    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))    # no model: nothing embeds
    tools = MemoTools(db_path)
    try:
        out = tools.add("Quarterly review of the roadmap.", entities=["Acme Corp", "Project X"],
                        meta={"entities": ["Acme Corp", "Bob"], "k": 1})
        rec = tools.get(out["record_id"])
        assert rec["meta"] == {"entities": ["Acme Corp", "Bob", "Project X"], "k": 1}
        keys = {e.key: e.kind for e in list_entities(tools.conn)}
        assert {k: keys.get(k) for k in ("acme corp", "bob", "project x")} == \
            {"acme corp": "explicit", "bob": "explicit", "project x": "explicit"}
        report = reindex(tools.conn)
        assert report.entities == len(list_entities(tools.conn)) and report.mentions >= 3
    finally:
        tools.close()
