"""Stats, reindex (rebuild derived tables from canonical rows) and online backup."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from memo.errors import StoreCorrupt, StoreError, ValidationError
from memo.ops.guard import store_errors
from memo.ops.reports import BackupReport, ReindexReport, StatsReport
from memo.store.connect import connect, write_tx
from memo.store.derived import rebuild_derived
from memo.store.migrations import user_version

# Canonical and derived tables whose row counts a backup must reproduce.
COUNTED_TABLES = ("records", "record_tags", "passages", "vectors", "exact_fts", "memo_meta")
DEFAULT_MODEL_ID = "all-minilm-l6-v2-int8"  # the semantic helper's default (TEAM.md contract)


def _db_file(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return row["file"] or ":memory:"


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
    size = sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal")
               if path != ":memory:" and Path(f"{path}{s}").exists())
    return StatsReport(
        path=path, schema_version=user_version(conn), size_bytes=size,
        records=one("SELECT count(*) FROM records"), live=one(f"SELECT count(*) FROM records WHERE {live}"),
        superseded=one("SELECT count(*) FROM records WHERE superseded_at IS NOT NULL"),
        forgotten=one("SELECT count(*) FROM records WHERE forgotten_at IS NOT NULL"),
        passages=one("SELECT count(*) FROM passages"), by_kind=by_kind, by_namespace=by_ns,
        vectors=vectors, pending_vectors=pending)


@store_errors("reindex")
def reindex(conn: sqlite3.Connection) -> ReindexReport:
    """Rebuild the keyword and exact indexes from ``passages`` in one write transaction."""
    started = time.monotonic()
    with write_tx(conn):
        result = rebuild_derived(conn)
    kw = int(conn.execute("SELECT count(*) FROM passages_fts").fetchone()[0])
    ex = int(conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0])
    n_vec = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    return ReindexReport(
        passages=result["passages"], keyword_rows=kw, exact_rows=ex, facts=result.get("facts", 0),
        vectors=(f"kept {n_vec} vector rows; vectors need the model: run `memo backfill` to embed "
                 "passages that have none"),
        seconds=round(time.monotonic() - started, 3))


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in COUNTED_TABLES}


def backup(conn: sqlite3.Connection, dest: str | Path, *, overwrite: bool = False) -> BackupReport:
    """Copy the database with SQLite's online backup API (consistent while others write),
    then verify the copy: ``integrity_check`` must say ok and every counted table must
    hold as many rows as the source snapshot that was copied."""
    started = time.monotonic()
    dest = Path(dest).expanduser()
    src_path = _db_file(conn)
    if dest.exists():
        if not overwrite:
            raise ValidationError(f"{dest} already exists", hint="choose a new path, or pass --force to replace it")
        if dest.resolve() == Path(src_path).resolve():
            raise ValidationError("the backup path is the database itself")
        dest.unlink()
        for suffix in ("-wal", "-shm"):
            Path(f"{dest}{suffix}").unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    target = sqlite3.connect(dest)
    try:
        # Hold one read snapshot for the counts and the copy, so they describe the same
        # state even while other processes write.
        conn.execute("BEGIN")
        try:
            expected = _counts(conn)
            conn.backup(target)
        finally:
            conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StoreError(f"backup to {dest} failed: {exc}") from exc
    finally:
        target.close()
    copy = connect(dest)
    try:
        integrity = str(copy.execute("PRAGMA integrity_check").fetchone()[0])
        got = _counts(copy)
    finally:
        copy.close()
    if integrity != "ok" or got != expected:
        raise StoreCorrupt(f"backup at {dest} failed verification: integrity={integrity!r}, "
                           f"rows {got} != source {expected}")
    return BackupReport(source=src_path, path=str(dest), size_bytes=dest.stat().st_size,
                        integrity=integrity, counts=got, seconds=round(time.monotonic() - started, 3))
