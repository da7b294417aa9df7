"""The stable cache (memo.retrieve.conn_cache.stable_cache): the candidates' meta and result
rows a search read stay cached across another connection's commit that only adds rows, and
go when passages go away (memo_meta.vectors_epoch moves), when this connection writes, and
outside a snapshot ``read_tx`` began itself.  A stale entry would give a search another
passage's kind, namespace, dates or text, so each way out is checked with a pk that a new
passage takes again (SQLite reuses the largest rowid once it is gone)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from retrieve_helpers import add, pk_of

from memo import ops
from memo.retrieve import SearchRequest, search
from memo.retrieve.conn_cache import conn_cache, stable_cache
from memo.retrieve.fetch import fetch_meta
from memo.store.connect import read_tx, write_tx
from memo.store.db import open_db

NOW = "2024-07-01T00:00:00Z"


@pytest.fixture
def two(tmp_path):
    """A reading and a writing connection to one SQLite file (a server and a writer)."""
    path = tmp_path / "memo.db"
    writer = open_db(path)
    reader = open_db(path, write=False)
    yield reader, writer
    reader.close()
    writer.close()


def _meta_reads(conn):
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(sql) if "COALESCE(p.event_at" in sql else None)
    return seen


def _meta(conn, pk):
    with read_tx(conn):
        return fetch_meta(conn, [pk]).get(pk)


def test_another_connections_add_keeps_the_meta_it_read(two):
    reader, writer = two
    for text in ("pool filter cleaning", "pool party towels", "garden hose"):
        add(writer, text, kind="note")
    req = SearchRequest("pool filter", mode="keyword", now=NOW)
    first = search(reader, req, "rrf")
    seen = _meta_reads(reader)
    add(writer, "garden shears", kind="doc")              # matches nothing the query asks
    again = search(reader, req, "rrf")
    assert [r.pk for r in again.results] == [r.pk for r in first.results]
    assert seen == []                                     # the meta came from the cache
    add(writer, "pool filter pump", kind="doc")           # a new candidate: only it is read
    third = search(reader, req, "rrf")
    assert len(seen) == 1 and len(third.results) == 3
    assert {r.kind for r in third.results} == {"note", "doc"}


def test_a_purge_empties_it_and_a_reused_pk_gets_its_new_meta(two):
    reader, writer = two
    add(writer, "pool filter cleaning", kind="note")
    gone = add(writer, "pool filter pump", kind="note", namespace="old")
    pk = pk_of(writer, gone)
    assert _meta(reader, pk).namespace == "old"
    ops.forget(writer, [gone])
    ops.purge(writer)
    again = add(writer, "pool filter hose", kind="doc", namespace="new")
    assert pk_of(writer, again) == pk                     # SQLite gave the pk out again
    meta = _meta(reader, pk)
    assert (meta.namespace, meta.kind) == ("new", "doc")
    res = search(reader, SearchRequest("pool filter hose", mode="keyword", now=NOW), "rrf")
    assert {r.pk: r.kind for r in res.results}[pk] == "doc"


def test_a_removal_epoch_that_moves_empties_it_however_it_moved(two):
    """What the cache trusts is the epoch, whoever moved it (restore gives a fresh one too)."""
    from memo.store.derived import bump_vectors_epoch

    reader, writer = two
    add(writer, "pool filter cleaning")
    with read_tx(reader):
        stable_cache(reader)["probe"] = 1
    add(writer, "pool party")
    with read_tx(reader):
        assert stable_cache(reader).get("probe") == 1
    with write_tx(writer):
        bump_vectors_epoch(writer)
    with read_tx(reader):
        assert "probe" not in stable_cache(reader)


def test_its_own_write_empties_it(two):
    """A write of the reading connection may still roll back, leaving its pks to other rows."""
    reader, writer = two
    add(writer, "pool filter cleaning")
    with read_tx(writer):
        stable_cache(writer)["probe"] = 1
    with read_tx(writer):
        assert stable_cache(writer).get("probe") == 1
    add(writer, "pool party")
    with read_tx(writer):
        assert "probe" not in stable_cache(writer)


def test_outside_its_own_snapshot_it_is_the_per_write_cache(two):
    reader, writer = two
    assert stable_cache(reader) is conn_cache(reader)        # no snapshot
    with write_tx(writer), read_tx(writer):                  # a caller's transaction, kept as it is
        assert stable_cache(writer) is conn_cache(writer)


def test_the_postgres_backend_keeps_the_per_write_cache(conn):
    """On PostgreSQL (and SQLite outside a snapshot) every write empties it, as before."""
    with read_tx(conn):
        same = stable_cache(conn) is conn_cache(conn)
    from memo.store.dialect import is_postgres
    assert same == is_postgres(conn)


# --- memo's own statements keep the rule the cache relies on -----------------------------

# Columns fetch_meta and fetch_rows read (memo.retrieve.fetch): never updated in place.
CACHED = {"records": {"id", "kind", "namespace", "source", "event_at", "recorded_at", "author", "import_path",
                      "content_hash"},
          "passages": {"pk", "id", "record_id", "text", "section", "tokens", "event_at", "speaker"}}
_UPDATE = re.compile(r"UPDATE\s+(records|passages)\s+SET\s+(.+?)\s+WHERE", re.S | re.I)


def updated_columns(source: str) -> list[tuple[str, str]]:
    out = []
    for table, sets in _UPDATE.findall(source):
        for part in sets.split(","):
            out.append((table.lower(), part.split("=")[0].strip().lower()))
    return out


def test_the_check_finds_an_update_of_a_cached_column():
    assert updated_columns('conn.execute("UPDATE records SET namespace = ?, meta = ? WHERE id = ?")') == [
        ("records", "namespace"), ("records", "meta")]


def test_no_sqlite_statement_of_memo_updates_a_cached_column():
    root = Path(__file__).resolve().parents[3] / "memo"
    bad = []
    for f in root.rglob("*.py"):
        if "postgres" in f.parts:       # PostgreSQL keeps the per-write cache (stable_cache)
            continue
        for table, col in updated_columns(f.read_text()):
            if col in CACHED[table]:
                bad.append(f"{f.relative_to(root)}: {table}.{col}")
    assert set(bad) <= ALLOWED, bad


# rebuild_derived's "SET text = text" runs on PostgreSQL only (it fires the tsv trigger again).
ALLOWED = {"store/derived.py: passages.text"}
