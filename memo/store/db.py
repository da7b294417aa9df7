"""Where the database lives and how callers get a connection to it."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import platformdirs

from memo.errors import StoreCorrupt, StoreError, ValidationError
from memo.store.connect import MemoConnection, connect
from memo.store.damage import (
    check_lines,
    guarded_index_lines,
    mark_damaged,
    read_marker,
    split_integrity,
    store_error_from,
)
from memo.store.dialect import is_db_url
from memo.store.migrations import check_schema, ensure_schema
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.connection import PgConnection, redact


def default_db_path() -> Path:
    """``$MEMO_DB`` if set (and not empty), else ``<XDG data dir>/memo/memo.db``."""
    env = named_db(None)
    if env is not None:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("memo")) / "memo.db"


# ``scheme://`` as RFC 3986 spells a scheme, two letters or more: a one-letter "scheme" is
# a Windows drive (``C://x`` is a path there).
_URL_LIKE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")


def named_db(db: str | Path | None) -> str | Path | None:
    """The database the caller named: ``db``, else ``$MEMO_DB``; None for the default file.

    An empty ``$MEMO_DB`` counts as not set (the shell's ``${MEMO_DB:-default}``, and how
    click reads every option's variable): environments that cannot unset a variable
    (systemd, compose files, an MCP client's ``env``) clear it that way.  An empty or blank
    ``--db`` is refused: ``--db "$UNSET_VAR"`` in a script must not write into the user's
    real database.  A blank ``$MEMO_DB`` and any URL other than PostgreSQL's are refused
    too: SQLite would take ``sqlite:///x.db`` for a folder named ``sqlite:``."""
    if db is None:
        env = os.environ.get("MEMO_DB")
        return _checked(env, "$MEMO_DB", "unset MEMO_DB to use the default database") if env else None
    if isinstance(db, str):
        return _checked(db, "--db", "leave --db out to use $MEMO_DB or the default database")
    return db


def _checked(value: str, source: str, blank_hint: str) -> str:
    if not value.strip():
        raise ValidationError(f"{source} is {'empty' if not value else 'blank'}: it names no database",
                              hint=f"pass a database file path or a postgresql:// URL, or {blank_hint}")
    url = _URL_LIKE.match(value.strip())
    if url is not None and not is_db_url(value):
        shown = redact(value.strip())
        shown = shown if len(shown) <= 300 else shown[:300] + "…"
        raise ValidationError(f"{source} {shown} is a {url.group(1).lower()}:// URL; memo opens a SQLite "
                              "file path or a PostgreSQL URL",
                              hint="pass the database file's path, e.g. /tmp/x.db rather than sqlite:///tmp/x.db, "
                                   "or a postgresql://user@host/dbname URL")
    return value


def resolve_db_path(path: str | Path | None) -> Path:
    """The SQLite file ``path`` (else ``$MEMO_DB``, else the default) names; a PostgreSQL
    URL is refused (the caller works on files)."""
    named = named_db(path)
    if is_db_url(named):
        raise ValidationError("this command works on a SQLite database file, not a PostgreSQL URL",
                              hint="use the server's own tools (pg_dump, pg_restore) for PostgreSQL")
    return _usable(Path(named).expanduser()) if named is not None else default_db_path()


def _usable(p: Path) -> Path:
    """``p`` unless the system refuses the path itself (a name longer than the file system
    allows, a folder that is a file...): a ValidationError naming the problem, not a bare
    OSError (issue 33.5).  A missing file is fine: the write path creates it."""
    try:
        os.stat(p)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ValidationError(f"the database path {_shown(p)} cannot be used: {exc.strerror or exc}",
                              hint="pass --db / MEMO_DB with a usable file path") from None
    return p


def _shown(p: Path) -> str:
    return str(p) if len(str(p)) <= 300 else str(p)[:300] + "…"


def _creatable(p: Path) -> None:
    """Refuse, as the caller's input (exit 2), a new database file in a folder this process
    cannot write (nor create folders in): SQLite would only say "unable to open database
    file".  Checked on the nearest folder that exists (``connect`` creates the missing ones)."""
    folder = p.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ValidationError(f"cannot create the database {_shown(p)}: {_shown(folder)} is not a folder",
                              hint="pass --db / MEMO_DB with a path in a folder")
    if os.access(folder, os.W_OK | os.X_OK):
        return
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):      # AttributeError: no statvfs (Windows)
        read_only_fs = False
    why = "is on a read-only file system" if read_only_fs else "gives no permission to create files"
    raise ValidationError(f"cannot create the database {_shown(p)}: the folder {_shown(folder)} {why}",
                          hint="pass --db / MEMO_DB with a path in a folder you can write to")


def resolve_db(db: str | Path | None) -> str | Path:
    """Where ``db`` (or ``$MEMO_DB``, or the default file) points: a PostgreSQL URL as given,
    else the SQLite file's path (servers keep it to open more connections)."""
    named = named_db(db)
    if is_db_url(named):
        return str(named)
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


def open_db(path: str | Path | None = None, *, write: bool = True, create: bool = True) -> sqlite3.Connection:
    """Open the database.  A ``postgresql://`` URL (as ``path`` or in ``$MEMO_DB``) opens
    the PostgreSQL backend instead (``open_pg``).  ``write=True`` creates it and applies pending migrations (in one
    BEGIN IMMEDIATE); ``write=False`` is the read path: it only checks the schema version.

    Both check what is there first (issue 9.7): an existing zero-byte file is refused (it is
    not a memo database: a truncated copy, a failed download); the SQLite header
    (``connect``), the schema version against the tables present (``check_tables``).  Every
    SQLite error on the way is a typed StoreError (StoreCorrupt for damage).  The connection
    is *guarded*: ``write_tx`` refuses to write while the database carries a damaged marker
    (``memo.store.damage``); reading stays possible.

    ``create=False`` (commands that only make sense on an existing database: reindex,
    purge, forget, backfill...) refuses a missing SQLite file as the read path does, rather
    than creating an empty database for a mistyped --db.  A new file in a folder that cannot
    be written is a ValidationError naming the reason (``_creatable``).
    """
    named = named_db(path)
    if is_db_url(named):
        return open_pg(str(named), write=write)
    p = resolve_db_path(path)
    if not p.exists():
        if not write or not create:
            raise StoreError(f"no database at {p}",
                             hint="add something first (`memo add` / `memo import`), or pass --db / MEMO_DB")
        _creatable(p)
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
    rows = _check_lines(lambda: check_lines(conn, "PRAGMA quick_check(1)"))
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
