"""Migrations: gated by user_version, all in one BEGIN IMMEDIATE, never on the read path
(tobi/qmd #925)."""

import pytest

from memo.errors import SchemaTooNew, StoreError
from memo.store import db as db_mod
from memo.store import migrations
from memo.store.connect import connect
from memo.store.db import default_db_path, open_db


def _traced(monkeypatch):
    statements: list[str] = []

    def traced_connect(path, **kw):
        conn = connect(path, **kw)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(db_mod, "connect", traced_connect)
    return statements


def test_fresh_db_is_migrated_to_latest(db_path):
    conn = open_db(db_path)
    assert migrations.user_version(conn) == migrations.LATEST >= 1
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"records", "record_tags", "passages", "passages_fts", "exact_fts", "vectors", "memo_meta"} <= names


def test_migration_runs_in_one_immediate_transaction(db_path, monkeypatch):
    statements = _traced(monkeypatch)
    open_db(db_path)
    body = [s for s in statements if not s.startswith(("PRAGMA", "SELECT"))]  # reads: the checks at open
    assert body[0] == "BEGIN IMMEDIATE" and body[-1] == "COMMIT"
    assert sum(s == "BEGIN IMMEDIATE" for s in statements) == 1
    assert any(s.startswith("PRAGMA user_version=") for s in statements)


def test_second_open_does_no_ddl(db_path, monkeypatch):
    open_db(db_path).close()
    statements = _traced(monkeypatch)
    open_db(db_path)
    assert not [s for s in statements if s.upper().startswith(("CREATE", "BEGIN", "ALTER", "DROP"))]


def test_read_path_never_migrates(db_path, monkeypatch):
    connect(db_path).close()  # an empty, un-migrated file
    statements = _traced(monkeypatch)
    with pytest.raises(StoreError, match="schema is v0"):
        open_db(db_path, write=False)
    assert not [s for s in statements if s.upper().startswith(("CREATE", "BEGIN", "ALTER", "DROP", "INSERT"))]
    conn = connect(db_path)
    assert migrations.user_version(conn) == 0
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_read_path_on_missing_db(db_path):
    with pytest.raises(StoreError, match="no database"):
        open_db(db_path, write=False)
    assert not db_path.exists()


def test_failed_migration_leaves_nothing(db_path, monkeypatch):
    def broken(conn):
        conn.execute("CREATE TABLE half (x)")
        raise RuntimeError("migration bug")

    monkeypatch.setattr(migrations, "MIGRATIONS", [migrations.m001_core, broken])
    monkeypatch.setattr(migrations, "LATEST", 2)
    with pytest.raises(RuntimeError):
        open_db(db_path)
    conn = connect(db_path)
    assert migrations.user_version(conn) == 0
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_newer_schema_is_refused(db_path):
    open_db(db_path).execute(f"PRAGMA user_version={migrations.LATEST + 1}")
    with pytest.raises(SchemaTooNew):
        open_db(db_path, write=False)
    with pytest.raises(SchemaTooNew):
        open_db(db_path)


def test_default_path_env_and_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("MEMO_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "memo" / "memo.db"


def test_a_database_of_the_previous_schema_searches_before_any_write(tmp_path) -> None:
    """v4 only adds the ext_id indexes writes use: a v3 file (the previous memo's) answers
    searches as it is, and the first write migrates it."""
    import sqlite3 as _sqlite3

    import memo
    from memo.ops import add_record
    from memo.store.db import open_db as _open
    from memo.store.migrations import LATEST as _LATEST
    from memo.stored import RecordDraft as _Draft

    db = tmp_path / "old.db"
    conn = _open(db, write=True)
    add_record(conn, _Draft(body="the deploy key rotates weekly"))
    conn.close()
    raw = _sqlite3.connect(db)
    raw.executescript("DROP INDEX records_ext_id; DROP INDEX passages_ext; DROP INDEX records_hash; "
                      "DROP TABLE kw_base; DROP TABLE kw_delta; DROP TABLE kw_meta; DROP INDEX records_not_live; "
                      "DROP TRIGGER vectors_counted_insert; DROP TRIGGER vectors_counted_delete; "
                      "DROP TRIGGER vectors_counted_model; DROP TABLE vector_counts; "
                      "DROP INDEX records_superseded; PRAGMA user_version = 3;")
    raw.close()
    assert memo.search("deploy key", db=db, mode="keyword").results
    conn = _open(db, write=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _LATEST
    conn.close()


def test_v8_lets_a_v7_file_make_an_older_text_current_again(tmp_path) -> None:
    """A v7 file's dedup indexes counted superseded rows: the first write migrates it, and
    then `supersede` back to an earlier text works (it was refused on v7); its event dates,
    stored as typed, are rewritten in the stored form."""
    import sqlite3 as _sqlite3

    from memo import ops
    from memo.store.db import open_db as _open
    from memo.stored import RecordDraft as _Draft

    db = tmp_path / "v7.db"
    conn = _open(db, write=True)
    a = ops.add_record(conn, _Draft(body="the port is 8080")).record_id
    b = ops.supersede(conn, a, "the port is 9090").new_id
    conn.close()
    raw = _sqlite3.connect(db)
    raw.executescript("DROP INDEX records_dedup; DROP INDEX facts_dedup; "
                      "CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash) WHERE forgotten_at IS NULL; "
                      "CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE forgotten_at IS NULL; "
                      "PRAGMA user_version = 7;")
    # v7 stored event dates as typed: v8 rewrites them in the stored form (memo.text.when)
    raw.execute("UPDATE records SET event_at = '2026-03-10T23:30:00-05:00' WHERE id = ?", (a,))
    raw.execute("UPDATE passages SET event_at = '20260310' WHERE record_id = ?", (a,))
    raw.commit()
    raw.close()
    conn = _open(db, write=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST
    assert conn.execute("SELECT event_at FROM records WHERE id = ?", (a,)).fetchone()[0] == "2026-03-11T04:30:00.000000Z"
    assert conn.execute("SELECT event_at FROM passages WHERE record_id = ?", (a,)).fetchone()[0] == "2026-03-10"
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'records_dedup'").fetchone()[0]
    assert "superseded_at IS NULL" in sql
    c = ops.supersede(conn, b, "the port is 8080").new_id
    assert ops.get(conn, c).body == "the port is 8080" and ops.get(conn, b).superseded_by == c
    conn.close()
