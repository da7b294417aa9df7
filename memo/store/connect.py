"""The one connection factory.  Every PRAGMA memo relies on is set here and nowhere else.

* ``journal_mode=WAL``: readers never block the writer and the writer never blocks readers.
* ``busy_timeout=10000`` ms: a writer waits up to 10 s for the lock instead of failing.
* ``foreign_keys=ON``: passages, tags and vectors cannot outlive their record.
* ``cache_size=-65536`` (64 MiB per connection, filled only as pages are read): SQLite's
  default 2 MiB keeps only a corner of a large database's B-trees, so every search re-read
  the interior pages of ``passages`` and ``records`` through the OS for each candidate's
  metadata (several times slower at 100k passages under I/O pressure: docs/results-log.md
  "SQLite page cache").  ``mmap_size`` would be faster still, but turns an
  I/O error or a file truncated under the map into SIGBUS instead of an error memo can
  report (memo/store/damage.py), so it is not used.
* Read-only files open read-only (``read_only_reason``): a file or folder memo may not
  write (a read-only mount, file modes, an immutable file) is opened with ``mode=ro`` and
  no PRAGMA that writes (the WAL switch is skipped), so searches work; a write is refused
  with StoreReadOnly before it begins (``write_tx``).  In a folder that cannot take the
  ``-shm`` file SQLite cannot open a WAL database read-only at all, so there it is opened
  ``immutable=1`` (no locks, no shared memory) when nothing else can have it open: no
  ``-shm`` file and no unfinished ``-wal`` beside it, and a folder nobody can write (a
  read-only file system, or no write bit at all), so no writer can start meanwhile.
* A long-running server gives a connection's cache back after a large write
  (``release_memory``): a 4.5 MB note filled it with pages no search reads again.
* ``synchronous=FULL``: chosen over NORMAL because memo promises *durable on ack*.  In WAL
  mode NORMAL is safe from corruption and survives a process crash, but the last commits may
  roll back after a power loss or OS crash; FULL fsyncs the WAL on every commit.  Commits
  are per batch (import) or per command (add), so the fsync cost stays small.  Set
  ``MEMO_SYNCHRONOUS=NORMAL`` to trade that window for write speed (docs/architecture.md).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memo.errors import (
    DiskFull,
    MemoError,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreReadOnly,
    ValidationError,
)
from memo.store.damage import (
    NOT_A_FILE_HINT,
    NOT_MEMO_HINT,
    RESTORE_HINT,
    check_header,
    clear_marker,
    db_path_of,
    fault_from,
    is_corrupt_error,
    mark_damaged,
    not_a_file,
    refuse_if_damaged,
    store_error_from,
    undecodable_text,
)
from memo.store.dialect import is_db_url, is_postgres
from memo.store.postgres import tx as pg_tx
from memo.store.postgres.connection import redact
from memo.store.write_queue import writer_turn

BUSY_TIMEOUT_MS = 10_000
PAGE_CACHE_KIB = 65_536     # PRAGMA cache_size, per connection (module docstring)
_SYNC_MODES = {"FULL", "NORMAL"}


def release_memory(*conns: object) -> None:
    """Hand memory a large write left behind back to the OS, in a long-running process
    (memo-mcp, memo web; issue 33.3): each SQLite connection's page cache (``PRAGMA
    shrink_memory``: the cache refills from the OS's file cache as pages are read), then
    the C heap's free pages (glibc ``malloc_trim``: the megabyte strings and the thousands
    of passage objects of one big add are freed into the heap, which glibc otherwise keeps).
    One 4.5 MB ``memory_add`` left memo-mcp about 160 MB larger before this; measured
    in-process: 203 MB -> 66 MB.  Best effort: a connection that cannot run it (PostgreSQL,
    closed) and a libc without ``malloc_trim`` are skipped."""
    for conn in conns:
        if conn is None or is_postgres(conn):
            continue
        try:
            conn.execute("PRAGMA shrink_memory")  # type: ignore[attr-defined]
        except sqlite3.Error:
            pass
    _malloc_trim()


def _malloc_trim() -> None:
    global _TRIM
    if _TRIM is None:
        import ctypes
        import ctypes.util

        try:
            _TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):     # not glibc (macOS, musl): nothing to trim
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None


def _synchronous() -> str:
    mode = os.environ.get("MEMO_SYNCHRONOUS", "FULL").upper()
    if mode not in _SYNC_MODES:
        raise ValidationError(f"MEMO_SYNCHRONOUS={mode!r} is not one of {sorted(_SYNC_MODES)}")
    return mode


class MemoConnection(sqlite3.Connection):
    """A ``sqlite3.Connection`` that knows its file (``memo_path``), whether memo's write
    path guards it (``memo_guarded``: ``write_tx`` refuses a database marked damaged;
    set by ``memo.store.db.open_db``) and why it was opened read-only (``memo_readonly``,
    None when writable: ``write_tx`` refuses at once).  The plain class takes no attributes."""

    memo_path: Path | None = None
    memo_guarded: bool = False
    memo_readonly: str | None = None
    memo_file: str | None = None       # ``db_file``'s answer, once asked


def db_file(conn: sqlite3.Connection) -> str:
    """The main database's file as SQLite names it (``PRAGMA database_list``; '' in memory):
    the key of the per-process indexes a search reads (keyword impact index and postings,
    vector matrix, mention graph).  A connection's main file never changes, so a
    ``MemoConnection`` asks once (a search asked ~7 times)."""
    known = getattr(conn, "memo_file", None)
    if known is not None:
        return known
    row = conn.execute("PRAGMA database_list").fetchone()
    path = str(row[2] or "") if row is not None else ""
    if isinstance(conn, MemoConnection):
        conn.memo_file = path
    return path


def read_only_reason(path: Path) -> str | None:
    """Why memo cannot write the existing database ``path`` (None: it can).  Writing needs
    the file and its folder (the -wal, -shm and lock files are created beside it).
    ``os.access`` answers for this process: it sees read-only mounts and immutable files
    even for root, which ignores file modes."""
    folder = path.parent
    ro_fs = _read_only_fs(folder)
    fs = " (a read-only file system)" if ro_fs else ""
    if not os.access(path, os.W_OK):
        return f"the file {path} is read-only{fs}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is read-only{fs}"
    return None


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only (module docstring: when ``immutable=1``)."""
    folder = path.parent
    if os.access(folder, os.W_OK | os.X_OK) or os.path.exists(f"{path}-shm"):
        return f"file:{path}?mode=ro"
    try:
        unfinished = os.path.getsize(f"{path}-wal") > 0
    except OSError:
        unfinished = False
    if unfinished:
        raise StoreReadOnly(f"{path} cannot be read here: its folder is read-only and it has an unfinished "
                            f"write-ahead log ({path.name}-wal) that SQLite can only read with a -shm file "
                            "beside it", hint="open it once where it can be written (or copy the file, its -wal "
                                              "included, to a writable folder), then read it")
    try:
        nobody_writes = _read_only_fs(folder) or not (os.stat(folder).st_mode & 0o222)
    except OSError:
        nobody_writes = False
    if not nobody_writes:
        # Another user may write here: a shared-nothing immutable open could read pages
        # while they change.  SQLite's own error follows (unable to open), named read-only.
        return f"file:{path}?mode=ro"
    return f"file:{path}?mode=ro&immutable=1"


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` with memo's settings.  Autocommit mode: transactions are explicit
    (``write_tx``), so no statement ever opens a DEFERRED transaction behind our back.

    An existing non-empty file must carry a sane SQLite header (``check_header``), else
    StoreCorrupt.  A missing file is created whole: a one-page WAL database is built under
    a private name and hard-linked into place, so no other process ever sees memo's new
    database as a zero-byte file (``open_db`` refuses those: they are not memo databases).
    A PostgreSQL URL is refused (``open_db`` opens those): it must never become a
    directory tree named after the URL.
    """
    if is_db_url(str(path)):
        raise ValidationError(f"{redact(str(path))} is a PostgreSQL URL, not a SQLite file",
                              hint="open it with memo.store.db.open_db (the CLI's --db does)")
    path = Path(path)
    # A folder, a FIFO, a device (/dev/null) is never a database: refused before SQLite
    # opens it, which would create "<path>-journal" beside it (issue 33.5).
    kind = not_a_file(path)
    if kind:
        raise StoreError(f"{path} {kind}, not a memo database file", hint=NOT_A_FILE_HINT)
    ro_reason = read_only_reason(path) if os.path.exists(path) else None
    if not readonly and ro_reason is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_fault(exc, f"cannot create the folder {path.parent}", path.parent) from exc
        if not os.path.lexists(path):
            _create_whole(path)
            # A damaged marker left beside a deleted database names that file, not this new
            # one, which may well have its inode (file systems reuse freed inodes at once):
            # kept, it refused every write to a database created to start over.
            clear_marker(path)
    header_cached = False
    if os.path.exists(path) and os.path.getsize(path) > 0:
        header_cached = _check_header_once(path)
    # mode=rw: never let SQLite create a file here (it would start empty); see above.
    if readonly or ro_reason:
        uri = _read_only_uri(path)
    else:
        uri = f"file:{path}?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False, factory=MemoConnection)
    except sqlite3.OperationalError as exc:
        fault = fault_from(exc, f"opening {path}", path)
        if ro_reason and fault is None:
            fault = StoreReadOnly(f"cannot open {path}: {ro_reason} ({exc})")
        raise (fault or StoreError(f"cannot open database {path}: {exc}")) from exc
    conn.memo_path = path
    conn.memo_readonly = ro_reason or ("opened read-only" if readonly else None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        if not conn.memo_readonly and not _foreign(conn):
            _enable_wal(conn)
        conn.execute(f"PRAGMA synchronous={_synchronous()}")
    except UnicodeDecodeError as exc:
        # SQLite's error for a damaged schema quotes the schema's text; when those bytes are
        # not UTF-8 Python's sqlite3 raises this instead of the DatabaseError (a bit flip
        # in sqlite_schema: `memo doctor` said "the input holds text that is not valid Unicode").
        conn.close()
        raise store_error_from(sqlite3.DatabaseError(f"malformed database schema ({exc})"),
                               f"opening {path}", path=path) from exc
    except (sqlite3.DatabaseError, MemoError) as exc:
        conn.close()
        if header_cached and _not_a_database(exc):
            _recheck_header(path)
        if isinstance(exc, MemoError):
            raise
        raise store_error_from(exc, f"opening {path}", path=path) from exc
    return conn


def _os_fault(exc: OSError, action: str, where: Path) -> StoreError:
    """A typed error for an OSError met creating memo's files: no room, no write access."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFull(f"{action}: disk full ({where})")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreReadOnly(f"{action}: {exc.strerror} ({where})")
    return StoreError(f"{action}: {exc.strerror or exc}")


# (st_dev, st_ino) of database files whose header this process has read.  check_header
# opens and closes the file, and on POSIX closing *any* descriptor of a file drops every
# fcntl lock the process holds on it, SQLite's included: done while another connection of
# this process is in a transaction (a server's embedder thread opening its connection
# while a write commits), another process could take the database for unused, checkpoint
# and delete its WAL ("database disk image is malformed" in the 4-writer soak).  So the
# header is read when a process first opens a file (no SQLite lock of ours on it yet);
# later opens of the same file skip it (SQLite reports a header damaged since then itself).
_HEADER_CHECKED: set[tuple[int, int]] = set()


def _check_header_once(path: Path) -> bool:
    """Raise the typed error for a bad header; True when the header was not read because
    this process had read it before (see ``_recheck_header``)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    key = (st.st_dev, st.st_ino) if st is not None else None
    if key is not None and key in _HEADER_CHECKED:
        return True
    problem = check_header(path)
    if problem and problem.startswith("is not a memo database"):
        raise StoreError(f"{path} {problem}", hint=NOT_MEMO_HINT)
    if problem:
        raise StoreCorrupt(f"the database {path} {problem}", hint=RESTORE_HINT)
    if key is not None:
        _HEADER_CHECKED.add(key)
    return False


def _not_a_database(exc: BaseException) -> bool:
    """SQLite's SQLITE_NOTADB, raised directly or as the cause of a MemoError: the only
    refusal after which the header is read again (``_recheck_header``).  Never after a busy
    or locked database, whose locks another connection of this process may hold."""
    while exc is not None:
        if isinstance(exc, sqlite3.DatabaseError):
            return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_NOTADB
        exc = exc.__cause__
    return False


_SQLITE_NOTADB = 26


def _recheck_header(path: Path) -> None:
    """SQLite refused a file whose header this process had passed.  A file system reuses
    the inode of a deleted file, so the file may be another one (a text file written where
    a database was deleted): read its header now, to say "not a memo database" rather than
    "damaged".  Nothing of ours holds a lock on a file SQLite cannot read as a database."""
    try:
        st = os.stat(path)
        _HEADER_CHECKED.discard((st.st_dev, st.st_ino))
    except OSError:
        return
    _check_header_once(path)


def _foreign(conn: sqlite3.Connection) -> bool:
    """True for another program's database (tables, none of memo's, not in WAL mode):
    its journal mode is left alone; ``open_db`` refuses it right after."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return False
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    return bool(names) and "records" not in names


def _create_whole(path: Path) -> None:
    """Create an empty WAL-mode SQLite database at ``path`` unless something is there."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        fresh = sqlite3.connect(tmp, isolation_level=None)
        try:
            fresh.execute("PRAGMA journal_mode=WAL")   # writes page 1: the header
        finally:
            fresh.close()
        try:
            os.link(tmp, path)          # atomic, never replaces: a concurrent creator may win
        except FileExistsError:
            pass
        except OSError:                 # no hard links here (some network / FUSE file systems)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return
            with os.fdopen(fd, "wb") as out:
                out.write(tmp.read_bytes())
                out.flush()
                os.fsync(out.fileno())
    except OSError as exc:
        raise _os_fault(exc, f"cannot create the database {path}", path.parent) from exc
    except sqlite3.Error as exc:
        raise (fault_from(exc, f"creating the database {path}", path.parent)
               or StoreError(f"cannot create the database {path}: {exc}")) from exc
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                Path(f"{tmp}{suffix}").unlink(missing_ok=True)
            except OSError:       # e.g. a name too long to exist: nothing to remove, keep the real error
                pass


def _enable_wal(conn: sqlite3.Connection) -> None:
    # Switching to WAL takes a brief exclusive lock that ignores the busy handler, so
    # several processes opening a cold file at once can see "database is locked"
    # (tobi/qmd src/db.ts documents the same race).  Retry for up to busy_timeout.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() == "wal":
                return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise (fault_from(exc, "switching to WAL mode", db_path_of(conn))
                       or StoreError(f"cannot enable WAL: {exc}")) from exc
        except sqlite3.DatabaseError as exc:  # "file is not a database": not SQLite, or damaged
            raise StoreCorrupt(f"cannot open the database: {exc}") from exc
        if time.monotonic() > deadline:
            raise StoreBusy("could not switch the database to WAL mode: still locked")
        time.sleep(0.02)


@contextmanager
def write_tx(conn: sqlite3.Connection, *, reindexing: bool = False) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; rollback on any error.

    IMMEDIATE takes the write lock up front, so the busy handler applies; a DEFERRED
    transaction that reads and then writes can get SQLITE_BUSY at once, without waiting.
    Before it, the writer takes its turn in the writers' queue (``memo.store.write_queue``:
    a file lock: ~1 ms of polling, then a kernel wait), so waiting writers do not sleep through a free lock
    in SQLite's busy handler; the turn is held until COMMIT or ROLLBACK.

    A connection from memo's write path (``open_db``) first checks the damaged marker
    (``memo.store.damage``): a database found damaged takes no write until ``memo doctor``
    or a restore clears it.  SQLite's corruption errors inside the transaction roll it back,
    mark the database and come out as StoreCorrupt.  ``reindexing`` (``memo reindex``) may
    write through a marker that names damaged indexes only.

    A connection opened read-only (``memo_readonly``) is refused before anything else:
    StoreReadOnly, not a SQLite error from the middle of the operation.  A full disk or a
    file that became read-only meanwhile comes out as DiskFull / StoreReadOnly.
    """
    if is_postgres(conn):
        yield from pg_tx.write_tx(conn)
        return
    ro = getattr(conn, "memo_readonly", None)
    if ro:
        raise StoreReadOnly(f"cannot write to {db_path_of(conn)}: {ro}")
    if getattr(conn, "memo_guarded", False):
        refuse_if_damaged(db_path_of(conn), reindexing=reindexing)
    deadline = time.monotonic() + 3 * BUSY_TIMEOUT_MS / 1000
    with writer_turn(conn, deadline):
        yield from _write_tx(conn, deadline)


def _rollback(conn: sqlite3.Connection) -> None:
    """ROLLBACK if a transaction is still open (SQLite ends it by itself after some
    errors, e.g. SQLITE_CORRUPT; a ROLLBACK then would raise and hide the real error)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _corrupt_from(conn: sqlite3.Connection, err: BaseException, action: str) -> StoreCorrupt | None:
    """When ``err`` is (or wraps) a SQLite corruption error: mark the database and return
    the StoreCorrupt to raise; else None."""
    if not (isinstance(err, StoreCorrupt) or is_corrupt_error(err)):
        return None
    path = db_path_of(conn)
    if path:
        mark_damaged(path, f"{action}: {err}")
    if isinstance(err, StoreCorrupt):
        return err
    return StoreCorrupt(f"{action} failed: {err}", hint=RESTORE_HINT)


def _write_tx(conn: sqlite3.Connection, deadline: float) -> Iterator[sqlite3.Connection]:
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if ("locked" in str(exc) or "busy" in str(exc)) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(f"database stayed locked: {exc}") from exc
            raise store_error_from(exc, "write", path=db_path_of(conn)) from exc
        except sqlite3.DatabaseError as exc:
            raise store_error_from(exc, "write", path=db_path_of(conn)) from exc
    try:
        yield conn
    except BaseException as err:
        _rollback(conn)
        corrupt = _corrupt_from(conn, err, "write")
        if corrupt is not None and corrupt is not err:
            raise corrupt from err
        # A full disk or a read-only file met mid-write, raw or wrapped by an operation
        # (the importer's "import stopped"): named for what it is.
        fault = None if corrupt is not None else fault_from(err, "write", db_path_of(conn))
        if fault is not None and not isinstance(err, (DiskFull, StoreReadOnly)):
            raise fault from err
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            # Not StoreBusy: COMMIT in a transaction begun IMMEDIATE holds the write lock
            # already; it fails for a full disk, an I/O error or damage (store_error_from).
            _rollback(conn)
            corrupt = _corrupt_from(conn, exc, "commit")
            if corrupt is not None:
                raise corrupt from exc
            raise store_error_from(exc, "commit (rolled back)", path=db_path_of(conn)) from exc


# id(conn) -> (conn, PRAGMA data_version) while ``read_tx`` holds a snapshot on conn (the
# connection is held so its id cannot be reused while the entry lives).
_SNAPSHOT_VERSION: dict[int, tuple[sqlite3.Connection, int]] = {}


def snapshot_data_version(conn: sqlite3.Connection) -> int | None:
    """``PRAGMA data_version`` of the read snapshot ``read_tx`` holds on ``conn``, read when
    the snapshot began; None outside one (ask the connection)."""
    entry = _SNAPSHOT_VERSION.get(id(conn))
    return entry[1] if entry is not None and entry[0] is conn else None


@contextmanager
def read_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read snapshot: every statement inside sees the same committed state.

    In WAL mode a DEFERRED transaction takes its snapshot at its first read, so one is made
    at once (a read of ``sqlite_schema``): a scope filter and the arm query that applies it
    can then never see two different states, which is what made a commit landing between
    them leak out-of-scope rows (issue 9).  ``PRAGMA data_version`` inside the transaction
    describes the same snapshot, so per-connection caches keyed on it stay consistent.
    A connection already inside a transaction keeps it (its snapshot is already one).
    On PostgreSQL: REPEATABLE READ (``memo.store.postgres.tx``).
    """
    if is_postgres(conn):
        yield from pg_tx.read_tx(conn)
        return
    if conn.in_transaction:
        yield conn
        return
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        # The snapshot's data version, read once: per-connection caches (memo.retrieve.
        # conn_cache) key on it, and a search asked PRAGMA data_version ~10 times (a tenth of
        # an eval replay's time per search) for a value that cannot move inside the snapshot.
        _SNAPSHOT_VERSION[id(conn)] = (conn, conn.execute("PRAGMA data_version").fetchone()[0])
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreBusy(f"could not start a read snapshot: {exc}") from exc
        raise StoreError(f"could not start a read snapshot: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        _rollback(conn)
        raise store_error_from(exc, "reading the database", path=db_path_of(conn)) from exc
    try:
        yield conn
    except sqlite3.DatabaseError as exc:
        # Whatever statement of the body met a damaged page: typed error, database marked.
        _rollback(conn)
        raise store_error_from(exc, "reading the database", path=db_path_of(conn)) from exc
    except UnicodeDecodeError as exc:
        _rollback(conn)
        raise undecodable_text("reading the database", exc) from exc
    except MemoError as err:
        _rollback(conn)
        corrupt = _corrupt_from(conn, err, "reading the database")
        if corrupt is not None and corrupt is not err:
            raise corrupt from err
        raise
    finally:
        _SNAPSHOT_VERSION.pop(id(conn), None)
        # A read transaction commits nothing; ROLLBACK also ends it if a write slipped in.
        _rollback(conn)
