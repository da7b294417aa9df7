"""Restore the database from a backup file, safely even while other memo processes have it open.

Steps:

1. The backup file is checked before anything is touched: SQLite header, it opens
   read-only, ``integrity_check`` is ok, its schema (``PRAGMA user_version``) is not newer
   than this memo's ``LATEST``, and it holds memo's tables.
2. It is copied with the SQLite backup API into a private temporary file *next to the live
   database* (same file system), migrated there if it is older than this memo, and verified
   again: ``integrity_check`` ok and every counted table holds as many rows as the backup.
3. The previous state is kept: an online-backup snapshot of the live database, verified,
   at ``<db>.before-restore-<UTC time>`` (unless ``keep_previous=False``).
4. The verified copy is written *into the live database through SQLite*: the backup API
   with the live database as the destination.  In WAL mode SQLite does that as one write
   transaction: every page is written to the ``-wal`` and committed at once, so another
   connection sees either the whole old database or the whole restored one, never a mix;
   the schema cookie is bumped so their prepared statements reload the schema; a failure
   part way (disk full, crash) rolls back and leaves the old database intact.

Why not rename the copy over the database file: other processes keep the *old* file open
(their descriptors point to the old inode) and keep writing to it, and the ``-wal``/``-shm``
beside the name still belong to the old file: on their next checkpoint, or when the next
process opens the new file, SQLite would replay the old ``-wal`` frames onto the restored
pages (corruption) or the processes' acknowledged writes would silently land in a file no
one will ever read again (loss).  Going through SQLite uses the same locks as every other
writer, so neither can happen.

Only when the live file is not a SQLite database at all (destroyed header: SQLite cannot
open it, so nobody can be using it) is the verified copy renamed into place; then the
damaged file is moved aside as the safety copy, and this is refused if a ``-wal``/``-shm``
is beside it (someone may still have it open; it would be replayed onto the new file).

In-memory vector matrices and mention graphs of other processes notice the change because
the copy carries a ``vectors_epoch`` and a ``mentions_epoch`` that neither the live database
nor the backup held (fresh random ones, ``memo.store.epochs``: ``memo.embed.index`` and
``memo.graph.cache`` reload fully when an epoch changes); the vectors' is moved once more
right after the restore.

No acknowledged write falls between the safety copy and the restore: the restore runs
holding memo's writers' queue (``memo.store.write_queue``), and only if ``PRAGMA
data_version`` shows no commit since the snapshot was taken; otherwise the snapshot is
retaken (the third attempt holds the queue from the snapshot on).  So every write is
either in the safety copy (committed before) or in the restored database (committed after)
(tests/integration/test_cli_backup.py, with a writer process running throughout).
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from memo.errors import (
    ConfirmationRequired,
    MemoError,
    SchemaTooNew,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    ValidationError,
)
from memo.ops.leftovers import DB_FILES, clean_leftovers, temp_path_beside
from memo.ops.maintenance import (
    COUNTED_TABLES,
    _counts,
    _same_file,
    fsync_path,
    install_file,
    is_sqlite_file,
    remove_db_files,
    sidecars_of,
    snapshot_copy,
    verify_copy,
)
from memo.ops.reports import RestoreReport
from memo.store import epochs
from memo.store.connect import BUSY_TIMEOUT_MS, connect, write_tx
from memo.store.damage import check_lines, clear_marker
from memo.store.db import resolve_db_path
from memo.store.derived import bump_vectors_epoch
from memo.store.migrations import LATEST, ensure_schema, user_version
from memo.store.write_queue import writer_turn

RESTORE_LOCK_WAIT_S = 3 * BUSY_TIMEOUT_MS / 1000   # longest wait for the live write lock
CANONICAL_TABLES = ("records", "record_tags", "passages")  # what a migration never changes


def _same_rows(got: dict[str, int], want: dict[str, int], version: int) -> bool:
    """Counts equal to the backup's; after migrating an older backup only the canonical
    tables (a migration may add derived or meta rows)."""
    tables = COUNTED_TABLES if version == LATEST else CANONICAL_TABLES
    return all(got.get(t) == want.get(t) for t in tables)
_BAD_BACKUP = "the live database was not touched; pick another backup file"


def _ro_uri(path: Path) -> str:
    """Read-only URI for the backup file.  A plain ``mode=ro`` open of a WAL-mode file
    creates a -wal and -shm beside it that a read-only connection cannot remove, which
    would litter the backup folder (and make the file look "in use" to `memo backup`).
    With no sidecar present nobody has the file open in WAL mode, so ``immutable=1``
    (no locks, no sidecars) reads exactly what is on disk; with sidecars present their
    content belongs to the database and a normal read-only open reads it."""
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro"
    return uri if sidecars_of(path) else uri + "&immutable=1"


def _check_backup_file(path: Path) -> tuple[int, int, dict[str, int]]:
    """Verify the backup file without writing to it; return (schema version, page size, counts)."""
    if not path.exists():
        raise ValidationError(f"no backup file at {path}", hint="give the path of a file written by `memo backup`")
    if path.is_dir():
        raise ValidationError(f"{path} is a folder, not a backup file",
                              hint="give the path of a file written by `memo backup`")
    if not is_sqlite_file(path):
        raise ValidationError(f"{path} is not a SQLite database (no SQLite header)", hint=_BAD_BACKUP)
    try:
        src = sqlite3.connect(_ro_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the backup {path}: {exc}", hint=_BAD_BACKUP) from exc
    try:
        try:
            version = user_version(src)
            integrity = check_lines(src, "PRAGMA integrity_check(1)")[0]
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(f"the backup {path} is damaged: {exc}", hint=_BAD_BACKUP) from exc
        if integrity != "ok":
            raise StoreCorrupt(f"the backup {path} is damaged: integrity_check says {integrity!r}",
                               hint=_BAD_BACKUP)
        if version > LATEST:
            raise SchemaTooNew(f"the backup {path} has schema v{version}, newer than this memo (v{LATEST})",
                               hint="upgrade memo to restore it; the live database was not touched")
        tables = {r[0] for r in src.execute("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')")}
        missing = [t for t in (*CANONICAL_TABLES, "memo_meta") if t not in tables]
        if missing:
            raise ValidationError(f"{path} is not a memo database (no {', '.join(missing)} table)",
                                  hint=_BAD_BACKUP)
        page_size = int(src.execute("PRAGMA page_size").fetchone()[0])
        counts = _counts(src)
    except sqlite3.DatabaseError as exc:
        raise StoreCorrupt(f"the backup {path} cannot be read: {exc}", hint=_BAD_BACKUP) from exc
    finally:
        src.close()
    return version, page_size, counts


def _copy_backup(backup_path: Path, tmp: Path) -> None:
    src = sqlite3.connect(_ro_uri(backup_path), uri=True, isolation_level=None)
    dst = sqlite3.connect(tmp, isolation_level=None)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _set_page_size(tmp: Path, page_size: int) -> None:
    """Rewrite the private copy with the live database's page size: the backup API cannot
    write into a WAL database whose page size differs."""
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute(f"PRAGMA page_size={int(page_size)}")
        conn.execute("VACUUM")
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    _remove_sidecars(tmp)


def _remove_sidecars(path: Path) -> None:
    for suffix in DB_FILES:
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _prepare_copy(tmp: Path) -> None:
    """Migrate the private copy to this memo's schema and give it epochs no cache can hold
    yet, so every in-memory vector matrix and mention graph reloads after the restore."""
    conn = connect(tmp)
    try:
        ensure_schema(conn)
        with write_tx(conn):
            # fresh epochs (memo.store.epochs): neither the live database's nor the backup's,
            # so no process's vector matrix or mention graph of either is taken for this one
            epochs.new_database(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    _remove_sidecars(tmp)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _safety_path(live: Path) -> Path:
    path = live.with_name(f"{live.name}.before-restore-{_stamp()}")
    while os.path.lexists(path):  # same microsecond: never reuse a name
        path = live.with_name(f"{live.name}.before-restore-{_stamp()}")
    return path


def _safety_snapshot(conn: sqlite3.Connection, dest: Path) -> tuple[str, int]:
    """Verified online-backup snapshot of the live database at ``dest``; returns its
    integrity and the snapshot's data_version.  A damaged live database is still copied
    (that is often why one restores); its integrity is reported, not required."""
    tmp = temp_path_beside(dest, "safety")
    try:
        expected, version = snapshot_copy(conn, tmp)
        integrity, got = verify_copy(tmp)
        if integrity == "ok" and got != expected:
            raise StoreCorrupt(f"the safety copy {dest} does not match the database: rows {got} != {expected}",
                               hint="nothing was restored; retry, or pass --no-keep-previous")
        install_file(tmp, dest)
    finally:
        remove_db_files(tmp)
    return integrity, version


def _restore_into(copy: sqlite3.Connection, live: sqlite3.Connection) -> None:
    """The backup API from the verified copy into the live connection: one write
    transaction (WAL).  Waits for SQLite's write lock at most RESTORE_LOCK_WAIT_S (the
    caller holds memo's writers' queue)."""
    deadline = time.monotonic() + RESTORE_LOCK_WAIT_S

    class _TimedOut(Exception):
        pass

    def progress(status: int, remaining: int, total: int) -> None:
        if remaining and time.monotonic() > deadline:
            raise _TimedOut

    try:
        copy.backup(live, progress=progress, sleep=0.05)
    except _TimedOut as exc:
        raise StoreBusy("restore waited too long for the database's write lock; nothing was changed",
                        hint="another process holds the write lock; retry in a moment") from exc


def _turn(conn: sqlite3.Connection) -> AbstractContextManager[None]:
    """The writers' queue (memo.store.write_queue) for the live database: while it is held
    no memo writer can begin a transaction."""
    return writer_turn(conn, time.monotonic() + RESTORE_LOCK_WAIT_S)


def _open_live(live: Path) -> sqlite3.Connection | None:
    """The live database through memo's connection factory, or None when the file is not
    a SQLite database at all (the rename path)."""
    if not is_sqlite_file(live):
        if live.stat().st_size == 0:
            return connect(live)
        return None
    try:
        conn = connect(live)
    except StoreCorrupt:
        return None
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        return conn
    except sqlite3.DatabaseError as exc:
        conn.close()
        if "not a database" in str(exc):
            return None
        raise StoreCorrupt(f"cannot read the database {live}: {exc}") from exc


def restore(backup_path: str | Path, db: str | Path | None = None, *, confirm: bool = False,
            keep_previous: bool = True) -> RestoreReport:
    """Replace the contents of the database ``db`` (default: $MEMO_DB / the user data dir)
    with the backup at ``backup_path``.  See the module docstring for why it is safe while
    other processes use the database."""
    started = time.monotonic()
    bpath = Path(backup_path).expanduser().absolute()
    live = resolve_db_path(db).absolute()
    if not confirm:
        raise ConfirmationRequired(f"restoring replaces every record in {live} with the backup's",
                                   hint="repeat with --yes; the current database is kept as "
                                        f"{live.name}.before-restore-<time>")
    if live.is_dir():
        raise ValidationError(f"{live} is a folder, not a database file", hint="pass --db with a file path")
    if bpath.exists() and live.exists() and _same_file(bpath, live):
        raise ValidationError(f"the backup {bpath} is the database itself", hint="give the path of a backup file")
    version, page_size, counts = _check_backup_file(bpath)
    try:
        live.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValidationError(f"cannot create the folder {live.parent}: {exc.strerror or exc}",
                              hint="pass --db with a path in a folder you can write") from exc
    clean_leftovers(live.parent)     # copies of killed restores (memo.ops.leftovers)
    tmp = temp_path_beside(live, "restore")
    conn: sqlite3.Connection | None = None
    try:
        try:
            _copy_backup(bpath, tmp)
            integrity, got = verify_copy(tmp)
        except sqlite3.Error as exc:
            raise StoreError(f"copying the backup {bpath} failed: {exc}",
                             hint="check the free space beside the database; it was not touched") from exc
        except OSError as exc:
            raise StoreError(f"copying the backup {bpath} failed: {exc.strerror or exc}",
                             hint="check the free space beside the database; it was not touched") from exc
        if integrity != "ok" or got != counts:
            raise StoreCorrupt(f"the copy of {bpath} failed verification: integrity={integrity!r}, "
                               f"rows {got} != backup {counts}", hint="the live database was not touched; retry")
        exists = os.path.lexists(live)
        conn = _open_live(live) if exists else None
        if conn is not None:
            return _restore_through_sqlite(conn, live, bpath, tmp, version, page_size, counts,
                                           keep_previous, started)
        return _restore_by_rename(live, bpath, tmp, version, counts, exists, keep_previous, started)
    except MemoError:
        raise
    except sqlite3.DatabaseError as exc:
        msg = str(exc)
        if "locked" in msg or "busy" in msg:
            raise StoreBusy(f"restore failed: {msg}") from exc
        raise StoreError(f"restore failed: {msg}") from exc
    except OSError as exc:
        raise StoreError(f"restore failed: {exc.strerror or exc}") from exc
    finally:
        if conn is not None:
            conn.close()
        remove_db_files(tmp)


def _restore_through_sqlite(conn: sqlite3.Connection, live: Path, bpath: Path, tmp: Path, version: int,
                            page_size: int, counts: dict[str, int], keep_previous: bool,
                            started: float) -> RestoreReport:
    live_page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    if live_page != page_size:
        _set_page_size(tmp, live_page)
    previous: Path | None = None
    previous_integrity = None
    for attempt in range(3):
        # The last attempt holds the writers' queue from the snapshot on: exact even under a
        # steady stream of writes, but memo writers wait meanwhile, so it is the fallback.
        with _turn(conn) if attempt == 2 else nullcontext():
            if previous is not None:
                remove_db_files(previous)  # the snapshot of an earlier attempt is stale
            if keep_previous:
                previous = _safety_path(live)
                previous_integrity, seen = _safety_snapshot(conn, previous)
            else:
                seen = int(conn.execute("PRAGMA data_version").fetchone()[0])
            _prepare_copy(tmp)
            integrity, got = verify_copy(tmp)
            if integrity != "ok" or not _same_rows(got, counts, version):
                raise StoreCorrupt(f"the prepared copy of {bpath} failed verification: integrity={integrity!r}",
                                   hint="the live database was not touched; retry")
            with _turn(conn):
                # Holding the turn no memo writer can commit; one committed since the
                # snapshot (data_version moved) would be in neither copy: start again.
                if int(conn.execute("PRAGMA data_version").fetchone()[0]) != seen:
                    continue
                copy = sqlite3.connect(tmp, isolation_level=None)
                try:
                    _restore_into(copy, conn)
                finally:
                    copy.close()
                # Still holding the turn: a writer waiting in the queue would otherwise
                # commit the moment it is released, and the row counts checked against the
                # backup would include its rows (the restore reported a failed
                # verification, exit 6, under a concurrent writer).
                with write_tx(conn):
                    bump_vectors_epoch(conn)
                return _verify_live(conn, live, bpath, version, counts, "sqlite-backup", previous,
                                    previous_integrity, started)
    if previous is not None:
        remove_db_files(previous)
    raise StoreBusy("the database kept changing during the restore; nothing was changed",
                    hint="a program that writes without memo's writers' queue is busy; retry when it is idle")


def _restore_by_rename(live: Path, bpath: Path, tmp: Path, version: int, counts: dict[str, int],
                       exists: bool, keep_previous: bool, started: float) -> RestoreReport:
    """No usable database at ``live`` (missing, or not SQLite): nobody can be reading or
    writing it through SQLite, so the verified copy is renamed into place."""
    found = sidecars_of(live)
    if found:
        names = ", ".join(p.name for p in found)
        raise StoreError(f"{live} cannot be read as a database and {names} is beside it",
                         hint="close every memo process, move those files away, and retry")
    _prepare_copy(tmp)
    previous = None
    if exists:
        previous = _safety_path(live)
        os.replace(live, previous)   # the damaged file itself is the safety copy
        if not keep_previous:
            previous.unlink()
            previous = None
    fsync_path(tmp)
    os.replace(tmp, live)
    fsync_path(live.parent, directory=True)
    conn = connect(live)
    try:
        return _verify_live(conn, live, bpath, version, counts, "new-file" if not exists else "replace",
                            previous, None, started)
    finally:
        conn.close()


def _verify_live(conn: sqlite3.Connection, live: Path, bpath: Path, version: int, counts: dict[str, int],
                 method: str, previous: Path | None, previous_integrity: str | None,
                 started: float) -> RestoreReport:
    integrity = check_lines(conn, "PRAGMA integrity_check(1)")[0]
    got = _counts(conn)
    if integrity != "ok" or not _same_rows(got, counts, version):
        where = f"; the previous database is kept at {previous}" if previous else ""
        raise StoreCorrupt(f"the restored database failed verification: integrity={integrity!r}, "
                           f"rows {got} != backup {counts}{where}",
                           hint="retry the restore; if it fails again, restore from another backup")
    clear_marker(live)   # verified: a damaged mark of the replaced contents no longer applies
    return RestoreReport(source=str(bpath), path=str(live), method=method,
                         previous=str(previous) if previous else None, previous_integrity=previous_integrity,
                         schema_version=user_version(conn), backup_schema_version=version,
                         integrity=integrity, counts=got, seconds=round(time.monotonic() - started, 3))
