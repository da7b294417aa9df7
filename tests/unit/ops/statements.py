"""The statements a connection runs, on either backend (tests only): SQLite's trace
callback, or PostgreSQL's statements as memo hands them to the connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memo.store.dialect import is_postgres


@contextmanager
def traced(conn, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    statements: list[str] = []
    if not is_postgres(conn):
        conn.set_trace_callback(statements.append)
        try:
            yield statements
        finally:
            conn.set_trace_callback(None)
        return
    with monkeypatch.context() as m:
        for name in ("execute", "executemany", "execute_native"):
            def wrap(sql, *args, _orig=getattr(conn, name), **kw):
                statements.append(sql)
                return _orig(sql, *args, **kw)
            m.setattr(conn, name, wrap)
        yield statements


def is_write_begin(conn, statement: str) -> bool:
    """Whether ``statement`` opens memo's write transaction: SQLite's BEGIN IMMEDIATE;
    on PostgreSQL a plain BEGIN (the writers' advisory lock follows it; a read
    transaction begins ISOLATION LEVEL REPEATABLE READ)."""
    return statement == ("BEGIN" if is_postgres(conn) else "BEGIN IMMEDIATE")
