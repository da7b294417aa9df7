import pytest

from memo import ops
from memo.errors import ValidationError
from memo.store.connect import connect
from memo.store.dialect import is_postgres
from memo.store.migrations import LATEST
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.connection import redact
from memo.stored import RecordDraft


def _fill(conn):
    for i in range(5):
        ops.add_record(conn, RecordDraft(body=f"note {i} about net/http", kind="note" if i % 2 else "doc",
                                         namespace="a" if i < 3 else "b", tags=("t",)))


def test_stats(fresh_db, db_path):
    _fill(fresh_db)
    first = ops.list_records(fresh_db)[-1].id
    ops.supersede(fresh_db, first, "replacement")
    ops.forget(fresh_db, [ops.list_records(fresh_db)[0].id])
    s = ops.stats(fresh_db)
    assert (s.records, s.live, s.superseded, s.forgotten, s.passages) == (6, 4, 1, 1, 6)
    assert sum(s.by_kind.values()) == 4 and sum(s.by_namespace.values()) == 4
    assert s.schema_version == (pg_schema.LATEST if is_postgres(fresh_db) else LATEST) and s.path == redact(str(db_path)) and s.size_bytes > 0
    # add and supersede embed right after their commit (memo.ops.after_commit): nothing
    # live is left pending for the default model.
    assert s.pending_vectors == {"all-minilm-l6-v2-int8": 0}


def _keyword_rows(conn, word):
    if is_postgres(conn):   # the keyword index is each passage's tsv
        return conn.execute("SELECT count(*) FROM passages WHERE tsv @@ plainto_tsquery('english', ?)",
                            (word,)).fetchone()[0]
    return conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (word,)).fetchone()[0]


def test_reindex_rebuilds_derived_tables(fresh_db):
    _fill(fresh_db)
    if is_postgres(fresh_db):
        fresh_db.execute("UPDATE passages SET tsv = NULL")
    else:
        fresh_db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('delete-all')")
    fresh_db.execute("DELETE FROM exact_fts")
    assert _keyword_rows(fresh_db, "note") == 0
    rep = ops.reindex(fresh_db)
    assert rep.passages == 5 and rep.exact_rows == 5 and rep.keyword_rows == 5 and "memo backfill" in rep.vectors
    assert _keyword_rows(fresh_db, "note") == 5
    if not is_postgres(fresh_db):
        fresh_db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")


@pytest.mark.sqlite_only   # a SQLite file copy (PostgreSQL: refused, test_backup_restore.py)
def test_backup_is_verified_copy(fresh_db, tmp_path):
    _fill(fresh_db)
    rep = ops.backup(fresh_db, tmp_path / "b" / "copy.db")
    assert rep.integrity == "ok" and rep.counts["records"] == 5 and rep.counts["passages"] == 5
    copy = connect(tmp_path / "b" / "copy.db")
    assert copy.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'note'").fetchone()[0] == 5
    copy.close()  # an open database is never replaced, not even with overwrite (issue 9.2)
    with pytest.raises(ValidationError, match="exists"):
        ops.backup(fresh_db, tmp_path / "b" / "copy.db")
    assert ops.backup(fresh_db, tmp_path / "b" / "copy.db", overwrite=True).integrity == "ok"


def test_backup_restore_and_doctor_of_a_postgresql_database_name_pg_dump(fresh_db, db_path, tmp_path):
    """Backup and restore work on a SQLite file: on PostgreSQL each is one clear error
    naming the server's own tools, and nothing is written.  Doctor runs the server's
    checks there (memo.ops.doctor_pg: schema, keyword index), not the file's."""
    _fill(fresh_db)
    bk = tmp_path / "copy.db"
    if not is_postgres(fresh_db):
        assert ops.backup(fresh_db, bk).counts["records"] == 5
        assert ops.restore(bk, db_path, confirm=True, keep_previous=False).counts["records"] == 5
        return
    from memo.ops.doctor import doctor

    for call in (lambda: ops.backup(fresh_db, bk), lambda: ops.restore(bk, db_path, confirm=True)):
        with pytest.raises(ValidationError) as err:
            call()
        assert "pg_dump" in err.value.hint
    assert not bk.exists() and ops.stats(fresh_db).records == 5
    report = doctor(db_path)
    assert report.status == "ok" and [c.name for c in report.checks] == ["open", "schema", "fts", "file_checks"]
