"""The writers' queue: an OS file lock taken before ``BEGIN IMMEDIATE``.

Why: SQLite lets one writer in at a time and makes the others wait in its busy handler,
which sleeps between retries for up to 100 ms at a time.  Under several writer processes a
waiting writer often sleeps through the moment the lock is free and loses it to a writer
that never slept; that is where the soak test's multi-hundred-millisecond commit tail came
from (docs/reliability.md).  Here a writer first takes an exclusive ``flock`` on
``<database>-writer.lock``: it polls for about a millisecond (0.1, 0.2, 0.5 ms), then
waits in the kernel, which wakes it when the holder unlocks.  SQLite's busy handler is
almost never entered.  Readers never touch it.

Why not poll all the way (as before 2026-12-01): on a busy machine every poll is a wakeup
that competes for the CPU with the writer holding the lock, so the holder's transaction
stretches and the queue behind it grows.  Measured with bench/soak.py: the kernel wait
gave a steadier ack p99 than polling (docs/results-log.md "Writers' queue: polling against
a kernel wait").

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

Not FIFO: the waiters race for a freed lock; the tail is bounded by the transactions ahead
of it, which is what the soak measures.  The kernel wait has no timeout of its own, so it
runs in a short-lived helper thread while the writer waits for it up to the deadline; a
writer that gives up leaves the helper to drop the lock (and close the file) the moment
it gets it.
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
_POLL_S = (0.0001, 0.0002, 0.0005)   # then a kernel wait until the deadline

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
        owned = True          # False once the helper of a wait that gave up owns the file
        try:
            try:
                _flock(fd, deadline, path)
            except _GaveUp as exc:
                owned = False
                # The private class only tells this function who owns ``fd``; callers
                # see the public StoreBusy (its name is what JSON and MCP errors show).
                raise StoreBusy(str(exc)) from None
            held.add(path)
            try:
                yield
            finally:
                held.discard(path)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            if owned:
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
    """Take the lock on ``fd`` before ``deadline`` or raise StoreBusy (``_GaveUp``: the
    kernel wait's helper thread now owns ``fd``)."""
    for pause in _POLL_S:
        if _try_flock(fd):
            return
        if time.monotonic() >= deadline:
            raise StoreBusy(f"another process kept the write lock of {path}")
        time.sleep(pause)
    if _try_flock(fd):
        return
    _Waiter(fd).wait(deadline, path)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class _Waiter:
    """A blocking ``flock`` in a helper thread, waited for with a deadline.  If the writer
    gives up first, the helper owns ``fd``: it unlocks and closes it once the kernel hands
    it the lock (or at once if the flock failed), so the file number is never closed twice
    or touched after reuse."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.done = threading.Event()
        self.guard = threading.Lock()
        self.abandoned = False
        self.error: OSError | None = None

    def wait(self, deadline: float, path: str) -> None:
        threading.Thread(target=self._run, name="memo-writer-turn", daemon=True).start()
        self.done.wait(max(0.0, deadline - time.monotonic()))
        with self.guard:              # the helper may finish between the wait and here
            if not self.done.is_set():
                self.abandoned = True
                raise _GaveUp(f"another process kept the write lock of {path}")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = exc
        with self.guard:
            if not self.abandoned:
                self.done.set()
                return
        if self.error is None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


class _GaveUp(StoreBusy):
    """StoreBusy after the helper took over the lock file (the caller must not close it).
    Never leaves this module: ``writer_turn`` re-raises it as a plain StoreBusy."""
