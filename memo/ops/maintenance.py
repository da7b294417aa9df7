"""Stats, reindex (rebuild derived tables from canonical rows) and online backup."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path

from memo.errors import DiskFull, StoreCorrupt, StoreError, ValidationError
from memo.ops.guard import store_errors
from memo.ops.leftovers import DB_FILES, SIDECARS, clean_leftovers, temp_path_beside  # noqa: F401 (re-exported)
from memo.ops.reports import BackupReport, ReindexReport, StatsReport
from memo.store import kw_postings
from memo.store.connect import connect, db_file, read_tx, write_tx
from memo.store.damage import (
    RESTORE_HINT,
    check_lines,
    clear_marker,
    fault_from,
    integrity_lines,
    is_corrupt_error,
    read_marker,
)
from memo.store.derived import rebuild_derived
from memo.store.dialect import is_postgres
from memo.store.mentions import rebuild_mentions
from memo.store.migrations import user_version
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.connection import redact
from memo.store.records import utc_now
from memo.stored import CURRENT

log = logging.getLogger(__name__)

# Canonical and derived tables whose row counts a backup must reproduce.
COUNTED_TABLES = ("records", "record_tags", "passages", "vectors", "exact_fts", "memo_meta",
                  "facts", "fact_evidence", "fact_vectors", "entities", "entity_aliases", "mentions")  # a table a database lacks is skipped
DEFAULT_MODEL_ID = "all-minilm-l6-v2-int8"  # the semantic helper's default (TEAM.md contract)


def _db_file(conn: sqlite3.Connection) -> str:
    if is_postgres(conn):   # the server's URL, without its password
        return redact(conn.url)  # type: ignore[attr-defined]
    return db_file(conn) or ":memory:"


@store_errors("stats")
def stats(conn: sqlite3.Connection) -> StatsReport:
    path = _db_file(conn)
    one = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
    live = "forgotten_at IS NULL AND superseded_at IS NULL"
    by_kind = {r[0]: r[1] for r in conn.execute(
        f"SELECT kind, count(*) FROM records WHERE {live} GROUP BY kind ORDER BY kind")}
    by_ns = {r[0]: r[1] for r in conn.execute(
        f"SELECT namespace, count(*) FROM records WHERE {live} GROUP BY namespace ORDER BY namespace")}
    vectors = {r[0]: r[1] for r in conn.execute(
        "SELECT model_id, count(*) FROM vectors GROUP BY model_id ORDER BY model_id")}
    live_passages = one(f"SELECT count(*) FROM passages p JOIN records r ON r.id = p.record_id WHERE {live}")
    pending = {}
    for model in vectors or {DEFAULT_MODEL_ID: 0}:
        have = int(conn.execute(
            f"""SELECT count(*) FROM vectors v JOIN passages p ON p.pk = v.passage_pk
                JOIN records r ON r.id = p.record_id WHERE v.model_id = ? AND {live}""",
            (model,)).fetchone()[0])
        pending[model] = live_passages - have
    if is_postgres(conn):
        size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
        version = pg_schema.schema_version(conn)
    else:
        size = sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal")
                   if path != ":memory:" and Path(f"{path}{s}").exists())
        version = user_version(conn)
    return StatsReport(
        path=path, schema_version=version, size_bytes=size,
        records=one("SELECT count(*) FROM records"), live=one(f"SELECT count(*) FROM records WHERE {live}"),
        superseded=one("SELECT count(*) FROM records WHERE superseded_at IS NOT NULL"),
        forgotten=one("SELECT count(*) FROM records WHERE forgotten_at IS NOT NULL"),
        passages=one("SELECT count(*) FROM passages"), by_kind=by_kind, by_namespace=by_ns,
        vectors=vectors, pending_vectors=pending, **_fact_stats(conn, list(vectors or {DEFAULT_MODEL_ID: 0})))


def _fact_stats(conn: sqlite3.Connection, models: list[str]) -> dict[str, object]:
    """Fact counts (live / superseded / forgotten), fact vectors per model and the facts
    (not forgotten: superseded ones still vote under as_of) waiting for a vector, for the
    models passages have vectors for and any model facts have vectors for.  A database
    from before migration 2 has no fact tables: nothing to count."""
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'facts'").fetchone() is None:
        return {}
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE superseded_at IS NULL AND forgotten_at IS NULL),"
        " count(*) FILTER (WHERE superseded_at IS NOT NULL), count(*) FILTER (WHERE forgotten_at IS NOT NULL),"
        " count(*) FILTER (WHERE forgotten_at IS NULL) FROM facts").fetchone()
    fvec = {r[0]: r[1] for r in conn.execute(
        "SELECT model_id, count(*) FROM fact_vectors GROUP BY model_id ORDER BY model_id")}
    pending = {}
    for model in dict.fromkeys([*models, *fvec]):
        have = int(conn.execute(
            "SELECT count(*) FROM fact_vectors v JOIN facts f ON f.pk = v.fact_pk"
            " WHERE v.model_id = ? AND f.forgotten_at IS NULL", (model,)).fetchone()[0])
        pending[model] = int(row[4]) - have
    return {"facts": int(row[0]), "facts_live": int(row[1]), "facts_superseded": int(row[2]),
            "facts_forgotten": int(row[3]), "fact_vectors": fvec, "pending_fact_vectors": pending}


@store_errors("reindex")
def reindex(conn: sqlite3.Connection) -> ReindexReport:
    """Rebuild every index from the stored rows in one write transaction: SQLite's own
    b-tree indexes (``REINDEX``: an index whose bytes disagree with its table, which
    ``memo doctor`` reports), the keyword and exact indexes and the entity mentions from
    ``passages`` (and live facts).  A damaged marker that names indexes only lets it write
    (``write_tx(reindexing=True)``); it is cleared once ``integrity_check`` passes."""
    started = time.monotonic()
    with write_tx(conn, reindexing=True):
        if not is_postgres(conn):
            _reindex_btrees(conn)
        result = rebuild_derived(conn)
        ments = rebuild_mentions(conn)     # entities, aliases and mentions (memo/store/mentions.py)
        # Counted in the rebuild's transaction: an add committed right after it would make
        # the rows disagree with ``passages`` in the report.
        # PostgreSQL: the keyword index is each passage's tsv (memo/store/postgres/schema.py)
        kw = int(conn.execute("SELECT count(*) FROM passages WHERE tsv IS NOT NULL" if is_postgres(conn)
                              else "SELECT count(*) FROM passages_fts").fetchone()[0])
        ex = int(conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0])
        n_vec = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    if not is_postgres(conn):
        # The keyword postings are built from passages_fts as committed (FTS5 flushes its
        # rebuilt index at COMMIT), in a second transaction; searches use FTS5 in between.
        with write_tx(conn, reindexing=True):
            kw_postings.rebuild(conn)
    marker = "none" if is_postgres(conn) else _clear_index_marker(conn)
    sidecars = _rebuild_vector_sidecars(conn)
    return ReindexReport(
        passages=result["passages"], keyword_rows=kw, exact_rows=ex, facts=result.get("facts", 0),
        mentions=ments["mentions"], entities=ments["entities"],
        vectors=(f"kept {n_vec} vector rows; vectors need the model: run `memo backfill` to embed "
                 "passages that have none" + sidecars),
        seconds=round(time.monotonic() - started, 3), damaged_marker=marker)


def _reindex_btrees(conn: sqlite3.Connection) -> None:
    """``REINDEX`` every b-tree index.  A UNIQUE index that cannot be rebuilt means the
    table holds two rows the index should have kept apart: a second live copy of a text
    stored while the dedup index was damaged.  Nothing is deleted: every copy but the
    oldest is forgotten (a soft delete, listed in ``memo list --forgotten`` until a purge),
    logged with its ids, and the rebuild goes on."""
    try:
        conn.execute("SAVEPOINT memo_reindex")
        conn.execute("REINDEX")
        conn.execute("RELEASE memo_reindex")
        return
    except sqlite3.IntegrityError as exc:
        conn.execute("ROLLBACK TO memo_reindex")
        conn.execute("RELEASE memo_reindex")
        first_error = exc
    groups = conn.execute(
        f"SELECT namespace, content_hash FROM records NOT INDEXED WHERE {CURRENT} "
        "GROUP BY namespace, content_hash HAVING count(*) > 1").fetchall()
    forgotten: list[str] = []
    for ns, chash in groups:
        copies = [r[0] for r in conn.execute(
            f"SELECT id FROM records NOT INDEXED WHERE namespace = ? AND content_hash = ? AND {CURRENT} "
            "ORDER BY recorded_at, rowid", (ns, chash))]
        forgotten += copies[1:]
    if not forgotten:
        raise StoreCorrupt(f"reindex failed: {first_error}", hint=RESTORE_HINT) from first_error
    # The dedup index cannot take a forget through itself while it is wrong: drop it,
    # forget the later copies, and let REINDEX recreate every index from the table.
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = 'records_dedup'").fetchone()
    conn.execute("DROP INDEX IF EXISTS records_dedup")
    when = utc_now()
    for rid in forgotten:
        conn.execute("UPDATE records SET forgotten_at = ? WHERE id = ?", (when, rid))
    if sql is not None:
        conn.execute(sql[0])
    conn.execute("REINDEX")
    log.warning("reindex: forgot %d second live copies stored while the dedup index was damaged: %s",
                len(forgotten), " ".join(forgotten[:20]))


def _clear_index_marker(conn: sqlite3.Connection) -> str:
    """After a REINDEX: clear a marker that named damaged indexes once the whole file's
    ``integrity_check`` passes ("cleared"); "kept" when it does not, "none" without one."""
    path = _db_file(conn)
    doc = read_marker(path) if path != ":memory:" else None
    if doc is None:
        return "none"
    if doc.get("repair") != "reindex":
        return "kept"
    lines = integrity_lines(conn)
    if lines != ["ok"]:
        return "kept"
    return "cleared" if clear_marker(path) else "kept"


def _rebuild_vector_sidecars(conn: sqlite3.Connection) -> str:
    """The vector sidecars (memo/embed/sidecar.py) are derived from ``vectors``: rewritten
    after the rebuild above moved the epoch (the default profile's ``vectors.sidecar_min``
    decides which models get one).  A folder that cannot take the file only loses speed."""
    if is_postgres(conn):   # vectors live in the server (pgvector): no sidecar files
        return ""
    path = _db_file(conn)
    if path == ":memory:":
        return ""
    from memo.embed.sidecar import rebuild_all
    from memo.profile import load_profile

    try:
        done = rebuild_all(conn, path, load_profile(None).index.sidecar_min)
    except OSError as exc:
        return f"; vector sidecar not written: {exc}"
    return "".join(f"; vector sidecar of {model}: {rows} rows" for model, rows in done.items())


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Rows per counted table (tables the database lacks are left out)."""
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in COUNTED_TABLES
            if t in present}


# -- backup ------------------------------------------------------------------------------

SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: str | Path) -> bool:
    """True when ``path`` is a regular file that starts with SQLite's 16-byte header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except OSError:
        return False


def sidecars_of(path: str | Path) -> list[Path]:
    """The -wal, -shm and -journal files that exist beside ``path``."""
    return [Path(f"{path}{s}") for s in SIDECARS if os.path.lexists(f"{path}{s}")]


def _same_file(a: str | Path, b: str | Path) -> bool:
    """Same path after resolving symlinks, or (both existing) the same inode (hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def fsync_path(path: str | Path, *, directory: bool = False) -> None:
    """Flush a file (or a folder's entries, after a rename) to stable storage."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if directory:  # some platforms cannot open a folder; the rename is still atomic
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def remove_db_files(path: str | Path) -> None:
    """Delete a private temporary database and any file SQLite or memo left beside it."""
    for s in ("", *DB_FILES):
        Path(f"{path}{s}").unlink(missing_ok=True)


def _attached_files(conn: sqlite3.Connection) -> list[str]:
    return [r[2] for r in conn.execute("PRAGMA database_list").fetchall() if r[2]]


def _refuse_live_files(conn: sqlite3.Connection, dest: Path) -> None:
    """The source database and its -wal/-shm/-journal, for every file the connection has
    attached (``PRAGMA database_list``): overwriting any of them destroys acknowledged writes
    (a -wal holds commits not yet checkpointed; the -shm indexes it for every open connection)."""
    for attached in _attached_files(conn):
        if _same_file(dest, attached):
            raise ValidationError(f"{dest} is the database itself",
                                  hint="give a path outside the database, e.g. a file in a backups folder")
        for suffix in DB_FILES:
            if _same_file(dest, f"{attached}{suffix}"):
                raise ValidationError(
                    f"{dest} is the database's {suffix} file: replacing it would destroy acknowledged writes",
                    hint="give a path outside the database's files, e.g. a file in a backups folder")
    # Any other SQLite database's sidecar, addressed directly or through a symlink.
    for candidate in {dest, Path(os.path.realpath(dest))}:
        for suffix in DB_FILES:
            base = candidate.with_name(candidate.name[: -len(suffix)]) if candidate.name.endswith(suffix) else None
            if base is not None and is_sqlite_file(base):
                raise ValidationError(
                    f"{dest} is the {suffix} file of the SQLite database {base}: replacing it would corrupt it",
                    hint="give a path that is not a database's -wal, -shm or -journal file")


def _probe_rollback_lock(path: Path) -> bool:
    """True when a rollback-journal database is locked by another connection right now."""
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        probe.execute("BEGIN")
        probe.execute("SELECT count(*) FROM sqlite_schema").fetchone()  # takes a SHARED lock
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    except sqlite3.Error:
        return False
    finally:
        probe.close()


def _refuse_open_database(dest: Path, real: Path) -> None:
    """Refuse to replace a SQLite database another connection may have open.

    Why sidecar files and not a lock probe alone: in WAL mode (every memo database) each
    open connection maps the ``-shm`` file and writes go to ``-wal``; SQLite deletes both
    only when the *last* connection closes cleanly.  So a ``-wal``/``-shm`` beside the file
    means either someone has it open (replacing it would orphan their writes, and their
    next checkpoint would write old pages into the new file) or it crashed with commits
    still in the ``-wal`` (which SQLite would then replay onto our new file: corruption).
    Both are unsafe, so both are refused.  POSIX lock probes cannot see connections of
    this same process (locks are per process), which is why they are not the main test.
    A rollback-journal database has no sidecar while idle; for it a ``-journal`` (a writer
    mid-transaction) or a held lock (a reader mid-transaction) is what can be detected.
    """
    for path in dict.fromkeys((dest, real)):
        found = sidecars_of(path)
        if found:
            names = ", ".join(p.name for p in found)
            raise ValidationError(
                f"{dest} is a SQLite database in use or not closed cleanly ({names} beside it); "
                "replacing it could destroy its writes",
                hint="close the programs using it or choose another path (--force does not override this)")
    if is_sqlite_file(real) and _probe_rollback_lock(real):
        raise ValidationError(f"{dest} is a SQLite database another program has locked",
                              hint="close the programs using it or choose another path (--force does not override this)")


def _prepare_parent(parent: Path) -> None:
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValidationError(f"cannot create the folder {parent}: {exc.strerror or exc}",
                              hint="choose a path in a folder you can write") from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValidationError(f"cannot write in the folder {parent}: permission denied",
                              hint="choose a path in a folder you can write")


def check_backup_dest(conn: sqlite3.Connection, dest: str | Path, *, overwrite: bool = False,
                      example: str = "memo-backup.db") -> Path:
    """Validate a backup's (or an export's) destination; return the real path the copy
    will be written to.

    Refused whatever ``overwrite`` says: the source database or any of its -wal/-shm/-journal
    files (also through symlinks and hard links), another SQLite database's sidecar, a
    folder, something that is not a regular file, a SQLite database that is open (or has
    leftover sidecars), a folder that cannot be created or written.  An existing plain file
    is replaced only with ``overwrite``.
    """
    dest = Path(dest).expanduser()
    if not str(dest).strip():
        raise ValidationError("no backup path given", hint="give a file path, e.g. /backups/memo.db")
    dest = dest.absolute()
    if dest.is_dir():
        raise ValidationError(f"{dest} is a folder: give a file path inside it",
                              hint=f"e.g. {dest / example}")
    if not is_postgres(conn):      # an export from PostgreSQL has no database file to overwrite
        _refuse_live_files(conn, dest)
    real = Path(os.path.realpath(dest))
    if os.path.lexists(dest):
        if real.exists() and not real.is_file():
            raise ValidationError(f"{dest} is not a regular file", hint="give a path to a file (new or to replace)")
        if not overwrite and real.exists():
            raise ValidationError(f"{dest} already exists", hint="choose a new path, or pass --force to replace it")
    # Leftover sidecars with no database beside them would be replayed onto the new copy.
    _refuse_open_database(dest, real)
    _prepare_parent(real.parent)
    return real


def snapshot_copy(conn: sqlite3.Connection, target_path: Path) -> tuple[dict[str, int], int]:
    """Copy ``conn``'s database into a new file with the online backup API; return the row
    counts and ``PRAGMA data_version`` of the one read snapshot that was copied."""
    target = sqlite3.connect(target_path, isolation_level=None)
    try:
        # One read snapshot for the counts and the copy, so they describe the same state
        # even while other processes write.
        with read_tx(conn):
            expected = _counts(conn)
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            try:
                conn.backup(target)
            except sqlite3.DatabaseError as exc:
                # Damage in the source stays the source's (read_tx marks it); anything else
                # here (a full disk, no write access) is the copy's, and is named so.
                if is_corrupt_error(exc):
                    raise
                err = (fault_from(exc, f"writing the copy {target_path}", target_path.parent)
                       or StoreError(f"writing the copy {target_path} failed: {exc}"))
                err.hint = (f"free space in {target_path.parent} (or back up elsewhere); the database itself "
                            "is fine and nothing was written at the backup path"
                            if isinstance(err, DiskFull) else "check the backup folder's free space and permissions")
                raise err from exc
    finally:
        target.close()
    return expected, version


def verify_copy(path: Path) -> tuple[str, dict[str, int]]:
    """integrity_check and row counts of a private copy, read by a fresh connection (what
    is on disk, not what a cache remembers).  Leaves no -wal/-shm behind."""
    copy = connect(path)
    try:
        try:
            integrity = check_lines(copy, "PRAGMA integrity_check(1)")[0]
            got = _counts(copy)
        except sqlite3.DatabaseError as exc:   # a page so damaged that the check itself stops
            integrity, got = f"integrity_check failed: {exc}", {}
        copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        copy.close()
    for s in ("-wal", "-shm"):
        Path(f"{path}{s}").unlink(missing_ok=True)
    return integrity, got


def install_file(tmp: Path, dest: Path) -> None:
    """fsync ``tmp``, atomically rename it onto ``dest``, fsync the folder."""
    fsync_path(tmp)
    os.replace(tmp, dest)
    fsync_path(dest.parent, directory=True)


def backup(conn: sqlite3.Connection, dest: str | Path, *, overwrite: bool = False) -> BackupReport:
    """Copy the database with SQLite's online backup API (consistent while others write),
    then verify the copy: ``integrity_check`` must say ok and every counted table must
    hold as many rows as the source snapshot that was copied.

    The copy is written to a temporary file in the destination's folder and renamed onto
    the destination only once verified, so a failed backup never destroys an existing file.
    Destinations that would destroy data are refused even with ``overwrite``
    (``check_backup_dest``).
    """
    if is_postgres(conn):
        raise ValidationError("memo backup copies a SQLite database file; this database is on PostgreSQL",
                              hint="use the server's own tools: pg_dump (and pg_restore to restore)")
    started = time.monotonic()
    src_path = _db_file(conn)
    real = check_backup_dest(conn, dest, overwrite=overwrite)
    clean_leftovers(real.parent)     # copies of killed backups (memo.ops.leftovers)
    tmp = temp_path_beside(real, "backup")
    try:
        try:
            expected, _ = snapshot_copy(conn, tmp)
            integrity, got = verify_copy(tmp)
        except sqlite3.Error as exc:
            raise StoreError(f"backup to {real} failed: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"backup to {real} failed: {exc.strerror or exc}",
                             hint="check the free space and permissions of the backup folder") from exc
        if integrity != "ok" or got != expected:
            raise StoreCorrupt(f"backup at {real} failed verification: integrity={integrity!r}, "
                               f"rows {got} != source {expected}",
                               hint="nothing was written at the backup path; run `memo stats` and retry")
        try:
            install_file(tmp, real)
        except OSError as exc:
            raise StoreError(f"cannot move the verified backup to {real}: {exc.strerror or exc}",
                             hint="check the permissions of the backup folder") from exc
    finally:
        remove_db_files(tmp)
    return BackupReport(source=src_path, path=str(real), size_bytes=real.stat().st_size,
                        integrity=integrity, counts=got, seconds=round(time.monotonic() - started, 3))
