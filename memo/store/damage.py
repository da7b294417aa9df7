"""Damaged databases: the cheap checks made at every open, and the "damaged" marker.

Cost model (docs/architecture.md section 8; measured costs: docs/results-log.md "Damaged
databases"): ``PRAGMA quick_check`` reads every page, so its cost grows with the file, to
seconds cold for a database of 100k passages with vectors.  So:

* every open reads the 100-byte SQLite header (``check_header``: magic, page size, format
  bytes) and checks the schema version against the tables present
  (``memo.store.migrations.check_tables``): two small reads;
* an open for writing runs ``quick_check`` first when the file (+ WAL) is at most 64 MiB
  (``memo.store.db.verify_for_write``, ``$MEMO_OPEN_CHECK_MB``);
* any operation that hits SQLite's "database disk image is malformed" / "file is not a
  database" (SQLITE_CORRUPT, SQLITE_NOTADB) writes a marker beside the file
  (``<db>-damaged``, JSON: when, what, the file's inode); while it is there, memo's write
  path (connections from ``memo.store.db.open_db``) refuses every write transaction, so
  nothing is written on top of a page known to be bad; reading stays possible;
* ``memo doctor`` runs the full checks; it clears the marker when the pages and canonical
  rows are intact (then ``memo reindex`` can rebuild damaged derived indexes) and sets it
  when they are not (then: ``memo restore``).  A verified restore clears it; a marker
  naming another inode (the file was replaced) is stale and ignored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from memo.errors import StoreBusy, StoreCorrupt, StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"
MARKER_SUFFIX = "-damaged"
_CORRUPT_CODES = {11, 26}          # SQLITE_CORRUPT (and its extended codes), SQLITE_NOTADB
_CORRUPT_WORDS = ("malformed", "not a database", "corrupt")

RESTORE_HINT = ("restore a backup (`memo restore <backup> --yes`); "
                "`memo doctor` says whether `memo reindex` is enough")


def check_header(path: str | Path) -> str | None:
    """What is wrong with the first 100 bytes of an existing file, or None when they are
    those of a SQLite 3 database.  A zero-byte file is reported too ("is empty")."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if size == 0:
        return "is empty (0 bytes)"
    if len(head) < 100:
        return f"is too short to be a SQLite database ({size} bytes)"
    if head[:16] != SQLITE_MAGIC:
        return "is not a SQLite database (no 'SQLite format 3' header)"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return f"has a damaged header: page size {page_size} is not a power of two in 512..65536"
    if head[18] not in (1, 2) or head[19] not in (1, 2):
        return f"has a damaged header: file format bytes {head[18]}/{head[19]} (expected 1 or 2)"
    if page_size - head[20] < 480:
        return f"has a damaged header: {head[20]} reserved bytes per page leave too little room"
    if (head[21], head[22], head[23]) != (64, 32, 32):
        return "has a damaged header: payload fractions are not 64/32/32"
    if int.from_bytes(head[44:48], "big") > 4:
        return f"has a damaged header: schema format {int.from_bytes(head[44:48], 'big')} (expected 1..4)"
    if int.from_bytes(head[56:60], "big") > 3:
        return f"has a damaged header: text encoding {int.from_bytes(head[56:60], 'big')} (expected 1..3)"
    return None


def is_corrupt_error(exc: BaseException | None) -> bool:
    """True for SQLITE_CORRUPT / SQLITE_NOTADB, raised directly or the cause of a MemoError
    (the search arms and the importer wrap SQLite errors in StoreError)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, sqlite3.DatabaseError):
            code = getattr(exc, "sqlite_errorcode", None)
            if code is not None and code & 0xFF in _CORRUPT_CODES:
                return True
            msg = str(exc).lower()
            return any(w in msg for w in _CORRUPT_WORDS)
        exc = exc.__cause__
        seen += 1
    return False


def store_error_from(exc: sqlite3.DatabaseError, action: str, *, path: str | Path | None = None) -> StoreError:
    """The typed memo error for a SQLite exception; a corruption error also marks ``path``."""
    msg = str(exc)
    if is_corrupt_error(exc):
        if path:
            mark_damaged(path, f"{action}: {msg}")
        return StoreCorrupt(f"{action} failed: {msg}", hint=RESTORE_HINT)
    if "locked" in msg or "busy" in msg:
        return StoreBusy(f"{action} failed: {msg}")
    return StoreError(f"{action} failed: {msg}")


def undecodable_text(action: str, exc: UnicodeDecodeError) -> StoreCorrupt:
    """A stored text that is not UTF-8: memo writes only UTF-8, so the row's bytes were
    damaged (a flipped bit in a payload; quick_check cannot see it).  Not marked: the pages
    are sound, only that row's text is wrong."""
    return StoreCorrupt(f"{action} failed: a stored text is not valid UTF-8 (a damaged row): {exc}",
                        hint="restore a backup (`memo restore <backup> --yes`), or forget and purge the record")


def db_path_of(conn: sqlite3.Connection) -> str:
    """The main database file of ``conn`` ('' for in-memory or when it cannot be asked)."""
    path = getattr(conn, "memo_path", None)
    if path:
        return str(path)
    try:
        for row in conn.execute("PRAGMA database_list"):
            if row[1] == "main":
                return row[2] or ""
    except sqlite3.Error:
        pass
    return ""


def marker_path(path: str | Path) -> Path:
    return Path(f"{path}{MARKER_SUFFIX}")


def _inode(path: str | Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def read_marker(path: str | Path) -> dict[str, Any] | None:
    """The damaged marker of database ``path``, or None (none, or stale: it names another
    file, i.e. the database file was replaced since)."""
    mpath = marker_path(path)
    try:
        raw = mpath.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return {"reason": "unreadable marker", "at": None, "inode": None}
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError
    except ValueError:
        doc = {"reason": raw.strip()[:200] or "marked damaged", "at": None, "inode": None}
    inode = doc.get("inode")
    if inode is not None and inode != _inode(path):
        return None
    return doc


def mark_damaged(path: str | Path, reason: str) -> bool:
    """Write the marker (atomically); keep the first reason if one is already there.
    Returns False when it cannot be written (read-only folder): nothing else to do then."""
    if not path or str(path) == ":memory:" or read_marker(path) is not None:
        return False
    doc = {"reason": reason[:500], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "inode": _inode(path)}
    mpath = marker_path(path)
    tmp = mpath.with_name(f".{mpath.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
        os.replace(tmp, mpath)
        return True
    except OSError:
        tmp.unlink(missing_ok=True)
        return False


def clear_marker(path: str | Path) -> bool:
    """Remove the marker; True when there was one."""
    try:
        marker_path(path).unlink()
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return False


def refuse_if_damaged(path: str | Path) -> None:
    """Raise StoreCorrupt when ``path`` carries a (current) damaged marker."""
    if not os.path.exists(marker_path(path)):
        return
    doc = read_marker(path)
    if doc is None:
        return
    when = f" on {doc['at']}" if doc.get("at") else ""
    raise StoreCorrupt(f"{path} was found damaged{when} ({doc.get('reason', 'unknown')}); writes are refused "
                       f"until it is checked",
                       hint="run `memo doctor`: it says whether `memo reindex` repairs it or a backup must be "
                            "restored (`memo restore <backup> --yes`)")
