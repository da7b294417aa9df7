"""`memo fact add/list/get/supersede/forget` with --json: documents, typed errors and exit
codes (docs/cli-json.md), and a fact's vote visible in `memo search --explain --json`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()


def _run(*args):
    res = runner.invoke(app, [*args, "--json"])
    return res.exit_code, json.loads(res.stdout) if res.stdout.strip() else None


def test_fact_commands_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "c.db"))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))      # no model: keyword half only (fast)
    code, rec = _run("add", "the proxy log shows resets every hour", "--namespace", "ops")
    assert code == 0
    rid = rec["record_id"]
    code, doc = _run("fact", "add", "clients see ERR_CONN_RESET", "--evidence", rid, "--namespace", "ops")
    assert code == 0 and doc["status"] == "added" and doc["evidence"] == [f"{rid}:0"]
    fid = doc["fact_id"]
    code, doc = _run("fact", "add", "x", "--evidence", "nope")
    assert code == 2 and doc["error"] == "ValidationError" and "nope" in doc["message"]
    code, doc = _run("fact", "list", "--namespace", "ops")
    assert code == 0 and doc["count"] == 1 and doc["facts"][0]["id"] == fid
    code, doc = _run("fact", "get", fid)
    assert code == 0 and doc["evidence"][0]["passage_id"] == f"{rid}:0"
    code, doc = _run("search", "ERR_CONN_RESET", "--explain")
    assert code == 0 and doc["results"][0]["record_id"] == rid
    assert doc["results"][0]["why"]["arms"]["fact"]["votes"][0]["fact_id"] == fid
    code, doc = _run("fact", "supersede", fid, "clients see ERR_CONN_RESET after 60 s idle")
    assert code == 0 and doc["old_id"] == fid
    new = doc["new_id"]
    code, doc = _run("fact", "get", "fnope")
    assert code == 3 and doc["error"] == "NotFound"
    code, doc = _run("fact", "forget", new, fid)
    assert code == 4 and doc["error"] == "ConfirmationRequired"
    code, doc = _run("fact", "forget", new)
    assert code == 0 and doc["forgotten"] == [new]
    code, doc = _run("fact", "list")
    assert doc["count"] == 0
