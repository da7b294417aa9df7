"""Where the database lives and how callers get a connection to it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import platformdirs

from memo.errors import StoreError
from memo.store.connect import connect
from memo.store.migrations import check_schema, ensure_schema


def default_db_path() -> Path:
    """``$MEMO_DB`` if set, else ``<XDG data dir>/memo/memo.db``."""
    env = os.environ.get("MEMO_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("memo")) / "memo.db"


def resolve_db_path(path: str | Path | None) -> Path:
    return Path(path).expanduser() if path else default_db_path()


def open_db(path: str | Path | None = None, *, write: bool = True) -> sqlite3.Connection:
    """Open the database.  ``write=True`` creates it and applies pending migrations (in one
    BEGIN IMMEDIATE); ``write=False`` is the read path: it only checks the schema version."""
    p = resolve_db_path(path)
    if not write:
        if not p.exists():
            raise StoreError(f"no database at {p}",
                             hint="add something first (`memo add` / `memo import`), or pass --db / MEMO_DB")
        conn = connect(p)
        check_schema(conn)
        return conn
    conn = connect(p)
    ensure_schema(conn)
    return conn
