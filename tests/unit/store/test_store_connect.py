"""The connection factory's promises (reliability.md R1/R2, mem0 #7196)."""

import sqlite3

import pytest

from memo.store.connect import BUSY_TIMEOUT_MS, PAGE_CACHE_KIB, connect, write_tx


def test_pragmas(db_path):
    conn = connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS == 10_000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == -PAGE_CACHE_KIB == -65_536  # 64 MiB, not 2
    assert conn.isolation_level is None  # autocommit: no implicit DEFERRED transactions


def test_synchronous_normal_by_env(db_path, monkeypatch):
    monkeypatch.setenv("MEMO_SYNCHRONOUS", "normal")
    assert connect(db_path).execute("PRAGMA synchronous").fetchone()[0] == 1


def test_write_tx_is_begin_immediate_and_rolls_back(db_path):
    conn = connect(db_path)
    conn.execute("CREATE TABLE t (x)")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    with write_tx(conn):
        conn.execute("INSERT INTO t VALUES (1)")
    # (the writers' queue reads PRAGMA database_list first to find the lock file)
    statements = [s for s in statements if not s.startswith("PRAGMA database_list")]
    assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT"
    with pytest.raises(RuntimeError), write_tx(conn):
        conn.execute("INSERT INTO t VALUES (2)")
        raise RuntimeError("boom")
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1
    assert not conn.in_transaction


def test_write_tx_waits_for_other_writer(db_path):
    a, b = connect(db_path), connect(db_path)
    a.execute("CREATE TABLE t (x)")
    a.execute("BEGIN IMMEDIATE")
    b.execute("PRAGMA busy_timeout=100")  # make the test quick; write_tx retries past it
    import threading
    import time
    threading.Timer(0.3, lambda: a.execute("COMMIT")).start()
    t0 = time.monotonic()
    with write_tx(b):
        b.execute("INSERT INTO t VALUES (1)")
    assert time.monotonic() - t0 >= 0.25


def test_readonly_connection_cannot_write(db_path):
    connect(db_path).execute("CREATE TABLE t (x)")
    ro = connect(db_path, readonly=True)
    with pytest.raises(sqlite3.OperationalError):
        ro.execute("INSERT INTO t VALUES (1)")
