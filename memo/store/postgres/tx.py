"""Transactions on PostgreSQL, with SQLite's meaning.

* ``write_tx``: one writer at a time, as on SQLite: ``BEGIN`` then a transaction-scoped
  advisory lock (``WRITER_LOCK``).  memo's bulk inserts pick pks as max(pk) + 1 and its
  derived rows follow from them, so serialising writers keeps them race-free; a writer
  that waits longer than the lock timeout gets ``StoreBusy`` (retry), never a half
  write.  Before COMMIT the data generation (``memo_meta.generation``) moves: readers'
  per-connection caches (``memo.retrieve.conn_cache``) key on it.
* ``read_tx``: ``REPEATABLE READ``: every statement of a search sees the snapshot taken
  at its first statement (the scope filter and the arms can never see two states).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memo.errors import DiskFull, StoreBusy, StoreError, StoreUnavailable

WRITER_LOCK = 0x6D656D6F    # "memo": the advisory lock key writers share
LOCK_TIMEOUT_MS = 15_000    # SQLite's busy wait is 3 x BUSY_TIMEOUT_MS; a server gets longer


def write_tx(conn: Any) -> Iterator[Any]:
    if conn.in_transaction:
        raise StoreError("internal: a write transaction inside another transaction")
    conn.execute_native("BEGIN")
    try:
        conn.execute_native(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT_MS}ms'", None)
        try:
            conn.execute_native("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        except (StoreUnavailable, DiskFull):
            raise                      # the server went away (or has no room): not another writer
        except StoreError as exc:
            raise StoreBusy(f"another writer held the database for {LOCK_TIMEOUT_MS / 1000:g} s: {exc}",
                            hint="try again; a long import holds the writers' lock until it commits") from exc
        yield conn
        conn.execute_native(
            "UPDATE memo_meta SET value = (value::bigint + 1)::text WHERE key = 'generation'")
    except BaseException:
        conn.rollback()
        raise
    try:
        conn.execute_native("COMMIT")
    except StoreError:
        conn.rollback()
        raise


def read_tx(conn: Any) -> Iterator[Any]:
    if conn.in_transaction:
        yield conn
        return
    conn.execute_native("BEGIN ISOLATION LEVEL REPEATABLE READ")
    try:
        # The snapshot is taken by this first statement, and the generation it reads is
        # the snapshot's for the whole transaction: kept on the connection, so the
        # search's many conn_cache lookups cost no round trip each (~13 per search).
        conn.snapshot_generation = _read_generation(conn)
        yield conn
    finally:
        conn.snapshot_generation = None
        conn.rollback()


def generation(conn: Any) -> int:
    """The data generation (moves with every committed write): inside ``read_tx`` the
    snapshot's (it cannot move there), else read from the server."""
    snap = conn.snapshot_generation
    return snap if snap is not None else _read_generation(conn)


def _read_generation(conn: Any) -> int:
    row = conn.execute_native("SELECT value FROM memo_meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row is not None else 0
