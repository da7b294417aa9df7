"""The data generation on PostgreSQL (memo/store/postgres/tx.py): inside a read snapshot
it is the snapshot's, read once, so a search's conn_cache lookups cost no round trip and
can never mix two states; outside, every call reads the server."""

from __future__ import annotations

import pytest

from memo.ops.add import add_record
from memo.retrieve.conn_cache import conn_cache
from memo.store.connect import read_tx
from memo.store.db import open_db
from memo.store.postgres import tx
from memo.stored import RecordDraft
from tests.pg_server import drop_database, new_database

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)


@pytest.fixture
def two():
    url = new_database()
    a, b = open_db(url), open_db(url)
    yield a, b
    a.close()
    b.close()
    drop_database(url)


def test_generation_is_the_snapshots_inside_read_tx_and_fresh_outside(two, monkeypatch):
    reader, writer = two
    before = tx.generation(reader)
    with read_tx(reader):
        assert reader.snapshot_generation == before
        cache = conn_cache(reader)
        cache["x"] = 1
        add_record(writer, RecordDraft(body="a write from another connection"))   # commits
        reads = []
        monkeypatch.setattr(tx, "_read_generation", lambda c: reads.append(c) or -1)
        assert tx.generation(reader) == before and conn_cache(reader) is cache
        assert reads == []          # no round trip inside the snapshot
        monkeypatch.undo()
    assert reader.snapshot_generation is None
    assert tx.generation(reader) > before               # outside: the committed write is seen
    assert "x" not in conn_cache(reader)                # and the cache was emptied
