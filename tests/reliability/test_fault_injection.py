"""R10 (reduced): a failure injected at step N of an import, for every N.  After each, the
database passes integrity_check, the failed batch left no row behind, earlier batches are
intact, and re-running the import completes it."""

from __future__ import annotations

import sqlite3

import pytest

from memo import ops
from memo.errors import StoreError
from memo.ops import store_batch
from memo.ops.importer import ImportOptions
from memo.store.db import open_db
from memo.stored import RecordDraft

FILES = 7
BATCH = 3


def _counts(conn):
    return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("records", "record_tags", "passages", "exact_fts")}


def _check(conn):
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
    c = _counts(conn)
    assert c["passages"] == c["exact_fts"]
    assert conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'paragraph'").fetchone()[0] \
        == c["passages"]
    return c


@pytest.mark.slow
@pytest.mark.parametrize("fail_at", range(1, FILES + 1))
@pytest.mark.parametrize("where", ["before_insert", "after_insert"])
def test_failure_mid_batch_leaves_nothing_half_written(tmp_path, monkeypatch, fail_at, where):
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(FILES):
        (root / f"n{i}.md").write_text(f"# Note {i}\nparagraph one of {i}\n\nparagraph two of {i}\n")
    conn = open_db(tmp_path / "f.db")
    # An import stores each batch with one bulk insert (memo.ops.store_batch ->
    # insert_records); the failure is injected when the batch holding file number fail_at
    # is written, before its rows or after them (inside the batch's transaction).
    real_insert = store_batch.insert_records
    seen = {"n": 0}

    def flaky_insert(c, records, *a, **kw):
        first, seen["n"] = seen["n"] + 1, seen["n"] + len(records)
        hit = first <= fail_at <= seen["n"]
        if hit and where == "before_insert":
            raise sqlite3.OperationalError("injected disk I/O error")
        n = real_insert(c, records, *a, **kw)  # records, tags, passages and index rows written...
        if hit:
            raise sqlite3.OperationalError("injected disk I/O error")  # ...then the failure
        return n

    monkeypatch.setattr(store_batch, "insert_records", flaky_insert)
    with pytest.raises(StoreError, match="rolled back"):
        ops.import_path(conn, root, ImportOptions(batch_size=BATCH, tags=("t",)))
    committed = ((fail_at - 1) // BATCH) * BATCH  # whole batches before the failing one
    c = _check(conn)
    assert c["records"] == committed and c["record_tags"] == committed and c["passages"] == committed

    monkeypatch.setattr(store_batch, "insert_records", real_insert)
    rep = ops.import_path(conn, root, ImportOptions(batch_size=BATCH, tags=("t",)))
    assert (rep.added, rep.skipped) == (FILES - committed, committed)
    assert _check(conn)["records"] == FILES


@pytest.mark.slow
def test_failure_in_add_and_supersede_rolls_back(fresh_db, monkeypatch):
    rid = ops.add_record(fresh_db, RecordDraft(body="keep me")).record_id
    before = _counts(fresh_db)

    def boom(*a, **k):
        raise sqlite3.OperationalError("injected")

    monkeypatch.setattr("memo.ops.records.mark_superseded", boom)
    with pytest.raises(StoreError, match="injected"):
        ops.supersede(fresh_db, rid, "new text")
    assert _counts(fresh_db) == before
    assert ops.get(fresh_db, rid).superseded_at is None
    # An add fails after its record and passage rows but before its mentions: nothing stays.
    monkeypatch.setattr("memo.store.records.write_passage_mentions", boom)
    with pytest.raises(StoreError, match="injected"):
        ops.add_record(fresh_db, RecordDraft(body="Alice met Bob in Paris"))
    assert _counts(fresh_db) == before
