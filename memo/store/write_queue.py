"""The writers' queue: an OS file lock taken before ``BEGIN IMMEDIATE``.

Why: SQLite lets one writer in at a time and makes the others wait in its busy handler,
which sleeps between retries for up to 100 ms at a time.  Under several writer processes a
waiting writer often sleeps through the moment the lock is free and loses it to a writer
that never slept; that is where the soak test's multi-hundred-millisecond commit tail came
from (docs/reliability.md).  Here a writer first takes an exclusive ``flock`` on
``<database>-writer.lock``, polling every 0.1-2 ms, so a freed lock is taken within about
a millisecond and SQLite's busy handler is almost never entered.  Readers never touch it.

Properties (tests/unit/store/test_write_queue.py):

* bounded: a writer waits at most ``deadline`` seconds, then ``StoreBusy`` (a stopped
  process holding the lock cannot hang everyone); a crashed holder releases it (the kernel
  drops a dead process's flock);
* re-entrant per thread and database: a thread that already holds the turn (a second
  connection of the same thread inside ``write_tx``) does not wait for itself, it goes
  straight to SQLite's own lock as before, so no new deadlock is possible;
* one per process and database for threads: a ``threading.Lock`` orders the threads of one
  process before they reach the file lock (flock is per open file, not per thread);
* optional: a database without a file (``:memory:``), or a folder where the lock file cannot
  be created (read-only media), falls back to SQLite's busy handler alone.

Not FIFO: the waiters race for a freed lock, each within its poll interval; the tail is
bounded by the transactions ahead of it, which is what the soak measures.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from memo.errors import StoreBusy

SUFFIX = "-writer.lock"
_POLL_S = (0.0001, 0.0002, 0.0005, 0.001, 0.002)   # then 2 ms until the deadline

_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()
_held = threading.local()   # .paths: set of database paths this thread holds the turn for


def db_file(conn: sqlite3.Connection) -> str:
    """The main database file of ``conn`` ('' for an in-memory or temporary database)."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return row[2] or ""
    return ""


@contextmanager
def writer_turn(conn: sqlite3.Connection, deadline: float) -> Iterator[None]:
    """Hold the writers' queue for ``conn``'s database until the block ends.
    ``deadline`` is a ``time.monotonic()`` value."""
    path = db_file(conn)
    held: set[str] = getattr(_held, "paths", None) or set()
    _held.paths = held
    if not path or path in held:
        yield
        return
    with _process_lock(path, deadline):
        fd = _open_lock_file(path)
        if fd is None:
            yield
            return
        try:
            _flock(fd, deadline, path)
            held.add(path)
            try:
                yield
            finally:
                held.discard(path)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@contextmanager
def _process_lock(path: str, deadline: float) -> Iterator[None]:
    with _process_locks_guard:
        lock = _process_locks.setdefault(path, threading.Lock())
    if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
        raise StoreBusy(f"another thread of this process kept the write lock of {path}")
    try:
        yield
    finally:
        lock.release()


def _open_lock_file(path: str) -> int | None:
    try:
        return os.open(path + SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None   # read-only folder and the like: SQLite's busy handler alone


def _flock(fd: int, deadline: float, path: str) -> None:
    attempt = 0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if time.monotonic() >= deadline:
            raise StoreBusy(f"another process kept the write lock of {path}")
        time.sleep(_POLL_S[min(attempt, len(_POLL_S) - 1)])
        attempt += 1
