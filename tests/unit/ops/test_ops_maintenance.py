import pytest

from memo import ops
from memo.errors import ValidationError
from memo.store.connect import connect
from memo.store.migrations import LATEST
from memo.types import RecordDraft


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
    assert s.schema_version == LATEST and s.path == str(db_path) and s.size_bytes > 0
    # add and supersede embed right after their commit (memo.ops.after_commit): nothing
    # live is left pending for the default model.
    assert s.pending_vectors == {"all-minilm-l6-v2-int8": 0}


def test_reindex_rebuilds_derived_tables(fresh_db):
    _fill(fresh_db)
    fresh_db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('delete-all')")
    fresh_db.execute("DELETE FROM exact_fts")
    assert fresh_db.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'note'").fetchone()[0] == 0
    rep = ops.reindex(fresh_db)
    assert rep.passages == 5 and rep.exact_rows == 5 and "memo backfill" in rep.vectors
    assert fresh_db.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'note'").fetchone()[0] == 5
    fresh_db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")


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
