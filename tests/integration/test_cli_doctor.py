"""`memo doctor` through typer's CliRunner: healthy (exit 0), a deleted index row (exit 9,
says reindex; ok after `memo reindex`), a damaged page (exit 10, says restore; writes are
refused), files that are not memo databases, and one real `memo` subprocess."""

from __future__ import annotations

import json
import os
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
    assert list(_checks(doc)) == ["header", "open", "schema", "quick_check", "indexes", "fts", "counts",
                                  "foreign_keys"]
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


@pytest.mark.parametrize(("content", "words", "error"), [(b"", "empty", "StoreCorrupt"),
                                                    (b"plain text notes\n" * 20, "not a SQLite", "StoreError")])
def test_files_that_are_not_databases(tmp_path, content, words, error):
    path = tmp_path / "x.db"
    path.write_bytes(content)
    doc = js("doctor", "--db", str(path), code=EXIT_DAMAGED)
    assert words in doc["findings"][0]["problem"]
    assert _checks(doc)["header"] is False and _checks(doc)["quick_check"] is None
    err = js("add", "note", "--db", str(path), code=6)
    assert err["error"] == error and words in err["message"]
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


# --- indexes that disagree with their tables (issue 33.2) -----------------------------------

def _flip_index_key(db: str, index: str, column: str) -> str:
    """Change one byte of one key in ``index`` (on disk, as bit rot would): the entry now
    points nowhere its table agrees with.  quick_check still says ok.  Returns the row's
    id."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root, table = conn.execute("SELECT rootpage, tbl_name FROM sqlite_schema WHERE name = ?", (index,)).fetchone()
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    rid, value = conn.execute(f"SELECT id, {column} FROM {table} ORDER BY rowid LIMIT 1 OFFSET 3").fetchone()
    conn.close()
    data = bytearray(Path(db).read_bytes())
    start = (root - 1) * page
    at = bytes(data[start:start + page]).find(str(value).encode())
    assert at >= 0, "the key is on the index's root page of a small database"
    pos = start + at + len(str(value)) - 1
    data[pos] = ord("0") if data[pos] != ord("0") else ord("1")
    Path(db).write_bytes(bytes(data))
    check = sqlite3.connect(db)
    assert check.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert check.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
    check.close()
    return rid


def _flip_fts_block(db: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    rowid, block = conn.execute("SELECT id, block FROM passages_fts_data ORDER BY length(block) DESC LIMIT 1").fetchone()
    block = bytearray(block)
    block[len(block) // 2] ^= 0x20
    conn.execute("UPDATE passages_fts_data SET block = ? WHERE id = ?", (bytes(block), rowid))
    conn.close()


def _live_copies(db: str, text_like: str) -> int:
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT count(*) FROM records NOT INDEXED WHERE forgotten_at IS NULL AND body LIKE ?",
                     (text_like,)).fetchone()[0]
    conn.close()
    return n


NOTE_3 = "# Note 3\n\nThe deploy step 3 uses ERR_CONN_RESET handling and retries."


def test_a_flipped_byte_in_the_dedup_index_refuses_writes_until_reindex(db):
    _flip_index_key(db, "records_dedup", "content_hash")
    # The write path's open check sees it: no second live copy of an existing text.
    err = js("add", NOTE_3, "--db", db, code=6)
    assert err["error"] == "StoreCorrupt" and "records_dedup" in err["message"]
    assert "memo reindex" in err["hint"]
    assert _live_copies(db, "%deploy step 3 %") == 1
    doc = js("doctor", "--db", db, code=EXIT_REPAIR)
    assert _checks(doc)["quick_check"] is True and _checks(doc)["indexes"] is False
    assert [f["action"] for f in doc["findings"] if f["severity"] != "notice"] and \
        all("memo reindex" in f["action"] for f in doc["findings"] if f["severity"] != "notice")
    assert doc["marker_after"] in ("set", "kept")
    assert js("add", "an unrelated new note", "--db", db, code=6)["error"] == "StoreCorrupt"
    rep = js("reindex", "--db", db)
    assert rep["damaged_marker"] == "cleared" and not Path(f"{db}-damaged").exists()
    assert js("doctor", "--full", "--db", db)["exit_code"] == 0
    assert js("add", NOTE_3, "--db", db)["status"] == "skipped"
    assert _live_copies(db, "%deploy step 3 %") == 1


def test_a_flipped_byte_in_the_primary_key_index_says_reindex_not_restore(db):
    rid = _flip_index_key(db, "sqlite_autoindex_records_1", "id")
    assert js("get", rid, "--db", db, code=3)["error"] == "NotFound"    # what the damage does
    doc = js("doctor", "--db", db, code=EXIT_REPAIR)
    assert doc["status"] == "repair"
    assert not any("memo restore" in f["action"] for f in doc["findings"]), doc["findings"]
    assert any("sqlite_autoindex_records_1" in f["problem"] for f in doc["findings"])
    run("reindex", "--db", db)
    assert js("get", rid, "--db", db)["id"] == rid
    assert js("doctor", "--full", "--db", db)["exit_code"] == 0


@pytest.mark.parametrize("where", ["passages_record", "fts"])
def test_doctor_full_finds_other_index_damage_and_reindex_repairs_it(db, where):
    if where == "fts":
        _flip_fts_block(db)
    else:
        _flip_index_key(db, "passages_record", "record_id")
    doc = js("doctor", "--full", "--db", db, code=EXIT_REPAIR)
    assert doc["status"] == "repair" and "integrity_check" in _checks(doc)
    assert all("memo reindex" in f["action"] for f in doc["findings"] if f["severity"] == "repair")
    run("reindex", "--db", db)
    assert js("doctor", "--full", "--db", db)["exit_code"] == 0


# --- paths that are not memo databases (issues 32, 33.5) ------------------------------------

def test_dev_null_is_refused_without_creating_a_journal():
    before = set(Path("/dev").iterdir())
    for args in (("stats",), ("add", "x"), ("search", "x"), ("doctor",)):
        err = js(*args, "--db", "/dev/null", code=6)
        assert "character device" in err["message"] and "not a memo database" in err["message"]
        assert "restore" not in err["hint"]
    assert not Path("/dev/null-journal").exists() and set(Path("/dev").iterdir()) == before


def test_a_folder_and_a_fifo_are_not_memo_databases(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, words in ((tmp_path, "is a folder"), (fifo, "named pipe")):
        for args in (("stats",), ("add", "x"), ("doctor",)):
            err = js(*args, "--db", str(path), code=6)
            assert words in err["message"] and "not a memo database" in err["message"], err
            assert "restore" not in err["hint"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.parametrize("content", [b"plain text notes\n" * 20, b"short\n"])
def test_a_text_file_is_not_a_memo_database(tmp_path, content):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    err = js("stats", "--db", str(path), code=6)
    assert err["error"] == "StoreError" and "not a memo database" in err["message"] and "text" in err["message"]
    doc = js("doctor", "--db", str(path), code=EXIT_DAMAGED)
    assert "not a memo database" in doc["findings"][0]["problem"]
    assert doc["findings"][0]["action"].startswith("pass --db")
    assert doc["marker_after"] == "none" and path.read_bytes() == content


def test_a_damaged_dedup_index_refuses_the_write_on_a_file_of_any_size(db, monkeypatch):
    """The probe's case: above the open check's 64 MiB (here: the check turned off) a
    damaged records_dedup let `memo add` store a second live copy.  The write cross-checks
    the plain records_hash index and is refused; reindex repairs."""
    monkeypatch.setenv("MEMO_OPEN_CHECK_MB", "0")
    _flip_index_key(db, "records_dedup", "content_hash")
    err = js("add", NOTE_3, "--db", db, code=6)
    assert err["error"] == "StoreCorrupt" and "records_dedup" in err["message"] and "memo reindex" in err["hint"]
    assert _live_copies(db, "%deploy step 3 %") == 1
    assert Path(f"{db}-damaged").exists()
    assert js("reindex", "--db", db)["damaged_marker"] == "cleared"
    assert js("add", NOTE_3, "--db", db)["status"] == "skipped"


def test_reindex_forgets_second_copies_stored_while_the_dedup_index_was_damaged(db):
    """A file damaged under an older memo may already hold two live copies: REINDEX of the
    UNIQUE index fails on them.  reindex forgets every copy but the oldest (a soft delete)
    and rebuilds, instead of leaving restore as the only way out."""
    conn = sqlite3.connect(db, isolation_level=None)
    row = conn.execute("SELECT * FROM records WHERE forgotten_at IS NULL ORDER BY rowid LIMIT 1").fetchone()
    cols = [d[0] for d in conn.execute("SELECT * FROM records LIMIT 0").description]
    conn.execute("DROP INDEX records_dedup")           # what the damage amounted to
    copy = dict(zip(cols, row, strict=True))
    copy["id"] = copy["id"] + "x"
    copy["recorded_at"] = "2099-01-01T00:00:00.000000Z"
    conn.execute(f"INSERT INTO records({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                 [copy[c] for c in cols])
    conn.execute("CREATE INDEX records_dedup ON records(namespace, content_hash) WHERE forgotten_at IS NULL")
    conn.close()
    _make_dedup_unique_again(db)
    rep = js("reindex", "--db", db)
    assert rep["damaged_marker"] in ("none", "cleared")
    conn = sqlite3.connect(db)
    live = conn.execute("SELECT id FROM records WHERE content_hash = ? AND forgotten_at IS NULL",
                        (copy["content_hash"],)).fetchall()
    forgotten = conn.execute("SELECT forgotten_at FROM records WHERE id = ?", (copy["id"],)).fetchone()[0]
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'records_dedup'").fetchone()[0]
    conn.close()
    assert [r[0] for r in live] == [row[cols.index("id")]] and forgotten is not None
    assert sql.startswith("CREATE UNIQUE INDEX")
    assert js("doctor", "--full", "--db", db)["exit_code"] == 0


def _make_dedup_unique_again(db: str) -> None:
    """Put memo's UNIQUE definition back over the plain index without checking the rows
    (writable_schema: the state a damaged UNIQUE index leaves behind)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_schema SET sql = replace(sql, 'CREATE INDEX', 'CREATE UNIQUE INDEX') "
                 "WHERE name = 'records_dedup'")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.close()
