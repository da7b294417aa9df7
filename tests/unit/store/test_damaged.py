"""Damaged databases (issue 9.7): opening checks the header and the schema version, a
zero-byte file is not a new database, a non-memo database is never given memo's tables,
SQLite's corruption errors come out as StoreCorrupt and mark the file, and a file marked
damaged takes no write."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from memo import ops
from memo.errors import MemoError, StoreCorrupt, StoreError
from memo.ops.add import prepare, store_draft
from memo.ops.doctor import doctor
from memo.search_api import search
from memo.store import connect as connect_mod
from memo.store import migrations
from memo.store.connect import connect, write_tx
from memo.store.damage import check_header, marker_path, read_marker
from memo.store.db import open_db
from memo.stored import RecordDraft

PAGE = 4096


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small memo database (40 records, keyword and exact indexes, no vectors: written
    without the after-commit embedding), checkpointed so the whole state is in the main file."""
    path = tmp_path_factory.mktemp("base") / "base.db"
    conn = open_db(path)
    for i in range(40):
        draft = RecordDraft(body=f"Note {i} about topic{i} and ERR_CODE_{i}.\n\n"
                            + "alpha beta gamma delta " * (3 + i % 5), tags=("t",))
        with write_tx(conn):
            store_draft(conn, draft, prepare(draft), replace_previous=False)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def memo_db(base_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "memo.db"
    shutil.copy(base_db, path)
    return path


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        p = Path(f"{path}{suffix}")
        if p.exists():
            h.update(p.read_bytes())
    return h.hexdigest()


def _quick_check(path: Path) -> list[str]:
    try:
        conn = sqlite3.connect(path)
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")   # a damaged key's bytes
        try:
            return [str(r[0]) for r in conn.execute("PRAGMA quick_check(50)")]
        finally:
            conn.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:    # the message quotes damaged bytes
        return [f"error: {exc}"]


# --- files that are not memo databases ------------------------------------------------------

def test_zero_byte_file_is_not_a_new_database(db_path):
    db_path.touch()
    for write in (True, False):
        with pytest.raises(StoreCorrupt, match="is empty"):
            open_db(db_path, write=write)
    assert db_path.stat().st_size == 0
    assert doctor(db_path).status == "damaged"


def test_a_new_database_is_created_whole(tmp_path):
    path = tmp_path / "sub" / "new.db"
    conn = open_db(path)
    assert migrations.user_version(conn) == migrations.LATEST
    conn.close()
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(path.name)) == []
    raw = connect(tmp_path / "raw.db")   # the factory alone: a one-page WAL database, never 0 bytes
    assert (tmp_path / "raw.db").stat().st_size >= 512 and check_header(tmp_path / "raw.db") is None
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_text_file_is_refused_and_left_alone(db_path):
    db_path.write_text("these are my notes, not a database\n" * 20)
    before = _digest(db_path)
    for write in (True, False):
        # Not damage (issue 32): the wrong file, said so; no "restore a backup" over it.
        with pytest.raises(StoreError, match="is not a memo database: not a SQLite database") as info:
            open_db(db_path, write=write)
        assert not isinstance(info.value, StoreCorrupt)
    assert _digest(db_path) == before


def test_a_non_memo_database_gets_no_memo_tables(db_path):
    other = sqlite3.connect(db_path)
    other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    other.commit()
    other.close()
    for write in (True, False):
        with pytest.raises(StoreError, match="not a memo database"):
            open_db(db_path, write=write)
    check = sqlite3.connect(db_path)
    assert [r[0] for r in check.execute("SELECT name FROM sqlite_schema")] == ["invoices"]
    assert check.execute("PRAGMA journal_mode").fetchone()[0] == "delete"   # not switched to WAL either


def test_user_version_0_with_memo_tables(memo_db):
    conn = sqlite3.connect(memo_db)
    conn.execute("PRAGMA user_version=0")
    conn.close()
    with pytest.raises(StoreCorrupt, match="version number was lost"):
        open_db(memo_db, write=False)
    report = doctor(memo_db)
    assert report.status == "repair" and "match memo schema" in report.findings[0].problem
    # The write path restores it: the tables match one memo version exactly, quick_check ok.
    conn = open_db(memo_db)
    assert migrations.user_version(conn) == migrations.LATEST
    assert ops.add_record(conn, RecordDraft(body="written after the repair")).status == "added"
    assert ops.stats(open_db(memo_db, write=False)).records == 41


def test_user_version_0_with_unprovable_tables_is_refused(memo_db):
    conn = sqlite3.connect(memo_db)
    conn.execute("PRAGMA user_version=0")
    conn.execute("DROP INDEX records_ext")        # no memo version has exactly these objects
    conn.commit()
    conn.close()
    before = _digest(memo_db)
    with pytest.raises(StoreCorrupt, match="cannot be proven"):
        open_db(memo_db)
    assert _digest(memo_db) == before
    assert sqlite3.connect(memo_db).execute("PRAGMA user_version").fetchone()[0] == 0


def test_memo_tables_missing_at_a_current_version(memo_db):
    conn = sqlite3.connect(memo_db)
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("ALTER TABLE passages RENAME TO passages_old")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorrupt, match="passages are missing"):
        open_db(memo_db, write=False)


# --- the header -----------------------------------------------------------------------------

@pytest.mark.parametrize(("offset", "bit", "words"), [
    (0, 0, "not a SQLite database"), (15, 3, "not a SQLite database"),
    (16, 0, "page size"), (17, 4, "page size"), (18, 2, "file format"), (19, 1, "file format"),
    (21, 0, "payload fractions"), (22, 5, "payload fractions"), (47, 4, "schema format"),
    (59, 3, "text encoding"),
])
def test_header_bit_flips_are_refused(memo_db, offset, bit, words, monkeypatch):
    # A process reads a file's header on its first open only (memo.store.connect: reading it
    # later could drop SQLite's locks), keyed by inode: a file of an earlier test deleted
    # since may have had this inode (file systems reuse them), which made this test skip the
    # check now and then.  Each case is a process's first open of its file.
    monkeypatch.setattr(connect_mod, "_HEADER_CHECKED", set())
    data = bytearray(memo_db.read_bytes())
    data[offset] ^= 1 << bit
    memo_db.write_bytes(bytes(data))
    for write in (True, False):
        with pytest.raises(StoreCorrupt, match=words):
            open_db(memo_db, write=write)
    assert memo_db.read_bytes() == bytes(data)


@pytest.mark.slow
def test_every_header_bit_flip_gives_a_memo_error_or_works(base_db, tmp_path):
    """All 800 single-bit flips of the 100-byte header: open, read and write either work
    or raise a MemoError; never a raw sqlite3 error."""
    raw = base_db.read_bytes()
    outcomes: dict[str, int] = {}
    for i in range(800):
        path = tmp_path / f"h{i}.db"
        data = bytearray(raw)
        data[i // 8] ^= 1 << (i % 8)
        path.write_bytes(bytes(data))
        for name, op in (("read", lambda p=path: ops.stats(open_db(p, write=False))),
                         ("write", lambda p=path: ops.add_record(open_db(p), RecordDraft(body="x")))):
            try:
                op()
                outcomes[name + " ok"] = outcomes.get(name + " ok", 0) + 1
            except MemoError as err:
                outcomes[f"{name} {type(err).__name__}"] = outcomes.get(f"{name} {type(err).__name__}", 0) + 1
        path.unlink()
        for suffix in ("-wal", "-shm", "-writer.lock", "-damaged"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    assert outcomes.get("read StoreCorrupt", 0) > 100, outcomes


# --- corruption found while working ---------------------------------------------------------

def _damage_root_page(path: Path, table: str) -> None:
    conn = sqlite3.connect(path)
    root = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    off = (root - 1) * PAGE
    for i in range(8, 40):             # cell pointers of the root page
        data[off + i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corruption_met_by_a_read_marks_the_file_and_refuses_writes(memo_db):
    _damage_root_page(memo_db, "passages")
    with pytest.raises(StoreCorrupt):
        search("topic3 alpha", db=memo_db, services={})
    marker = read_marker(memo_db)
    assert marker is not None and "malformed" in marker["reason"]
    before = _digest(memo_db)
    with pytest.raises(StoreCorrupt, match="writes are refused") as info:
        ops.add_record(open_db(memo_db), RecordDraft(body="must not be written"))
    assert "memo doctor" in info.value.hint
    assert _digest(memo_db) == before
    report = doctor(memo_db)
    assert report.status == "damaged" and report.marker_after == "kept"
    assert any("restore" in f.action for f in report.findings)


def test_a_marker_for_another_file_is_stale(memo_db):
    marker_path(memo_db).write_text(json.dumps({"reason": "old", "at": None, "inode": -1}))
    assert read_marker(memo_db) is None
    assert ops.add_record(open_db(memo_db), RecordDraft(body="fine")).status == "added"


def test_a_database_created_where_a_damaged_one_was_deleted_takes_writes(memo_db):
    """Starting over: the damaged file deleted, memo creates a new one at the path.  The
    marker named the old file by its inode, which the new file may well reuse (file systems
    hand freed inodes out at once); it must not refuse the new database's writes."""
    marker_path(memo_db).write_text(json.dumps({"reason": "damaged", "at": None, "inode": memo_db.stat().st_ino}))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{memo_db}{suffix}").unlink(missing_ok=True)
    conn = open_db(memo_db)
    try:
        assert read_marker(memo_db) is None and not marker_path(memo_db).exists()
        assert ops.add_record(conn, RecordDraft(body="a fresh start")).status == "added"
    finally:
        conn.close()


def test_doctor_clears_the_marker_of_a_healthy_file(memo_db):
    marker_path(memo_db).write_text(json.dumps({"reason": "a transient scare", "at": None,
                                                "inode": memo_db.stat().st_ino}))
    with pytest.raises(StoreCorrupt, match="writes are refused"):
        ops.add_record(open_db(memo_db), RecordDraft(body="refused"))
    report = doctor(memo_db)
    assert report.exit_code == 0 and report.marker_after == "cleared"   # "notice": no vectors yet
    assert ops.add_record(open_db(memo_db), RecordDraft(body="accepted")).status == "added"


def _flip(raw: bytes, rng: random.Random) -> tuple[bytes, int]:
    """One random bit: 70% in the first 100 bytes of a random page (b-tree page headers and
    cell pointers: structure), 30% anywhere."""
    data = bytearray(raw)
    if rng.random() < 0.7:
        pos = rng.randrange(len(data) // PAGE) * PAGE + rng.randrange(100)
    else:
        pos = rng.randrange(len(data))
    data[pos] ^= 1 << rng.randrange(8)
    return bytes(data), pos


def _attempt(op) -> str:
    try:
        op()
        return "ok"
    except MemoError as err:
        return type(err).__name__
    except sqlite3.Error as err:  # the bug this test exists for
        raise AssertionError(f"raw {type(err).__name__}: {err}") from err


def test_100_random_bit_flips(base_db, tmp_path):
    """Every open / search / list / stats / add on a bit-flipped copy works or raises a
    MemoError; once memo has met the damage no write lands; a write that does land never
    makes quick_check worse; after `memo doctor` finds damage, writes are refused."""
    rng = random.Random(20260907)
    raw = base_db.read_bytes()
    tally: dict[str, int] = {}
    for trial in range(100):
        data, pos = _flip(raw, rng)
        path = tmp_path / f"t{trial}" / "memo.db"
        path.parent.mkdir()
        path.write_bytes(data)
        qc_before = _quick_check(path)
        steps = [("open_read", lambda p=path: open_db(p, write=False).close()),
                 ("search", lambda p=path: search("topic3 alpha ERR_CODE_3", db=p, services={})),
                 ("list", lambda p=path: ops.list_records(open_db(p, write=False), ops.ListFilter(limit=100))),
                 ("stats", lambda p=path: ops.stats(open_db(p, write=False)))]
        for name, op in steps:
            result = _attempt(op)
            tally[f"{name} {result}"] = tally.get(f"{name} {result}", 0) + 1
        marked = read_marker(path) is not None
        before = _digest(path)
        draft = RecordDraft(body=f"trial {trial} note")
        result = _attempt(lambda p=path, d=draft: ops.add_record(open_db(p), d))
        tally[f"add {result}"] = tally.get(f"add {result}", 0) + 1
        where = f"trial {trial}, byte {pos}"
        if marked or qc_before != ["ok"]:   # known damage, or damage the check before writing finds
            assert result == "StoreCorrupt", (where, qc_before)
            assert _digest(path) == before, where
        if result == "ok":
            qc_after = _quick_check(path)
            assert qc_before != ["ok"] or qc_after == ["ok"], (where, qc_after)
            assert len(qc_after) <= len(qc_before), (where, qc_before, qc_after)
        report = doctor(path)
        if report.status == "damaged":
            before = _digest(path)
            assert _attempt(lambda p=path: ops.add_record(open_db(p), RecordDraft(body="after doctor"))) != "ok", where
            assert _digest(path) == before, where
        shutil.rmtree(path.parent)
    damaged = sum(v for k, v in tally.items() if k.startswith("add ") and not k.endswith(" ok"))
    assert damaged >= 5, tally   # the flips do hit structure: the test is not vacuous


def test_a_restore_clears_the_mark(memo_db, tmp_path):
    from memo.ops.restore import restore

    backup = tmp_path / "backups" / "b.db"
    ops.backup(open_db(memo_db, write=False), backup)
    _damage_root_page(memo_db, "records")
    with pytest.raises(StoreCorrupt):
        ops.list_records(open_db(memo_db, write=False), ops.ListFilter(limit=100))
    assert read_marker(memo_db) is not None
    restore(backup, memo_db, confirm=True)
    assert read_marker(memo_db) is None
    assert ops.add_record(open_db(memo_db), RecordDraft(body="after the restore")).status == "added"
    assert doctor(memo_db).exit_code == 0


def test_a_schema_whose_damage_is_not_text_is_reported_as_damage(tmp_path):
    """SQLite's error for a damaged schema quotes the damaged name; bytes that are not UTF-8
    made Python raise UnicodeDecodeError, which every command reported as bad input."""
    from memo.errors import StoreError
    from memo.ops.doctor import doctor
    from memo.store.db import open_db

    db = tmp_path / "memo.db"
    conn = open_db(db)
    conn.close()
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA writable_schema=ON")
    raw.execute("UPDATE sqlite_schema SET name = 'tags' || CAST(x'ef28' AS TEXT), sql = 'CREATE TABLE (' "
                "WHERE name = 'record_tags'")
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match="malformed database schema"):
        open_db(db)
    report = doctor(db)
    assert report.status == "damaged" and any("malformed database schema" in f.problem for f in report.findings)
