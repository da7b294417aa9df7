"""The writers' queue (memo.store.write_queue): a file lock before BEGIN IMMEDIATE."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from memo.errors import StoreBusy
from memo.store import write_queue
from memo.store.connect import connect, write_tx


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "q.db"
    c = connect(path)
    c.execute("CREATE TABLE t (x)")
    c.close()
    return path


def test_the_lock_file_sits_beside_the_database(db):
    conn = connect(db)
    with write_tx(conn):
        conn.execute("INSERT INTO t VALUES (1)")
    assert (db.parent / (db.name + write_queue.SUFFIX)).exists()


def test_a_second_writer_waits_for_the_first_and_then_goes_at_once(db):
    a, b = connect(db), connect(db)
    # b gets no busy handler and its statements are traced: had it reached SQLite's lock
    # while a held it, its BEGIN IMMEDIATE would fail at once and be retried (a second
    # BEGIN in the trace).  One BEGIN means it waited in the queue, not in SQLite; no
    # wall-clock bound, which a loaded machine breaks (CI 2026-12-04: 0.40 s for 0.3 s).
    b.execute("PRAGMA busy_timeout=0")
    statements: list[str] = []
    b.set_trace_callback(statements.append)
    order: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with write_tx(a):
            a.execute("INSERT INTO t VALUES (1)")
            order.append("a-in")
            inside.set()
            time.sleep(0.3)
            order.append("a-out")

    t = threading.Thread(target=first)
    t.start()
    inside.wait(5)
    t0 = time.monotonic()
    with write_tx(b):
        order.append("b-in")
        waited = time.monotonic() - t0
        b.execute("INSERT INTO t VALUES (2)")
    t.join()
    assert order == ["a-in", "a-out", "b-in"]
    assert waited > 0.25, waited
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"], statements
    assert b.execute("SELECT count(*) FROM t").fetchone()[0] == 2


def test_a_holder_in_another_process_is_waited_for_then_times_out(db, monkeypatch):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(db) + write_queue.SUFFIX!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        conn = connect(db)
        t0 = time.monotonic()
        with pytest.raises(StoreBusy), write_queue.writer_turn(conn, time.monotonic() + 0.3):
            pass
        assert 0.3 <= time.monotonic() - t0 < 3.0
    finally:
        holder.kill()
        holder.wait()
    # a dead holder's lock is gone: the next writer goes straight in
    conn = connect(db)
    t0 = time.monotonic()
    with write_tx(conn):
        conn.execute("INSERT INTO t VALUES (3)")
    assert time.monotonic() - t0 < 5     # a writer that waited for the dead holder: 30 s


def test_same_thread_second_connection_does_not_wait_for_itself(db, monkeypatch):
    """Re-entrant per thread: the nested write on another connection reaches SQLite's own
    lock (and its busy handling) instead of deadlocking on the queue."""
    a, b = connect(db), connect(db)
    b.execute("PRAGMA busy_timeout=50")
    entered = []
    with write_tx(a):
        # a queue that made b wait for its own thread would time out (StoreBusy) without
        # ever entering the block
        with pytest.raises(StoreBusy), write_queue.writer_turn(b, time.monotonic() + 5):
            entered.append(True)     # the queue let b through (same thread holds it) ...
            raise StoreBusy("b would now wait on SQLite's lock, as before the queue")
    assert entered


def test_in_memory_and_unwritable_folders_fall_back_to_sqlite_alone(tmp_path, monkeypatch):
    mem = connect(tmp_path / "x.db")
    mem.close()
    import sqlite3
    m = sqlite3.connect(":memory:", isolation_level=None)
    m.execute("CREATE TABLE t (x)")
    with write_tx(m):
        m.execute("INSERT INTO t VALUES (1)")
    monkeypatch.setattr(write_queue, "_open_lock_file", lambda path: None)
    c = connect(tmp_path / "y.db")
    c.execute("CREATE TABLE t (x)")
    with write_tx(c):
        c.execute("INSERT INTO t VALUES (1)")
    assert c.execute("SELECT count(*) FROM t").fetchone()[0] == 1


def test_a_writer_that_gives_up_leaves_no_lock_and_no_open_file_behind(db):
    """The kernel wait runs in a helper thread: when the writer times out, the helper
    takes over the lock file, drops the lock as soon as it gets it and closes the file."""
    import fcntl
    import os

    conn = connect(db)
    lock_path = str(db) + write_queue.SUFFIX
    other = os.open(lock_path, os.O_RDWR | os.O_CREAT)   # another open file: a different holder
    fcntl.flock(other, fcntl.LOCK_EX)
    fds_before = len(os.listdir("/proc/self/fd"))
    t0 = time.monotonic()
    with pytest.raises(StoreBusy), write_queue.writer_turn(conn, time.monotonic() + 0.2):
        pass
    assert 0.2 <= time.monotonic() - t0 < 3.0
    fcntl.flock(other, fcntl.LOCK_UN)
    os.close(other)
    probe = os.open(lock_path, os.O_RDWR)
    try:
        for _ in range(200):      # the helper gets the lock, then drops it
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(0.01)
        else:
            pytest.fail("the lock stayed held after the waiting writer gave up")
        fcntl.flock(probe, fcntl.LOCK_UN)
    finally:
        os.close(probe)
    for _ in range(100):
        if len(os.listdir("/proc/self/fd")) <= fds_before - 1:
            break
        time.sleep(0.01)
    assert len(os.listdir("/proc/self/fd")) <= fds_before - 1   # `other` and the helper's file closed
    with write_tx(conn):
        conn.execute("INSERT INTO t VALUES (4)")


def test_a_writer_that_gives_up_in_the_kernel_wait_reports_storebusy_by_name(db):
    """Issue 33.1: a writer that timed out in the kernel wait surfaced as the private
    ``_GaveUp`` in ``--json`` and MCP errors; callers must see the public StoreBusy."""
    import fcntl
    import os

    conn = connect(db)
    other = os.open(str(db) + write_queue.SUFFIX, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)
    try:
        with pytest.raises(StoreBusy) as info, write_queue.writer_turn(conn, time.monotonic() + 0.2):
            pass
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)
        os.close(other)
    assert type(info.value) is StoreBusy, type(info.value)
    assert info.value.to_dict()["error"] == "StoreBusy"


def test_error_documents_never_show_a_private_class_name():
    class _Private(StoreBusy):
        pass

    err = _Private("held")
    assert err.error_name == "StoreBusy" and err.to_dict()["error"] == "StoreBusy"
