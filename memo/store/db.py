"""Where the database lives and how callers get a connection to it."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import platformdirs

from memo.errors import StoreCorrupt, StoreError, ValidationError
from memo.store.connect import MemoConnection, connect
from memo.store.damage import (
    guarded_index_lines,
    mark_damaged,
    read_marker,
    split_integrity,
    store_error_from,
)
from memo.store.dialect import is_db_url
from memo.store.migrations import check_schema, ensure_schema
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.connection import PgConnection


def default_db_path() -> Path:
    """``$MEMO_DB`` if set, else ``<XDG data dir>/memo/memo.db``."""
    env = os.environ.get("MEMO_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("memo")) / "memo.db"


def resolve_db_path(path: str | Path | None) -> Path:
    if is_db_url(path if path else os.environ.get("MEMO_DB")):
        raise ValidationError("this command works on a SQLite database file, not a PostgreSQL URL",
                              hint="use the server's own tools (pg_dump, pg_restore) for PostgreSQL")
    return _usable(Path(path).expanduser()) if path else default_db_path()


def _usable(p: Path) -> Path:
    """``p`` unless the system refuses the path itself (a name longer than the file system
    allows, a folder that is a file...): a ValidationError naming the problem, not a bare
    OSError (issue 33.5).  A missing file is fine: the write path creates it."""
    try:
        os.stat(p)
    except FileNotFoundError:
        pass
    except OSError as exc:
        shown = str(p) if len(str(p)) <= 300 else str(p)[:300] + "…"
        raise ValidationError(f"the database path {shown} cannot be used: {exc.strerror or exc}",
                              hint="pass --db / MEMO_DB with a usable file path") from None
    return p


def resolve_db(db: str | Path | None) -> str | Path:
    """Where ``db`` (or ``$MEMO_DB``, or the default file) points: a PostgreSQL URL as given,
    else the SQLite file's path (servers keep it to open more connections)."""
    value = db if db else os.environ.get("MEMO_DB")
    if is_db_url(value):
        return str(value)
    return resolve_db_path(db)


def open_pg(url: str, *, write: bool = True) -> PgConnection:
    """Connect to PostgreSQL; ``write=True`` applies pending migrations (one transaction
    under the writers' lock), ``write=False`` only checks the schema version."""
    conn = PgConnection(url)
    try:
        if write:
            pg_schema.ensure_schema(conn)
        else:
            pg_schema.check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def open_db(path: str | Path | None = None, *, write: bool = True) -> sqlite3.Connection:
    """Open the database.  A ``postgresql://`` URL (as ``path`` or in ``$MEMO_DB``) opens
    the PostgreSQL backend instead (``open_pg``).  ``write=True`` creates it and applies pending migrations (in one
    BEGIN IMMEDIATE); ``write=False`` is the read path: it only checks the schema version.

    Both check what is there first (issue 9.7): an existing zero-byte file is refused (it is
    not a memo database: a truncated copy, a failed download); the SQLite header
    (``connect``), the schema version against the tables present (``check_tables``).  Every
    SQLite error on the way is a typed StoreError (StoreCorrupt for damage).  The connection
    is *guarded*: ``write_tx`` refuses to write while the database carries a damaged marker
    (``memo.store.damage``); reading stays possible.
    """
    if is_db_url(path if path is not None else os.environ.get("MEMO_DB")):
        return open_pg(str(path if path is not None else os.environ["MEMO_DB"]), write=write)
    p = resolve_db_path(path)
    if not write and not p.exists():
        raise StoreError(f"no database at {p}",
                         hint="add something first (`memo add` / `memo import`), or pass --db / MEMO_DB")
    _refuse_empty(p)
    conn = connect(p)
    if isinstance(conn, MemoConnection):
        conn.memo_guarded = True
    try:
        if write:
            if not getattr(conn, "memo_readonly", None):   # read-only: no write will happen
                verify_for_write(conn, p)
            ensure_schema(conn)   # no write unless a migration is due (then StoreReadOnly)
        else:
            check_schema(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise store_error_from(exc, f"opening {p}", path=p) from exc
    except BaseException:
        conn.close()
        raise
    return conn


DEFAULT_OPEN_CHECK_MB = 64


def open_check_limit() -> int:
    """Largest database (bytes, main file + WAL) that gets a quick_check when opened for
    writing: ``$MEMO_OPEN_CHECK_MB`` (MiB; 0 turns it off), default 64 MiB (what the check
    costs: docs/results-log.md "Damaged databases")."""
    raw = os.environ.get("MEMO_OPEN_CHECK_MB", "")
    try:
        mb = float(raw) if raw.strip() else DEFAULT_OPEN_CHECK_MB
    except ValueError:
        raise ValidationError(f"MEMO_OPEN_CHECK_MB={raw!r} is not a number of MiB") from None
    return max(0, int(mb * 1024 * 1024))


def verify_for_write(conn: sqlite3.Connection, p: Path) -> None:
    """Before memo writes into a file, ``PRAGMA quick_check`` it when it is small enough
    (``open_check_limit``): damage found marks it, and ``write_tx`` then refuses every write
    (reads stay possible).  Larger files rely on the marker set when an operation meets
    damage, and on ``memo doctor``.

    Then ``PRAGMA integrity_check`` of the tables whose UNIQUE indexes writes rely on
    (``memo.store.damage.UNIQUE_GUARDED``): quick_check never compares an index with its
    table, and a dedup index that misses a row lets ``memo add`` store a second live copy.
    An index that disagrees marks the file for ``memo reindex`` (which may write through
    that marker).  It reads those tables and their indexes (records: most of a database
    without vectors): about a fifth of quick_check's time (docs/results-log.md)."""
    if read_marker(p) is not None:
        return
    try:
        size = sum(os.path.getsize(f) for f in (p, f"{p}-wal") if os.path.exists(f))
    except OSError:
        return
    if size == 0 or size > open_check_limit():
        return
    rows = _check_lines(lambda: [str(r[0]) for r in conn.execute("PRAGMA quick_check(1)")])
    if rows is None:
        return
    if rows != ["ok"]:
        mark_damaged(p, f"quick_check before writing: {'; '.join(rows)[:300]}")
        return
    lines = _check_lines(lambda: guarded_index_lines(conn))
    if lines:
        indexes, other = split_integrity(lines)
        mark_damaged(p, f"integrity_check before writing: {'; '.join(lines)[:300]}",
                     repair=None if other else "reindex")


def _check_lines(check: Callable[[], list[str]]) -> list[str] | None:
    """A check's lines; its error as one line; None when another process holds the file
    (locked or busy: no verdict, the write's own transaction will wait or say StoreBusy)."""
    try:
        return check()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None
        return [str(exc)]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]


def _refuse_empty(p: Path) -> None:
    try:
        empty = p.is_file() and p.stat().st_size == 0
    except OSError:
        return
    if empty:
        raise StoreCorrupt(f"the database file {p} is empty (0 bytes): it is not a memo database",
                           hint="delete it to start a new database, or restore a backup into it "
                                "(`memo restore <backup> --yes`)")
