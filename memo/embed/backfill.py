"""Embed passages that have no vector for a model yet (the embedding queue).

Called by ``memo backfill``, by ingest after its records commit, and at server start
(``memo.embed.background.BackgroundEmbedder``, which backfills before its first job).  Never holds a write transaction while embedding:

    read a window of pending passages (autocommit read)
    -> embed them outside any transaction (sorted by length inside the window: less padding)
    -> write each batch in its own short BEGIN IMMEDIATE (INSERT OR IGNORE)

so searches and other writers are never blocked for longer than one batch insert, and two
concurrent backfills only duplicate work, never fail (tobi/qmd #825).
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memo.embed.fact_vectors import backfill_facts, pending_fact_count
from memo.embed.model import DEFAULT_BATCH, passage_text
from memo.embed.registry import load_registry
from memo.embed.reuse import embed_unique, key_rows, reuse_vectors
from memo.embed.service import load_model
from memo.embed.vectors import pending_batch, pending_count, vector_count, write_vectors
from memo.errors import MemoError
from memo.profile import load_profile
from memo.progress import PLAIN_PROGRESS_EVERY
from memo.store.db import default_db_path, open_db
from memo.store.dialect import is_postgres
from memo.store.postgres.vectors import build_ann_index

log = logging.getLogger(__name__)
WINDOW_BATCHES = 8   # batches read (and length-sorted) together


@dataclass(frozen=True, slots=True)
class BackfillReport:
    model_id: str
    pending_before: int
    embedded: int          # vectors written by this run (``reused`` included)
    skipped: int           # already written by a concurrent run, or passage deleted meanwhile
    pending_after: int
    seconds: float
    per_second: float
    error: str | None = None
    facts_embedded: int = 0    # fact vectors written by this run (memo/embed/fact_vectors.py)
    facts_pending_after: int = 0
    ann_index_built: bool = False   # PostgreSQL: the model's HNSW index was built by this run
    reused: int = 0        # of ``embedded``: copied from an earlier version's passage of the same text


def _progress(total: int, enabled: bool) -> _Bar | _Lines | None:
    """Embedding's progress on stderr (stdout belongs to CLI output / the MCP protocol): a
    rich bar on a terminal, plain lines on a log or a pipe (``_Lines``), nothing when off."""
    if not enabled or total == 0:
        return None
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        # A log or a pipe: no live bar (its transient clean-up leaves a blank line there:
        # `memo import` printed one before its report in a new-user run, issue 32.7).
        return _Lines(total)
    return _Bar(total, console)


class _Bar:
    """A transient rich bar; ``advance(n)`` after each step, ``stop()`` at the end."""

    def __init__(self, total: int, console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                             console=console, transient=True)
        self._task = self._bar.add_task("embed", total=total)
        self._bar.start()

    def advance(self, n: int) -> None:
        self._bar.update(self._task, advance=n)

    def stop(self) -> None:
        self._bar.stop()


class _Lines:
    """stderr no terminal (a log, a pipe, CI): one plain line at most every
    ``PLAIN_PROGRESS_EVERY`` seconds, as the import's batches print theirs; a run shorter
    than that prints none.  A line that cannot be written is dropped: progress never fails
    the embedding."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.start = self.last = time.monotonic()

    def advance(self, n: int) -> None:
        if n <= 0:          # nothing copied from a window (all to compute): no news yet
            return
        self.done += n
        now = time.monotonic()
        if now - self.last < PLAIN_PROGRESS_EVERY:
            return
        self.last = now
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"embedding: {self.done:,}/{self.total:,} passages after {now - self.start:.0f} s\n")
                sys.stderr.flush()
        except (OSError, ValueError):     # stderr closed or gone (a broken pipe)
            pass

    def stop(self) -> None:
        pass


def backfill(conn_or_path: sqlite3.Connection | str | Path, model_id: str | None = None, progress: bool = True,
             *, batch_size: int = DEFAULT_BATCH, embedder=None, limit: int | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> BackfillReport:
    """Embed every pending passage for ``model_id`` (default model if None).

    ``embedder`` lets tests inject a fake; otherwise the process's loaded model is used
    (raises ``ModelUnavailable`` if it cannot load).  ``limit`` caps the passages embedded.
    ``on_progress(done, total)`` is called after each written batch (a caller whose stderr
    is no terminal, where the bar draws nothing, reports its own progress from it)."""
    own = not hasattr(conn_or_path, "execute")   # a path or URL, else an open connection (either backend)
    if own:
        conn = open_db(conn_or_path, write=True)
    else:
        conn = conn_or_path
    try:
        if embedder is None:
            embedder = load_model(load_registry().get(model_id))
        mid = embedder.model_id
        report = _run(conn, embedder, mid, progress, batch_size, limit, on_progress)
        if limit is not None:
            return report
        # Facts are queued the same way: every fact without a vector for the model.
        facts, _ = backfill_facts(conn, embedder, mid, batch_size)
        return replace(report, facts_embedded=facts, facts_pending_after=pending_fact_count(conn, mid),
                       ann_index_built=_ann_index(conn, mid))
    finally:
        if own:
            conn.close()


def _ann_index(conn: sqlite3.Connection, model_id: str) -> bool:
    """PostgreSQL: build the model's HNSW index once it has ``vectors.ann_min`` vectors (the
    default profile's; docs/postgres.md).  SQLite keeps its in-process index."""
    if not is_postgres(conn):
        return False
    if vector_count(conn, model_id) < load_profile(None).index.ann_min:
        return False
    dims = conn.execute("SELECT vector_dims(vec) FROM vectors WHERE model_id = ? LIMIT 1", (model_id,)).fetchone()[0]
    return build_ann_index(conn, model_id, int(dims))


def _run(conn, embedder, mid: str, progress: bool, batch_size: int, limit: int | None,
         on_progress: Callable[[int, int], None] | None = None) -> BackfillReport:
    start = time.perf_counter()
    before = pending_count(conn, mid)
    target = before if limit is None else min(before, limit)
    embedded = skipped = done = reused = 0
    after_pk = 0
    bar = _progress(target, progress)
    try:
        while done < target:
            window = pending_batch(conn, mid, after_pk, min(batch_size * WINDOW_BATCHES, target - done))
            if not window:
                break
            after_pk = window[-1][0]
            # A vector of the same text embedded before is copied, not computed again
            # (reuse_vectors: the rows it gave a vector are exactly those not in todo).
            todo, copied = reuse_vectors(conn, mid, window)
            if copied:
                embedded += copied
                reused += copied
                done += copied
                if bar:
                    bar.advance(copied)
                if on_progress is not None:
                    on_progress(done, target)
            if not todo:
                continue
            # Embed the rest of the window (sorted by length inside) outside any transaction.
            vecs = embed_unique(embedder, [passage_text(sec, txt) for _, sec, txt in todo], batch_size)
            for s in range(0, len(todo), batch_size):
                batch = todo[s:s + batch_size]
                pks = [pk for pk, _, _ in batch]
                added = write_vectors(conn, mid, pks, vecs[s:s + batch_size],
                                      keys=key_rows(mid, pks, [(sec, txt) for _, sec, txt in batch]))
                embedded += added
                skipped += len(pks) - added
                done += len(pks)
                if bar:
                    bar.advance(len(pks))
                if on_progress is not None:
                    on_progress(done, target)
    finally:
        if bar:
            bar.stop()
    secs = time.perf_counter() - start
    return BackfillReport(model_id=mid, pending_before=before, embedded=embedded, skipped=skipped,
                          pending_after=pending_count(conn, mid), seconds=round(secs, 3),
                          per_second=round(done / secs, 1) if secs > 0 else 0.0, reused=reused)


def _default_path() -> Path:
    return default_db_path()


def embed_import(conn: sqlite3.Connection, record_ids: Sequence[str], *, progress: bool = False,
                 batch_size: int = DEFAULT_BATCH) -> BackfillReport:
    """An import's embedding (``memo import`` without ``--no-embed``): the pending passages
    of ``record_ids`` (the records it added or updated, and the stored ones its skipped
    inputs matched: an import stopped before its embedding finishes it when run again),
    then every fact without a vector (an import's facts have no ids to ask for, and facts
    are few and short).  Passages of other records stay queued: an import embedded every
    pending passage of the database, so a one-line note after a ``--no-embed`` import of
    13k passages embedded those for ten minutes.  ``pending_before`` / ``pending_after``
    count ``record_ids``' passages only (``pending_count`` gives the database's)."""
    report = embed_records(conn, record_ids, progress=progress, batch_size=batch_size)
    if report.error:
        mid = report.model_id or load_registry().get(None).id
        left = _pending_of(conn, record_ids, mid)
        return replace(report, model_id=mid, pending_before=left, pending_after=left)
    embedder = load_model(load_registry().get(report.model_id))      # loaded once per process
    facts, _ = backfill_facts(conn, embedder, report.model_id, batch_size)
    return replace(report, facts_embedded=facts, facts_pending_after=pending_fact_count(conn, report.model_id),
                   ann_index_built=_ann_index(conn, report.model_id))


def _pending_of(conn: sqlite3.Connection, record_ids: Sequence[str], model_id: str) -> int:
    """Passages of ``record_ids`` without a vector for ``model_id``."""
    ids, n = list(record_ids), 0
    for s in range(0, len(ids), 500):   # stay under SQLite's host-parameter limit
        chunk = ids[s:s + 500]
        n += conn.execute(
            f"SELECT count(*) FROM passages p WHERE p.record_id IN ({','.join('?' * len(chunk))}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk)",
            (*chunk, model_id)).fetchone()[0]
    return int(n)


def embed_records(conn: sqlite3.Connection, record_ids, model_id: str | None = None,
                  progress: bool = False, batch_size: int = DEFAULT_BATCH,
                  stop: Callable[[], bool] | None = None, *, embedder=None) -> BackfillReport:
    """Embed the pending passages of just-committed records (``memo add`` / import's
    after-commit hook).  Never raises for an unavailable model: the passages stay queued
    (pending) for `memo backfill` or the next server start, and the report says why.
    ``stop`` (the background embedder's shutdown) is asked between windows: once it says
    so, the rest stays queued (``pending_after``).  ``embedder``: as for ``backfill``."""
    ids = list(record_ids)
    start = time.perf_counter()
    try:
        if embedder is None:
            embedder = load_model(load_registry().get(model_id))
    except MemoError as exc:
        return BackfillReport(model_id=model_id or "", pending_before=0, embedded=0, skipped=0,
                              pending_after=0, seconds=0.0, per_second=0.0, error=str(exc))
    mid = embedder.model_id
    rows: list[tuple[int, str, str]] = []
    for s in range(0, len(ids), 500):   # stay under SQLite's host-parameter limit
        chunk = ids[s:s + 500]
        rows += conn.execute(
            f"SELECT p.pk, p.section, p.text FROM passages p WHERE p.record_id IN ({','.join('?' * len(chunk))}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk) "
            "ORDER BY p.pk", (*chunk, mid)).fetchall()
    bar = _progress(len(rows), progress)
    embedded = done = reused = 0
    try:
        window = batch_size * WINDOW_BATCHES
        for w in range(0, len(rows), window):
            if stop is not None and stop():
                break
            whole = rows[w:w + window]
            done += len(whole)
            # A vector of the same text embedded before is copied, not computed again.
            part, copied = reuse_vectors(conn, mid, whole)
            embedded += copied
            reused += copied
            if bar:
                bar.advance(len(whole) - len(part))
            if not part:
                continue
            vecs = embed_unique(embedder, [passage_text(r[1], r[2]) for r in part], batch_size)
            for s in range(0, len(part), batch_size):
                batch = part[s:s + batch_size]
                pks = [int(r[0]) for r in batch]
                embedded += write_vectors(conn, mid, pks, vecs[s:s + batch_size],
                                          keys=key_rows(mid, pks, [(r[1], r[2]) for r in batch]))
                if bar:
                    bar.advance(len(batch))
    finally:
        if bar:
            bar.stop()
    secs = time.perf_counter() - start
    return BackfillReport(model_id=mid, pending_before=len(rows), embedded=embedded,
                          skipped=done - embedded, pending_after=len(rows) - done, seconds=round(secs, 3),
                          per_second=round(len(rows) / secs, 1) if secs > 0 else 0.0, reused=reused)
