"""Issue 9.2: `memo backup` never destroys a live database's files; `memo restore` swaps in a
verified copy through SQLite, safe while other connections are open."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from memo import ops
from memo.errors import (
    ConfirmationRequired,
    MemoError,
    SchemaTooNew,
    StoreCorrupt,
    ValidationError,
)
from memo.ops import maintenance
from memo.store.connect import connect, write_tx
from memo.store.db import open_db
from memo.store.derived import bump_vectors_epoch
from memo.store.mentions import bump_mentions_epoch
from memo.store.migrations import LATEST
from memo.stored import RecordDraft

# Backup and restore copy SQLite files (online backup API, -wal/-shm, page size, locks); on
# PostgreSQL they refuse with a pointer to pg_dump (test_ops_maintenance.py).
pytestmark = pytest.mark.sqlite_only


def _add(conn, n: int, prefix: str) -> list[str]:
    return [ops.add_record(conn, RecordDraft(body=f"{prefix} note {i} about quokkas", tags=(prefix,))).record_id
            for i in range(n)]


def _snapshot(path: Path) -> dict[str, list[tuple]]:
    """Canonical rows of a database, read by a fresh connection."""
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {
            "records": [tuple(r) for r in conn.execute("SELECT * FROM records ORDER BY id")],
            "record_tags": [tuple(r) for r in conn.execute("SELECT * FROM record_tags ORDER BY record_id, tag")],
            "passages": [tuple(r) for r in conn.execute("SELECT * FROM passages ORDER BY pk")],
            "vectors": [tuple(r) for r in conn.execute("SELECT seq, passage_pk, model_id FROM vectors ORDER BY seq")],
            "keyword": [r[0] for r in conn.execute(
                "SELECT rowid FROM passages_fts WHERE passages_fts MATCH 'quokkas' ORDER BY rowid")],
        }
    finally:
        conn.close()


def _ids(path: Path) -> set[str]:
    conn = connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM records")}
    finally:
        conn.close()


def _strays(folder: Path) -> list[str]:
    """Temporary files a backup or restore must never leave behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- backup refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal", "-writer.lock"])
def test_backup_onto_the_databases_sidecar_is_refused_and_acknowledged_writes_survive(db_path, suffix):
    """The data-loss bug: `memo backup DB-wal --force` unlinked the live -wal.  Written first
    and run against the old code: -wal lost every later write (disk I/O error), -shm was
    silently accepted."""
    writer = open_db(db_path)
    ids = _add(writer, 20, "ack")
    reader = open_db(db_path, write=False)
    refused = None
    try:
        ops.backup(reader, f"{db_path}{suffix}", overwrite=True)
    except MemoError as err:
        refused = err
    ids += _add(writer, 5, "after")          # the writer goes on after the attempt
    assert _ids(db_path) == set(ids)          # every acknowledged write is still there
    fresh = connect(db_path)
    assert fresh.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    fresh.close()
    assert isinstance(refused, ValidationError) and f"{suffix} file" in str(refused)
    assert refused.exit_code == 2 and refused.hint
    writer.close()
    reader.close()


def test_backup_refuses_the_database_itself_also_through_symlink_and_hard_link(fresh_db, db_path, tmp_path):
    _add(fresh_db, 3, "a")
    link = tmp_path / "link.db"
    link.symlink_to(db_path)
    hard = tmp_path / "hard.db"
    os.link(db_path, hard)
    for dest in (db_path, link, hard, tmp_path / "sub" / ".." / "memo.db"):
        with pytest.raises(ValidationError, match="is the database itself"):
            ops.backup(fresh_db, dest, overwrite=True)
    wal_link = tmp_path / "wal-link"
    wal_link.symlink_to(f"{db_path}-wal")
    with pytest.raises(ValidationError, match="-wal file"):
        ops.backup(fresh_db, wal_link, overwrite=True)
    assert len(_ids(db_path)) == 3


def test_backup_refuses_another_databases_sidecar_and_a_folder(fresh_db, tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
    for suffix in ("-wal", "-shm", "-journal"):
        with pytest.raises(ValidationError, match=f"is the {suffix} file of the SQLite database"):
            ops.backup(fresh_db, f"{other}{suffix}", overwrite=True)
    folder = tmp_path / "backups"
    folder.mkdir()
    with pytest.raises(ValidationError, match="is a folder: give a file path inside it") as exc:
        ops.backup(fresh_db, folder, overwrite=True)
    assert str(folder / "memo-backup.db") in exc.value.hint
    assert list(folder.iterdir()) == []


def test_backup_refuses_a_memo_database_another_connection_has_open_even_with_force(fresh_db, tmp_path):
    _add(fresh_db, 2, "src")
    other_path = tmp_path / "other.db"
    other = open_db(other_path)
    theirs = _add(other, 4, "theirs")
    with pytest.raises(ValidationError, match="in use or not closed cleanly") as exc:
        ops.backup(fresh_db, other_path, overwrite=True)
    assert "--force does not override" in exc.value.hint
    theirs += _add(other, 1, "later")
    assert _ids(other_path) == set(theirs)
    other.close()
    # Closed cleanly (no sidecars left): now it is an ordinary file that --force replaces.
    assert ops.backup(fresh_db, other_path, overwrite=True).counts["records"] == 2


def test_backup_refuses_leftover_sidecars_and_a_locked_rollback_database(fresh_db, tmp_path):
    dest = tmp_path / "new.db"
    Path(f"{dest}-wal").write_bytes(b"stale")    # would be replayed onto the new copy
    with pytest.raises(ValidationError, match="new.db-wal beside it"):
        ops.backup(fresh_db, dest)
    assert not dest.exists()
    locked = tmp_path / "rollback.db"
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(ValidationError):
        ops.backup(fresh_db, locked, overwrite=True)
    holder.execute("COMMIT")
    holder.close()


def test_backup_refuses_a_folder_it_cannot_create_or_write(fresh_db, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValidationError, match="cannot create the folder"):
        ops.backup(fresh_db, blocker / "sub" / "copy.db")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            with pytest.raises(ValidationError, match="cannot write in the folder"):
                ops.backup(fresh_db, ro / "copy.db")
        finally:
            ro.chmod(0o755)


def test_backup_over_an_existing_file_is_atomic(fresh_db, tmp_path, monkeypatch):
    _add(fresh_db, 3, "a")
    folder = tmp_path / "bk"
    folder.mkdir()
    dest = folder / "copy.db"
    dest.write_bytes(b"precious old backup")
    with pytest.raises(ValidationError, match="already exists"):
        ops.backup(fresh_db, dest)
    real_verify = maintenance.verify_copy
    monkeypatch.setattr(maintenance, "verify_copy", lambda p: ("*** page 3 damaged", real_verify(p)[1]))
    with pytest.raises(StoreCorrupt, match="failed verification"):
        ops.backup(fresh_db, dest, overwrite=True)
    assert dest.read_bytes() == b"precious old backup"      # a failed backup destroys nothing
    assert sorted(p.name for p in folder.iterdir()) == ["copy.db"]
    monkeypatch.setattr(maintenance, "verify_copy", real_verify)
    rep = ops.backup(fresh_db, dest, overwrite=True)
    assert rep.integrity == "ok" and rep.counts["records"] == 3 and rep.path == str(dest)
    assert sorted(p.name for p in folder.iterdir()) == ["copy.db"]
    assert len(_ids(dest)) == 3


def test_backup_through_a_symlink_replaces_the_target(fresh_db, tmp_path):
    _add(fresh_db, 1, "a")
    target = tmp_path / "real.db"
    target.write_bytes(b"old")
    link = tmp_path / "latest.db"
    link.symlink_to(target)
    rep = ops.backup(fresh_db, link, overwrite=True)
    assert link.is_symlink() and rep.path == str(target) and len(_ids(target)) == 1


# -- restore ---------------------------------------------------------------------------------


def test_restore_round_trip_keeps_a_safety_copy(fresh_db, db_path, tmp_path):
    first = _add(fresh_db, 5, "first")
    bk = tmp_path / "bk" / "memo.backup.db"
    ops.backup(fresh_db, bk)
    backed_up = _snapshot(bk)
    later = _add(fresh_db, 3, "later")
    ops.forget(fresh_db, first[:2], confirm=True)
    before = _snapshot(db_path)
    with pytest.raises(ConfirmationRequired):
        ops.restore(bk, db_path)
    assert _snapshot(db_path) == before
    rep = ops.restore(bk, db_path, confirm=True)
    assert rep.method == "sqlite-backup" and rep.integrity == "ok" and rep.counts["records"] == 5
    assert rep.schema_version == rep.backup_schema_version == LATEST
    assert _snapshot(db_path) == backed_up
    assert _ids(db_path) == set(first)
    previous = Path(rep.previous)
    assert previous.name.startswith("memo.db.before-restore-") and rep.previous_integrity == "ok"
    assert _snapshot(previous) == before and set(later) <= _ids(previous)
    assert _strays(tmp_path) == [] and _strays(bk.parent) == []
    # The backup file is read, never written: no sidecars appear beside it.
    assert sorted(p.name for p in bk.parent.iterdir()) == ["memo.backup.db"]
    # The live connection still works and writes on top of the restored state.
    more = _add(fresh_db, 1, "more")
    assert _ids(db_path) == set(first) | set(more)


def test_restore_while_another_connection_is_open(fresh_db, db_path, tmp_path):
    base = _add(fresh_db, 4, "base")
    bk = tmp_path / "b.db"
    ops.backup(fresh_db, bk)
    other = open_db(db_path)               # e.g. a running memo-mcp server
    extra = _add(other, 3, "extra")
    assert len(ops.list_records(other)) == 7
    in_tx = open_db(db_path, write=False)  # a reader in the middle of a read transaction
    in_tx.execute("BEGIN")
    assert in_tx.execute("SELECT count(*) FROM records").fetchone()[0] == 7
    rep = ops.restore(bk, db_path, confirm=True, keep_previous=False)
    assert rep.previous is None and rep.counts["records"] == 4
    assert in_tx.execute("SELECT count(*) FROM records").fetchone()[0] == 7   # its snapshot holds
    in_tx.execute("COMMIT")
    assert in_tx.execute("SELECT count(*) FROM records").fetchone()[0] == 4   # then it sees the restore
    assert {r.id for r in ops.list_records(other)} == set(base)
    after = _add(other, 2, "after")        # and the open connection keeps writing safely
    assert _ids(db_path) == set(base) | set(after) and not set(extra) & _ids(db_path)
    check = connect(db_path)
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert check.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'quokkas'").fetchone()[0] == 6
    for c in (other, in_tx, check):
        c.close()
    assert _strays(tmp_path) == []


def test_restore_verifies_the_live_database_before_any_writer_gets_in(fresh_db, db_path, tmp_path, monkeypatch):
    """The row counts are checked against the backup while the restore still holds the
    writers' queue: a writer waiting in it would otherwise commit the moment it is
    released, and its rows would fail the check (CI saw exit 6 under a concurrent writer)."""
    import sys

    restore_mod = sys.modules["memo.ops.restore"]
    from memo.store import write_queue

    _add(fresh_db, 3, "base")
    bk = tmp_path / "b.db"
    ops.backup(fresh_db, bk)
    _add(fresh_db, 2, "extra")
    held_during_verify: list[bool] = []
    real = restore_mod._verify_live

    def verify(conn, live, *a, **k):
        held_during_verify.append(str(Path(live).resolve()) in {str(Path(p).resolve())
                                                                 for p in getattr(write_queue._held, "paths", set())})
        return real(conn, live, *a, **k)

    monkeypatch.setattr(restore_mod, "_verify_live", verify)
    rep = ops.restore(bk, db_path, confirm=True, keep_previous=False)
    assert rep.counts["records"] == 3
    assert held_during_verify == [True]


def test_restore_gives_epochs_neither_database_held(fresh_db, db_path, tmp_path):
    """Vector matrices and mention graphs of other processes reload after a restore: its
    epochs are fresh ones, neither the live database's nor the backup's (memo.store.epochs)."""
    def held():
        return dict(fresh_db.execute("SELECT key, value FROM memo_meta WHERE key IN "
                                     "('vectors_epoch', 'mentions_epoch')").fetchall())

    _add(fresh_db, 2, "a")
    bk = tmp_path / "b.db"
    ops.backup(fresh_db, bk)
    backup = held()
    with write_tx(fresh_db):
        bump_vectors_epoch(fresh_db)
        bump_mentions_epoch(fresh_db)
    live = held()
    assert live["vectors_epoch"] != backup["vectors_epoch"] and live["mentions_epoch"] != backup["mentions_epoch"]
    ops.restore(bk, db_path, confirm=True)
    after = held()
    for key in ("vectors_epoch", "mentions_epoch"):
        assert after[key] not in (live[key], backup[key]), key


def _bad_backups(tmp_path: Path, good: Path) -> dict[str, tuple[Path, type, str]]:
    plain = tmp_path / "notes.txt"
    plain.write_text("not a database at all " * 50)
    corrupt = tmp_path / "corrupt.db"
    data = bytearray(good.read_bytes())
    page = 4096
    assert len(data) >= 4 * page
    for p in range(1, len(data) // page):           # every page but the first: the header stays valid
        data[p * page + 8: p * page + 8 + 200] = os.urandom(200)
    corrupt.write_bytes(bytes(data))
    too_new = tmp_path / "new.db"
    too_new.write_bytes(good.read_bytes())
    c = sqlite3.connect(too_new)
    c.execute(f"PRAGMA user_version={LATEST + 1}")
    c.close()
    foreign = tmp_path / "foreign.db"
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE t(x)")
    c.close()
    return {"plain": (plain, ValidationError, "is not a SQLite database"),
            "corrupt": (corrupt, StoreCorrupt, "is damaged"),
            "too_new": (too_new, SchemaTooNew, f"schema v{LATEST + 1}, newer than this memo"),
            "foreign": (foreign, ValidationError, "is not a memo database"),
            "missing": (tmp_path / "nope.db", ValidationError, "no backup file"),
            "folder": (tmp_path, ValidationError, "is a folder")}


def test_restore_refuses_bad_backups_and_leaves_the_live_database_untouched(fresh_db, db_path, tmp_path):
    _add(fresh_db, 40, "live")
    bk_dir = tmp_path / "bks"
    good = bk_dir / "good.db"
    ops.backup(fresh_db, good)
    before = _snapshot(db_path)
    for name, (path, err, msg) in _bad_backups(bk_dir, good).items():
        with pytest.raises(err, match=msg) as exc:
            ops.restore(path, db_path, confirm=True)
        assert exc.value.hint, name
        assert _snapshot(db_path) == before, name
        assert not list(tmp_path.glob("memo.db.before-restore-*")), name
        assert _strays(tmp_path) == [], name


def test_restore_into_a_missing_or_unreadable_database(fresh_db, tmp_path):
    ids = _add(fresh_db, 3, "a")
    bk = tmp_path / "b.db"
    ops.backup(fresh_db, bk)
    new = tmp_path / "new" / "memo.db"
    rep = ops.restore(bk, new, confirm=True)
    assert rep.method == "new-file" and rep.previous is None and _ids(new) == set(ids)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00garbage" * 1000)
    rep = ops.restore(bk, garbage, confirm=True)
    assert rep.method == "replace" and _ids(garbage) == set(ids)
    assert Path(rep.previous).read_bytes() == b"\x00garbage" * 1000
    assert _strays(tmp_path) == []


def test_restore_a_backup_with_another_page_size(fresh_db, db_path, tmp_path):
    ids = _add(fresh_db, 3, "a")
    odd = tmp_path / "odd.db"
    raw = sqlite3.connect(odd)
    raw.execute("PRAGMA page_size=8192")
    raw.execute("VACUUM")
    raw.close()
    conn = open_db(odd)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
    theirs = _add(conn, 2, "odd")
    conn.close()
    rep = ops.restore(odd, db_path, confirm=True)
    assert rep.counts["records"] == 2 and _ids(db_path) == set(theirs)
    assert fresh_db.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert set(ids) <= _ids(Path(rep.previous))


def test_restore_refuses_the_database_itself(fresh_db, db_path):
    _add(fresh_db, 1, "a")
    with pytest.raises(ValidationError, match="is the database itself"):
        ops.restore(db_path, db_path, confirm=True)


def test_restore_an_older_schema_migrates_the_copy_not_the_backup(fresh_db, db_path, tmp_path):
    from memo.store.migrations import MIGRATIONS

    _add(fresh_db, 2, "live")
    old = tmp_path / "v1.db"
    raw = sqlite3.connect(old, isolation_level=None)
    raw.execute("BEGIN")
    MIGRATIONS[0](raw)
    raw.execute("INSERT INTO records(id, kind, recorded_at, content_hash, body) VALUES ('r1', 'note', 'now', 'h', 'b')")
    raw.execute("PRAGMA user_version=1")
    raw.execute("COMMIT")
    raw.close()
    original = old.read_bytes()
    rep = ops.restore(old, db_path, confirm=True)
    assert (rep.backup_schema_version, rep.schema_version) == (1, LATEST)
    assert _ids(db_path) == {"r1"} and old.read_bytes() == original
