"""Turn SQLite exceptions that escape an operation into memo's typed store errors, so the
CLI prints one line with a hint instead of a traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from memo.errors import StoreBusy, StoreCorrupt, StoreError


@contextmanager
def store_errors(action: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.DatabaseError as exc:
        msg = str(exc)
        if "malformed" in msg or "not a database" in msg:
            raise StoreCorrupt(f"{action} failed: {msg}") from exc
        if "locked" in msg or "busy" in msg:
            raise StoreBusy(f"{action} failed: {msg}") from exc
        raise StoreError(f"{action} failed: {msg}") from exc
