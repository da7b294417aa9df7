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
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from memo.errors import DiskFull, StoreBusy, StoreCorrupt, StoreError, StoreReadOnly

SQLITE_MAGIC = b"SQLite format 3\x00"
MARKER_SUFFIX = "-damaged"
_CORRUPT_CODES = {11, 26}          # SQLITE_CORRUPT (and its extended codes), SQLITE_NOTADB
_CORRUPT_WORDS = ("malformed", "not a database", "corrupt")
_READONLY, _IOERR, _FULL, _CANTOPEN = 8, 10, 13, 14      # SQLite primary result codes
# Below this much free space an I/O error is taken for a full disk: SQLite reports ENOSPC
# as SQLITE_FULL only for the main file and the WAL; growing the -shm or creating a file
# fails as a plain SQLITE_IOERR / SQLITE_CANTOPEN (Python cannot ask for the errno).
LOW_SPACE_BYTES = 1 << 20

RESTORE_HINT = ("restore a backup (`memo restore <backup> --yes`); "
                "`memo doctor` says whether `memo reindex` is enough")
NOT_MEMO_HINT = ("pass --db (or MEMO_DB) with memo's database file, or a new file path to start one; "
                 "if this file was memo's database, its first page is destroyed: restore a backup "
                 "(`memo restore <backup> --yes`)")


NOT_A_FILE_HINT = "pass --db (or MEMO_DB) with memo's database file (a new file path starts one)"


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file ("is a folder", "is a
    character device"...), else None.  Follows symbolic links."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return f"is {name}"
    return "is not a regular file"


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
    if len(head) < 100 and not SQLITE_MAGIC.startswith(head[:16]):
        what = "it holds text" if _looks_like_text(path) else f"{size} bytes"
        return f"is not a memo database: not a SQLite database ({what})"
    if len(head) < 100:
        return f"is too short to be a SQLite database ({size} bytes)"
    if head[:16] != SQLITE_MAGIC:
        if (head[21], head[22], head[23]) == (64, 32, 32) and sum(a != b for a, b in zip(head[:16], SQLITE_MAGIC, strict=True)) <= 2:
            # The rest of the header is SQLite's: damage to the magic, not another file.
            return "has a damaged header: the 'SQLite format 3' magic is damaged (not a SQLite database as it is)"
        # Nothing of SQLite's: the wrong file (--db pointing at notes, a download...), said
        # so first, so nobody restores a backup over their text file.
        what = "it holds text" if _looks_like_text(path) else "no 'SQLite format 3' header"
        return f"is not a memo database: not a SQLite database ({what})"
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


def _looks_like_text(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3     # a character cut at the 4096th byte
    return True


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


def free_bytes(path: str | Path) -> int | None:
    """Free bytes (for an unprivileged user) on the file system holding ``path`` (a file,
    or a folder), or None when it cannot be asked."""
    p = Path(path)
    for candidate in (p, p.parent):
        try:
            st = os.statvfs(candidate)
            return st.f_bavail * st.f_frsize
        except OSError:
            continue
    return None


def fault_from(exc: BaseException, action: str, path: str | Path | None) -> StoreError | None:
    """StoreReadOnly or DiskFull when ``exc`` (or what it wraps) says the file cannot be
    written or the disk is full: neither is damage, so nothing is marked.  None otherwise."""
    seen = 0
    while exc is not None and seen < 5 and not isinstance(exc, sqlite3.Error):
        exc = exc.__cause__
        seen += 1
    if not isinstance(exc, sqlite3.Error):
        return None
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    msg = str(exc)
    where = f" ({path})" if path else ""
    if code == _READONLY or "readonly database" in msg:
        return StoreReadOnly(f"{action} failed: the database{where} is read-only ({msg})")
    if code == _FULL or "disk is full" in msg:
        return DiskFull(f"{action} failed: disk full{where} ({msg})")
    if code in (_IOERR, _CANTOPEN) and path:
        free = free_bytes(path)
        if free is not None and free < LOW_SPACE_BYTES:
            return DiskFull(f"{action} failed: disk full{where}: {free} bytes free ({msg})")
    return None


def store_error_from(exc: sqlite3.DatabaseError, action: str, *, path: str | Path | None = None) -> StoreError:
    """The typed memo error for a SQLite exception; a corruption error also marks ``path``.
    A read-only file or a full disk is named as such (``fault_from``), never as damage or
    as another process's lock."""
    msg = str(exc)
    if is_corrupt_error(exc):
        if path:
            mark_damaged(path, f"{action}: {msg}")
        return StoreCorrupt(f"{action} failed: {msg}", hint=RESTORE_HINT)
    fault = fault_from(exc, action, path)
    if fault is not None:
        return fault
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


def mark_damaged(path: str | Path, reason: str, *, repair: str | None = None) -> bool:
    """Write the marker (atomically); keep the first reason if one is already there.
    ``repair="reindex"``: only indexes disagree with their tables (``index_damage``), so
    ``memo reindex`` may write through the marker to rebuild them.
    Returns False when it cannot be written (read-only folder): nothing else to do then."""
    if not path or str(path) == ":memory:" or read_marker(path) is not None:
        return False
    doc = {"reason": reason[:500], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "inode": _inode(path)}
    if repair:
        doc["repair"] = repair
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


REINDEX_HINT = ("run `memo reindex`: it rebuilds every index from the stored rows (nothing is lost), "
                "then writes work again")


def refuse_if_damaged(path: str | Path, *, reindexing: bool = False) -> None:
    """Raise StoreCorrupt when ``path`` carries a (current) damaged marker.  A marker that
    says only indexes are damaged lets ``memo reindex`` (``reindexing``) through."""
    if not os.path.exists(marker_path(path)):
        return
    doc = read_marker(path)
    if doc is None:
        return
    when = f" on {doc['at']}" if doc.get("at") else ""
    if doc.get("repair") == "reindex":
        if reindexing:
            return
        raise StoreCorrupt(f"{path}: indexes disagree with their tables (found{when}: {doc.get('reason', '?')}); "
                           "writes are refused until they are rebuilt (a write could store a second copy of a "
                           "record or miss one)", hint=REINDEX_HINT)
    raise StoreCorrupt(f"{path} was found damaged{when} ({doc.get('reason', 'unknown')}); writes are refused "
                       f"until it is checked",
                       hint="run `memo doctor`: it says whether `memo reindex` repairs it or a backup must be "
                            "restored (`memo restore <backup> --yes`)")


# --- Indexes against their tables (issue 33.2) ---------------------------------------------
#
# ``quick_check`` reads every page but never compares an index with its table, so an index
# entry whose key bytes changed passes it: a lookup through the index then misses the row
# (``memo get`` says NotFound) and a UNIQUE index no longer stops a second live copy.
# ``PRAGMA integrity_check(T)`` does compare them, for table T and its indexes only.

# Canonical tables whose uniqueness indexes memo's writes rely on (dedup by content hash,
# ids), and ``entities`` (its UNIQUE key decides whether a mention makes a new entity).
UNIQUE_GUARDED = ("records", "facts", "entities")
_INDEX_LINE = re.compile(r"(?:row \d+ missing from index|wrong # of entries in index|"
                         r"non-unique entry in index) (\S+)")
# A b-tree of a full-text index (its shadow tables): derived from the rows, rebuilt by
# ``memo reindex`` like any index (the probe: a flip in passages_fts_idx said "restore").
_FTS_SHADOW = re.compile(r"\b((?:passages|exact|facts)_fts_(?:data|idx|docsize|config))\b")


def is_fts_shadow(table: str) -> bool:
    """A shadow table of one of memo's full-text indexes (derived, rebuilt by reindex)."""
    return _FTS_SHADOW.fullmatch(table) is not None


def split_integrity(lines: list[str]) -> tuple[set[str], list[str]]:
    """(names of indexes that disagree with their table, every other problem line) of
    ``integrity_check`` output.  Only the first kind is repaired by ``REINDEX``."""
    indexes: set[str] = set()
    other: list[str] = []
    for line in lines:
        if line == "ok":
            continue
        m = _INDEX_LINE.search(line) or _FTS_SHADOW.search(line)
        if m:
            indexes.add(m.group(1))
        else:
            other.append(line)
    return indexes, other


def _lenient(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def check_lines(conn: sqlite3.Connection, sql: str) -> list[str]:
    """The lines of a check pragma (quick_check, integrity_check), read with U+FFFD for
    bytes that are not UTF-8: a damaged page's message quotes its key bytes, cut anywhere,
    and sqlite3 raised UnicodeDecodeError for it, which `memo doctor` reported as "the input
    holds text that is not valid Unicode" instead of the damage it found."""
    old = conn.text_factory
    conn.text_factory = _lenient
    try:
        return [str(r[0]) for r in conn.execute(sql)]
    finally:
        conn.text_factory = old


def integrity_lines(conn: sqlite3.Connection, table: str | None = None, limit: int = 100) -> list[str]:
    """``PRAGMA integrity_check`` of the whole file, or of ``table`` and its indexes."""
    sql = f'PRAGMA integrity_check("{table}")' if table else f"PRAGMA integrity_check({limit})"
    try:
        rows = check_lines(conn, sql)
    except sqlite3.DatabaseError as exc:
        rows = [f"integrity_check stopped: {exc}"]
    return rows[:limit]


# ``memo doctor``'s default ``indexes`` check adds passages (its UNIQUE ids): it reads the
# largest table, too slow for every write's open check, cheap enough when asked.
DOCTOR_GUARDED = (*UNIQUE_GUARDED, "passages")


def guarded_index_lines(conn: sqlite3.Connection, tables: tuple[str, ...] = UNIQUE_GUARDED) -> list[str]:
    """``integrity_check`` lines (never "ok") of ``tables`` (those present)."""
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    out: list[str] = []
    for table in tables:
        if table in present:
            out += [line for line in integrity_lines(conn, table) if line != "ok"]
    return out
