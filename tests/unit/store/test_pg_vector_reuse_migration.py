"""PostgreSQL's M006 (SQLite's v9): a v5 database gets ``vector_keys`` and the
``records_superseded`` index at its first write, and the embedding then copies vectors."""

from __future__ import annotations

import pytest

from memo import ops
from memo.store.db import open_db
from memo.store.postgres import schema as pg_schema
from memo.stored import RecordDraft
from tests.pg_server import drop_database, new_database

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)


@pytest.fixture
def url():
    u = new_database()
    yield u
    drop_database(u)


def test_a_v5_database_is_migrated_and_reuses_vectors(url: str) -> None:
    from memo.embed.backfill import embed_records
    from tests.unit.embed.conftest import FakeEmbedder

    conn = open_db(url)
    a = ops.add_record(conn, RecordDraft(body="# Guide\n\n## One\n\nFirst part.\n\n## Two\n\nSecond part.\n",
                                         kind="doc")).record_id
    conn.execute_native("""
        DROP TABLE vector_keys; DROP INDEX records_superseded;
        UPDATE memo_meta SET value = '5' WHERE key = 'schema_version';
    """, None)
    conn.commit()
    conn.close()
    conn = open_db(url)                                  # the write path migrates to v6
    assert pg_schema.schema_version(conn) == pg_schema.LATEST >= 6
    assert embed_records(conn, [a], embedder=FakeEmbedder()).embedded >= 2
    b = ops.supersede(conn, a, "# Guide\n\n## One\n\nFirst part.\n\n## Two\n\nA new second part.\n").new_id
    rep = embed_records(conn, [b], embedder=FakeEmbedder())
    assert rep.reused >= 1 and rep.pending_after == 0
    conn.close()
