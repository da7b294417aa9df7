"""The one connection factory.  Every PRAGMA memo relies on is set here and nowhere else.

* ``journal_mode=WAL``: readers never block the writer and the writer never blocks readers.
* ``busy_timeout=10000`` ms: a writer waits up to 10 s for the lock instead of failing.
* ``foreign_keys=ON``: passages, tags and vectors cannot outlive their record.
* ``synchronous=FULL``: chosen over NORMAL because memo promises *durable on ack*.  In WAL
  mode NORMAL is safe from corruption and survives a process crash, but the last commits may
  roll back after a power loss or OS crash; FULL fsyncs the WAL on every commit.  Commits
  are per batch (import) or per command (add), so the fsync cost stays small.  Set
  ``MEMO_SYNCHRONOUS=NORMAL`` to trade that window for write speed (docs/architecture.md).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memo.errors import StoreBusy, StoreCorrupt, StoreError, ValidationError
from memo.store.write_queue import writer_turn

BUSY_TIMEOUT_MS = 10_000
_SYNC_MODES = {"FULL", "NORMAL"}


def _synchronous() -> str:
    mode = os.environ.get("MEMO_SYNCHRONOUS", "FULL").upper()
    if mode not in _SYNC_MODES:
        raise ValidationError(f"MEMO_SYNCHRONOUS={mode!r} is not one of {sorted(_SYNC_MODES)}")
    return mode


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` with memo's settings.  Autocommit mode: transactions are explicit
    (``write_tx``), so no statement ever opens a DEFERRED transaction behind our back."""
    path = Path(path)
    if not readonly:
        path.parent.mkdir(parents=True, exist_ok=True)
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
    except sqlite3.OperationalError as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    if not readonly:
        _enable_wal(conn)
    conn.execute(f"PRAGMA synchronous={_synchronous()}")
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    # Switching to WAL takes a brief exclusive lock that ignores the busy handler, so
    # several processes opening a cold file at once can see "database is locked"
    # (tobi/qmd src/db.ts documents the same race).  Retry for up to busy_timeout.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() == "wal":
                return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise StoreError(f"cannot enable WAL: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # "file is not a database": not SQLite, or damaged
            raise StoreCorrupt(f"cannot open the database: {exc}") from exc
        if time.monotonic() > deadline:
            raise StoreBusy("could not switch the database to WAL mode: still locked")
        time.sleep(0.02)


@contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; rollback on any error.

    IMMEDIATE takes the write lock up front, so the busy handler applies; a DEFERRED
    transaction that reads and then writes can get SQLITE_BUSY at once, without waiting.
    Before it, the writer takes its turn in the writers' queue (``memo.store.write_queue``:
    a file lock polled every <= 2 ms), so waiting writers do not sleep through a free lock
    in SQLite's busy handler; the turn is held until COMMIT or ROLLBACK.
    """
    deadline = time.monotonic() + 3 * BUSY_TIMEOUT_MS / 1000
    with writer_turn(conn, deadline):
        yield from _write_tx(conn, deadline)


def _write_tx(conn: sqlite3.Connection, deadline: float) -> Iterator[sqlite3.Connection]:
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if ("locked" in str(exc) or "busy" in str(exc)) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(f"database stayed locked: {exc}") from exc
            raise StoreError(str(exc)) from exc
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            conn.execute("ROLLBACK")
            raise StoreBusy(f"commit failed: {exc}") from exc


@contextmanager
def read_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read snapshot: every statement inside sees the same committed state.

    In WAL mode a DEFERRED transaction takes its snapshot at its first read, so one is made
    at once (a read of ``sqlite_schema``): a scope filter and the arm query that applies it
    can then never see two different states, which is what made a commit landing between
    them leak out-of-scope rows (issue 9).  ``PRAGMA data_version`` inside the transaction
    describes the same snapshot, so per-connection caches keyed on it stay consistent.
    A connection already inside a transaction keeps it (its snapshot is already one).
    """
    if conn.in_transaction:
        yield conn
        return
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreBusy(f"could not start a read snapshot: {exc}") from exc
        raise StoreError(f"could not start a read snapshot: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreCorrupt(f"cannot read the database: {exc}") from exc
    try:
        yield conn
    finally:
        # A read transaction commits nothing; ROLLBACK also ends it if a write slipped in.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
