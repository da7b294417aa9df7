"""memo.store.connect.db_file: the one definition of "the file a connection searches" (the key
of the per-process indexes), asked of SQLite once per MemoConnection."""

from __future__ import annotations

import sqlite3

from memo.store.connect import db_file
from memo.store.db import open_db


def test_a_memo_connection_names_its_file_once(tmp_path):
    conn = open_db(tmp_path / "m.db", write=True)
    try:
        asked: list[str] = []
        conn.set_trace_callback(asked.append)
        first = db_file(conn)
        assert first == str((tmp_path / "m.db").resolve())
        assert db_file(conn) == first
        assert sum("database_list" in s for s in asked) == 1
    finally:
        conn.close()


def test_a_plain_connection_is_asked_every_time_and_memory_is_empty():
    conn = sqlite3.connect(":memory:")
    assert db_file(conn) == ""
    assert db_file(conn) == ""
