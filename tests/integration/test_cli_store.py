"""Every store command through typer's CliRunner (in process), plus real `memo` subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.store.dialect import is_db_url
from memo.store.migrations import LATEST
from memo.store.postgres.schema import LATEST as PG_LATEST

runner = CliRunner()


def run(*args: str, input: str | None = None, code: int = 0):
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == code, (result.exit_code, result.output)
    return result


def js(*args: str, input: str | None = None, code: int = 0):
    result = run(*args, "--json", input=input, code=code)
    return json.loads(result.stdout)


@pytest.fixture
def db(backend_db: str) -> str:
    """A SQLite file or a fresh PostgreSQL database: the CLI suite runs on both (issue 17.3)."""
    return backend_db


def test_add_every_field_get_and_list(db):
    doc = js("add", "Use net/http for the server.", "--db", db, "--namespace", "work", "--kind", "doc",
             "--title", "Server", "--source", "wiki", "--library", "go", "--version", "1.22",
             "--tag", "go", "--tag", "http", "--event-date", "2024-05-01", "--trust", "0.7", "--author", "ann")
    assert doc["status"] == "added" and doc["passages"] == 1
    rid = doc["record_id"]
    rec = js("get", rid, "--db", db)
    assert (rec["namespace"], rec["kind"], rec["title"], rec["source"], rec["library"], rec["version"]) == \
        ("work", "doc", "Server", "wiki", "go", "1.22")
    assert rec["tags"] == ["go", "http"] and rec["event_at"] == "2024-05-01" and rec["trust"] == 0.7
    assert rec["author"] == "ann" and rec["passages"][0]["id"] == f"{rid}:0"
    assert "net/http" in run("get", rid, "--db", db).stdout
    listed = js("list", "--db", db, "--tag", "go", "--kind", "doc")
    assert listed["count"] == 1 and listed["records"][0]["id"] == rid
    assert js("list", "--db", db, "--namespace", "other")["count"] == 0
    assert rid in run("list", "--db", db).stdout


def test_add_from_stdin_and_duplicate(db):
    a = js("add", "--db", db, input="piped text\n")
    b = js("add", "-", "--db", db, input="piped text")
    assert a["status"] == "added" and b["status"] == "skipped" and b["record_id"] == a["record_id"]
    assert "same text already stored" in run("add", "piped text", "--db", db).stdout


def test_errors_map_to_exit_codes_and_one_line(db):
    r = run("add", "x", "--kind", "blog", "--db", db, code=2)
    assert r.stderr.startswith("error: kind 'blog'") and r.stderr.count("\n") == 1
    err = js("add", "x", "--trust", "3", "--db", db, code=2)
    assert err["error"] == "ValidationError" and err["hint"]
    js("add", "seed", "--db", db)
    assert js("get", "missing", "--db", db, code=3)["error"] == "NotFound"
    r = run("get", "missing", "--db", str(Path(db).with_name("none.db")), code=6)
    assert "no database" in r.stderr


def test_supersede_forget_purge(db):
    rid = js("add", "version one", "--db", db, "--tag", "t")["record_id"]
    sup = js("supersede", rid, "version two", "--db", db)
    assert sup["old_id"] == rid
    assert js("list", "--db", db)["count"] == 1
    assert js("list", "--db", db, "--include-superseded")["count"] == 2
    other = js("add", "another", "--db", db)["record_id"]
    err = js("forget", sup["new_id"], other, "--db", db, code=4)
    assert err["error"] == "ConfirmationRequired"
    assert js("forget", sup["new_id"], other, "--yes", "--db", db)["forgotten"] == [sup["new_id"], other]
    assert js("list", "--db", db)["count"] == 0
    assert js("list", "--db", db, "--include-forgotten")["count"] == 2
    assert js("purge", "--db", db, code=4)["error"] == "ConfirmationRequired"
    assert js("purge", "--yes", "--db", db)["records"] == 2
    assert js("list", "--db", db, "--include-forgotten", "--include-superseded")["count"] == 1


def test_import_stats_reindex_backup(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n## B\ntext about ERR_CONN_RESET\n")
    (root / "c.py").write_text('def f():\n    """Docstring."""\n')
    (root / "bad.md").write_bytes(bytes(range(0x80, 0x100)) * 3)     # no encoding decodes it (\xff\xfe alone is a UTF-16 mark)
    rep = js("import", str(root), "--db", db, "--namespace", "kb", code=5)
    assert (rep["added"], rep["skipped"], len(rep["rejected"])) == (2, 0, 1)
    assert rep["rejected"][0]["path"] == "bad.md"
    (root / "bad.md").unlink()
    r = run("import", str(root), "--db", db, "--namespace", "kb")
    assert "added 0, updated 0, skipped 2, rejected 0" in r.stdout
    st = js("stats", "--db", db)
    latest = PG_LATEST if is_db_url(db) else LATEST       # each backend numbers its own migrations
    assert st["live"] == 2 and st["by_namespace"] == {"kb": 2} and st["schema_version"] == latest
    assert "records" in run("stats", "--db", db).stdout
    ri = js("reindex", "--db", db)
    assert ri["passages"] == 2 and "memo backfill" in ri["vectors"]
    if is_db_url(db):   # a server database is backed up with the server's tools
        doc = js("doctor", "--db", db)      # the server's checks: schema, keyword index (memo.ops.doctor_pg)
        assert doc["status"] == "ok" and {c["name"]: c["ok"] for c in doc["checks"]}["fts"] is True
        err = js("backup", str(tmp_path / "copy.db"), "--db", db, code=2)
        assert err["error"] == "ValidationError" and "pg_dump" in (err["message"] + (err["hint"] or ""))
        return
    bk = js("backup", str(tmp_path / "copy.db"), "--db", db)
    assert bk["integrity"] == "ok" and bk["counts"]["records"] == 2
    assert js("backup", str(tmp_path / "copy.db"), "--db", db, code=2)["error"] == "ValidationError"
    assert "integrity ok" in run("backup", str(tmp_path / "copy.db"), "--force", "--db", db).stdout


def test_import_reports_and_prunes_deleted_files(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("gone.md", "keep.md", "also-gone.md"):
        (root / name).write_text(f"text of {name} about quokkas")
    first = js("import", str(root), "--db", db, "--no-embed")
    assert (first["added"], first["missing"], first["pruned"]) == (3, [], 0)
    ids = {Path(js("get", r, "--db", db)["import_path"]).name: r for r in first["record_ids"]}
    assert js("get", ids["keep.md"], "--db", db)["import_path"] == (root / "keep.md").resolve().as_posix()
    (root / "gone.md").unlink()
    (root / "also-gone.md").unlink()
    out = run("import", str(root), "--db", db, "--no-embed", "--no-progress").stdout
    assert f"2 imported files are gone from {root} (their records are still searchable; " \
           "re-run with --prune to forget them)" in out
    assert "  gone also-gone.md\n  gone gone.md" in out
    rep = js("import", str(root), "--prune", "--db", db, "--no-embed")
    assert (rep["missing"], rep["pruned"], rep["skipped"]) == (["also-gone.md", "gone.md"], 2, 1)
    assert js("get", ids["gone.md"], "--db", db)["forgotten_at"] is not None
    assert js("get", ids["keep.md"], "--db", db)["forgotten_at"] is None
    hits = js("search", "quokkas", "--mode", "keyword", "--db", db)["results"]
    assert {h["record_id"] for h in hits} == {ids["keep.md"]}
    assert js("import", str(root / "keep.md"), "--prune", "--db", db, code=2)["error"] == "ValidationError"


def test_import_jsonl(db, tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"text": "one", "tags": ["a"], "id": "1"}\n{"text": "two", "kind": "conversation"}\n')
    rep = js("import", str(f), "--db", db)
    assert rep["format"] == "jsonl" and rep["added"] == 2


def test_memo_db_env_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "env.db"))
    js("add", "env text")
    assert (tmp_path / "env.db").exists()


def test_every_store_command_has_help():
    for cmd in ("add", "import", "get", "list", "supersede", "forget", "purge", "stats", "reindex", "backup"):
        out = run(cmd, "--help").stdout
        assert "--json" in out and "--db" in out


def test_real_subprocess(tmp_path):
    exe = Path(sys.executable).with_name("memo")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "memo"]
    env = {**os.environ, "MEMO_DB": str(tmp_path / "sub.db")}
    add = subprocess.run([*cmd, "add", "subprocess note about WAL", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    rid = json.loads(add.stdout)["record_id"]
    got = subprocess.run([*cmd, "get", rid, "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(got.stdout)["body"] == "subprocess note about WAL"
    bad = subprocess.run([*cmd, "forget", rid, "other", "--json"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 4 and json.loads(bad.stdout)["error"] == "ConfirmationRequired"


def test_not_a_database_is_one_line_exit_6(tmp_path):
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    r = run("stats", "--db", str(bad), code=6)
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1


def test_search_hides_forgotten_and_superseded_but_as_of_sees_old_version(db):
    keep = js("add", "the ERR_CONN_RESET fix is to restart", "--db", db)["record_id"]
    gone = js("add", "ERR_CONN_RESET seen in staging", "--db", db)["record_id"]
    old = js("add", "ERR_CONN_RESET note v1", "--db", db)["record_id"]
    old_rec = js("get", old, "--db", db)
    new = js("supersede", old, "ERR_CONN_RESET note v2", "--db", db)["new_id"]
    js("forget", gone, "--db", db)

    def found(*extra):
        doc = js("search", "ERR_CONN_RESET", "--mode", "keyword", "--db", db, *extra)
        return {r["record_id"] for r in doc["results"]}

    assert found() == {keep, new}
    assert found("--as-of", old_rec["recorded_at"]) == {keep, old}
    js("purge", "--db", db)
    assert found() == {keep, new}


def test_import_options_root_max_bytes_kind(db, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "big.md").write_text("x " * 200)
    (root / "chat.txt").write_text("Ann: hello\nBob: hi\n")
    (tmp_path / "out.md").write_text("outside")
    err = js("import", str(tmp_path / "out.md"), "--root", str(root), "--db", db, code=5)
    assert err["error"] == "ImportRejected"
    rep = js("import", str(root), "--root", str(root), "--max-bytes", "100", "--kind", "conversation",
             "--tag", "t", "--author", "me", "--trust", "0.5", "--db", db, code=5)
    assert rep["added"] == 1 and "cap" in rep["rejected"][0]["reason"]
    rec = js("get", rep["record_ids"][0], "--db", db)
    assert rec["kind"] == "conversation" and [p["speaker"] for p in rec["passages"]] == ["Ann", "Bob"]
    assert (rec["tags"], rec["author"], rec["trust"]) == (["t"], "me", 0.5)


def test_stats_text_reads_as_words_not_python(tmp_path):
    db = str(tmp_path / "m.db")
    run("add", "an ops note", "--namespace", "ops", "--db", db)
    run("add", "another ops note", "--namespace", "ops", "--db", db)
    run("add", "a home note", "--namespace", "home", "--db", db)
    out = run("stats", "--db", db).stdout
    assert "{" not in out and "'" not in out, out
    assert "namespaces    ops 2, home 1" in out and "kinds         note 3" in out


def test_format_jsonl_on_a_markdown_file_is_one_error(tmp_path):
    """Issue 32: `--format jsonl` on markdown listed a rejection per line (72 of them)."""
    md = tmp_path / "notes.md"
    md.write_text("# Title\n\n" + "\n".join(f"line {i}" for i in range(72)) + "\n")
    err = js("import", str(md), "--format", "jsonl", "--db", str(tmp_path / "m.db"), code=2)
    assert err["error"] == "ValidationError" and "is not JSONL" in err["message"]


def test_a_closed_pipe_ends_the_listing_quietly(tmp_path):
    """Issue 32: `memo list | head -1` exited 1 with "failed: Broken pipe ... check the path"."""
    src = tmp_path / "many.jsonl"
    src.write_text("".join(json.dumps({"text": f"note number {i} about deploy keys"}) + "\n" for i in range(3000)))
    db = str(tmp_path / "m.db")
    run("import", str(src), "--db", db, "--no-embed", "--no-progress")
    proc = subprocess.Popen([sys.executable, "-m", "memo", "list", "--db", db, "--limit", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()                                   # what `head -1` does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert b"error" not in err and b"Traceback" not in err, err.decode()
