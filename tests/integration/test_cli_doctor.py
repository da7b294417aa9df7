"""`memo doctor` through typer's CliRunner: healthy (exit 0), a deleted index row (exit 9,
says reindex; ok after `memo reindex`), a damaged page (exit 10, says restore; writes are
refused), files that are not memo databases, and one real `memo` subprocess."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.ops.doctor import EXIT_DAMAGED, EXIT_REPAIR

runner = CliRunner()


def run(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result


def js(*args: str, code: int = 0):
    return json.loads(run(*args, "--json", code=code).stdout)


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "doc.db")
    for i in range(12):
        run("add", f"# Note {i}\n\nThe deploy step {i} uses ERR_CONN_RESET handling and retries.", "--db", path)
    return path


def _checks(doc: dict) -> dict[str, bool | None]:
    return {c["name"]: c["ok"] for c in doc["checks"]}


def test_doctor_on_a_healthy_database(db):
    doc = js("doctor", "--db", db)
    assert doc["status"] in ("ok", "notice") and doc["exit_code"] == 0   # notice: vectors may be pending
    assert all(doc_ok for doc_ok in _checks(doc).values())
    assert list(_checks(doc)) == ["header", "open", "schema", "quick_check", "fts", "counts", "foreign_keys"]
    assert doc["counts"]["passages"] == doc["counts"]["keyword_rows"] == doc["counts"]["exact_rows"] == 12
    assert all(f["severity"] == "notice" for f in doc["findings"])
    text = run("doctor", "--db", db).stdout
    assert "quick_check" in text and "status: " in text


def test_a_deleted_index_row_says_reindex_and_reindex_fixes_it(db):
    conn = sqlite3.connect(db, isolation_level=None)
    pk, text, section = conn.execute("SELECT pk, text, section FROM passages ORDER BY pk LIMIT 1").fetchone()
    conn.execute("INSERT INTO passages_fts(passages_fts, rowid, text, section) VALUES ('delete', ?, ?, ?)",
                 (pk, text, section))
    conn.execute("DELETE FROM exact_fts WHERE rowid = ?", (pk + 1,))
    conn.close()
    doc = js("doctor", "--db", db, code=EXIT_REPAIR)
    assert doc["status"] == "repair"
    repairs = [f for f in doc["findings"] if f["severity"] == "repair"]
    assert repairs and all("memo reindex" in f["action"] for f in repairs)
    assert {f["check"] for f in repairs} >= {"fts", "counts"}
    assert "memo reindex" in run("doctor", "--db", db, code=EXIT_REPAIR).stdout
    run("reindex", "--db", db)
    doc = js("doctor", "--db", db)
    assert doc["exit_code"] == 0 and all(_checks(doc).values())


def test_a_damaged_page_says_restore_and_refuses_writes(db):
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'records'").fetchone()[0]
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(Path(db).read_bytes())
    for i in range(8, 40):
        data[(root - 1) * page + i] ^= 0xFF
    Path(db).write_bytes(bytes(data))
    doc = js("doctor", "--db", db, code=EXIT_DAMAGED)
    assert doc["status"] == "damaged" and _checks(doc)["quick_check"] is False
    assert any("memo restore" in f["action"] for f in doc["findings"] if f["severity"] == "damaged")
    assert doc["marker_after"] == "set" and Path(f"{db}-damaged").exists()
    err = js("add", "one more note", "--db", db, code=6)
    assert err["error"] == "StoreCorrupt" and "writes are refused" in err["message"]
    assert "memo doctor" in err["hint"]
    assert Path(db).read_bytes() == bytes(data)


@pytest.mark.parametrize(("content", "words"), [(b"", "empty"), (b"plain text notes\n" * 20, "not a SQLite")])
def test_files_that_are_not_databases(tmp_path, content, words):
    path = tmp_path / "x.db"
    path.write_bytes(content)
    doc = js("doctor", "--db", str(path), code=EXIT_DAMAGED)
    assert words in doc["findings"][0]["problem"]
    assert _checks(doc)["header"] is False and _checks(doc)["quick_check"] is None
    err = js("add", "note", "--db", str(path), code=6)
    assert err["error"] == "StoreCorrupt" and words in err["message"]
    assert path.read_bytes() == content


def test_another_programs_database(tmp_path):
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    doc = js("doctor", "--db", str(path), code=EXIT_DAMAGED)
    assert "not a memo database" in doc["findings"][0]["problem"] and doc["marker_after"] == "none"
    err = js("add", "note", "--db", str(path), code=6)
    assert "not a memo database" in err["message"]
    assert not Path(f"{path}-damaged").exists()


def test_no_database(tmp_path):
    err = js("doctor", "--db", str(tmp_path / "none.db"), code=6)
    assert err["error"] == "StoreError" and "no database" in err["message"]


def test_doctor_subprocess_exit_code(db):
    proc = subprocess.run([sys.executable, "-m", "memo", "doctor", "--db", db, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["exit_code"] == 0
