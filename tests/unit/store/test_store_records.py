import sqlite3

import pytest

from memo.errors import NotFound, StoreError, ValidationError
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.derived import rebuild_derived
from memo.store.dialect import is_postgres
from memo.store.records import content_hash, find_live_duplicate, get_record, insert_record, record_hash
from memo.stored import PassageDraft, RecordDraft
from tests.unit.ops.index_rows import keyword_rows


@pytest.fixture
def fresh_db(backend_db):
    """These store tests run on both backends (issue 17.3)."""
    conn = open_db(backend_db)
    yield conn
    conn.close()


def _insert(conn, body="hello world", **kw):
    with write_tx(conn):
        return insert_record(conn, RecordDraft(body=body, **kw), (PassageDraft(text=body, section="S"),))


def test_insert_and_get_every_field(fresh_db):
    rid = _insert(fresh_db, namespace="ns", kind="doc", title="T", source="src", library="lib",
                  version="1.2", tags=("b", "a"), event_at="2024-01-01", trust=0.4, author="me",
                  import_path="a.md", ext_id="e", meta={"k": 1})
    rec = get_record(fresh_db, rid)
    assert (rec.namespace, rec.kind, rec.title, rec.source, rec.library, rec.version) == \
        ("ns", "doc", "T", "src", "lib", "1.2")
    assert rec.tags == ("a", "b") and rec.trust == 0.4 and rec.author == "me" and rec.meta == {"k": 1}
    assert rec.import_path == "a.md" and rec.ext_id == "e" and rec.content_hash == record_hash(RecordDraft(body="hello world", library="lib", version="1.2"))
    assert rec.content_hash != content_hash("hello world")     # the version is part of the key
    assert rec.passages[0].id == f"{rid}:0" and rec.passages[0].event_at == "2024-01-01"
    assert get_record(fresh_db, f"{rid}:0").id == rid


def test_get_missing(fresh_db):
    with pytest.raises(NotFound):
        get_record(fresh_db, "nope")


def test_dedup_index_and_lookup(fresh_db):
    rid = _insert(fresh_db)
    assert find_live_duplicate(fresh_db, "default", content_hash("hello world  \n")) == rid
    # the unique index refuses it (the driver's error; PostgreSQL's comes typed as StoreError)
    with pytest.raises(StoreError if is_postgres(fresh_db) else sqlite3.IntegrityError):
        _insert(fresh_db)


@pytest.mark.parametrize("bad", [dict(kind="blog"), dict(trust=1.5), dict(namespace=" "), dict(tags=(" ",))])
def test_validation(fresh_db, bad):
    with pytest.raises(ValidationError):
        _insert(fresh_db, **bad)


def test_indexes_in_step_and_rebuildable(fresh_db):
    _insert(fresh_db, body="the ERR_CONN_RESET code")
    assert len(keyword_rows(fresh_db, "passages_fts", "code")) == 1
    fresh_db.execute("DELETE FROM exact_fts")
    with write_tx(fresh_db):
        assert rebuild_derived(fresh_db) == {"passages": 1, "facts": 0}
    assert fresh_db.execute("SELECT count(*) FROM exact_fts").fetchone()[0] == 1
