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


def test_stats_counts_facts_and_get_shows_them(tmp_path, monkeypatch):
    """`memo stats` counts facts (live / superseded / forgotten) and facts waiting for a
    vector; `memo get RECORD` lists the live facts whose evidence is in that record."""
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "s.db"))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))      # no model: fact vectors stay queued
    rid = _run("add", "first paragraph\n\nsecond paragraph", "--namespace", "ops")[1]["record_id"]
    other = _run("add", "unrelated note", "--namespace", "ops")[1]["record_id"]
    a = _run("fact", "add", "about the second", "--evidence", f"{rid}:1", "--namespace", "ops")[1]["fact_id"]
    b = _run("fact", "add", "about both", "--evidence", rid, "--namespace", "ops")[1]["fact_id"]
    c = _run("fact", "add", "elsewhere", "--evidence", other, "--namespace", "ops")[1]["fact_id"]
    new = _run("fact", "supersede", b, "about both, reworded")[1]["new_id"]
    _run("fact", "forget", c)
    code, doc = _run("stats")
    assert code == 0
    assert (doc["facts"], doc["facts_live"], doc["facts_superseded"], doc["facts_forgotten"]) == (4, 2, 1, 1)
    assert doc["fact_vectors"] == {} and doc["pending_fact_vectors"] == {"all-minilm-l6-v2-int8": 3}
    code, doc = _run("get", rid)
    assert code == 0
    assert [(f["id"], f["text"], f["passages"]) for f in doc["facts"]] == [
        (a, "about the second", [f"{rid}:1"]), (new, "about both, reworded", [f"{rid}:0", f"{rid}:1"])]
    assert _run("get", other)[1]["facts"] == []                        # its only fact is forgotten
    human = runner.invoke(app, ["get", rid])
    assert human.exit_code == 0 and "facts (2) citing its passages:" in human.stdout and a in human.stdout
    human = runner.invoke(app, ["stats"])
    assert "2 live, 1 superseded, 1 forgotten" in human.stdout


def test_near_identical_facts_on_add_and_import_are_reported(tmp_path, monkeypatch):
    """Issue 32: the same fact added twice with small edits is linked (reported with the
    older fact's id) by `memo fact add` and by `memo import` of JSONL fact lines."""
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "n.db"))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    rid = _run("add", "Alice: I'm moving to Denver next month for the robotics job.")[1]["record_id"]
    first = _run("fact", "add", "Alice moved to Denver in March 2023 for the robotics team.", "--evidence", rid)[1]
    res = runner.invoke(app, ["fact", "add", "Alice moved to Denver in March 2023 for the robotics group.",
                              "--evidence", rid])
    assert res.exit_code == 0 and res.stdout.startswith("added ")
    assert f"near-identical to fact {first['fact_id']}" in res.stderr
    lines = tmp_path / "facts.jsonl"
    lines.write_text(json.dumps({"type": "fact", "text": "Alice moved to Denver in March 2023, for the robotics team.",
                                 "evidence": [rid]}) + "\n")
    code, doc = _run("import", str(lines), "--no-embed")
    assert code == 0 and doc["facts_added"] == 1
    (near,) = doc["facts_near_duplicates"]
    assert near["near_duplicate_of"] == first["fact_id"] and near["where"].endswith(":1")
    res = runner.invoke(app, ["import", str(lines), "--no-embed"])     # again: the same text and evidence
    assert res.exit_code == 0 and "facts: added 0, skipped 1" in res.stdout
