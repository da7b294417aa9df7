"""What runs after a write commits.  One place, so add and supersede stay in step.

Embedding happens here, after the commit and outside any transaction: it is slow (ONNX) and
must never hold the write lock.  If the model is unavailable the passages simply stay
pending (no vector for the model) and `memo backfill` or the next server start embeds them
(seed: degraded mode).  Imports embed once at the end instead (``embed_pending``), so one
progress bar covers the whole import rather than one per batch.

Servers (``memo-mcp``, ``memo web``) pass a ``background`` embedder
(``memo.embed.background.BackgroundEmbedder``, or anything with its ``submit``): the rows
are handed to its thread and the write returns right after the commit with every passage
reported ``queued`` and no ``error`` (issue 9.9: an add's acknowledgement no longer waits
for ONNX).  A one-shot process (``memo add``) has no thread that would outlive it, so it
embeds here before it returns, as does a server call with ``wait``.

Honest writes (issue 9.6): the write has committed before anything here runs, so nothing
here may make it look failed.  Every embedding failure (model missing or corrupt, an
onnxruntime error, a database busy while the vectors are written, an unexpected bug) is
logged and returned as a ``VectorStatus`` with ``queued`` passages and the ``error``;
only KeyboardInterrupt / SystemExit go through.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from memo.errors import MemoError
from memo.ops.reports import VectorStatus

if TYPE_CHECKING:
    from memo.embed.backfill import BackfillReport

# memo.embed (numpy, onnxruntime) is imported by the functions that embed, not here: every
# CLI command imports memo.ops, and `memo search --mode keyword` must start without them.

log = logging.getLogger(__name__)


class EmbedQueue(Protocol):
    """What a write needs of a background embedder (memo.embed.background.BackgroundEmbedder)."""

    model_id: str | None

    def submit(self, record_ids: Sequence[str] = (), fact_pks: Sequence[int] = ()) -> bool:
        """Queue just-committed rows; False when it cannot (the caller embeds them)."""
        ...


def describe(exc: BaseException) -> str:
    """One line for a report: a MemoError's message and hint, else type and message."""
    if isinstance(exc, MemoError):
        return exc.one_line()
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


def _model_id() -> str | None:
    """The id of the model embedding would use, even when it cannot load (None when the
    registry itself cannot be read)."""
    try:
        from memo.embed.registry import load_registry
        return load_registry().get(None).id
    except Exception:
        return None


def _counts(conn: sqlite3.Connection, record_ids: Sequence[str], model_id: str | None) -> tuple[int, int]:
    """(passages of the records, those with a vector for ``model_id``)."""
    total = have = 0
    ids = list(record_ids)
    for s in range(0, len(ids), 500):   # stay under SQLite's host-parameter limit
        chunk = ids[s:s + 500]
        marks = ",".join("?" * len(chunk))
        row = conn.execute(
            f"""SELECT count(*), count(v.passage_pk) FROM passages p
                LEFT JOIN vectors v ON v.passage_pk = p.pk AND v.model_id = ?
                WHERE p.record_id IN ({marks})""", (model_id or "", *chunk)).fetchone()
        total += int(row[0])
        have += int(row[1])
    return total, have


def after_commit(conn: sqlite3.Connection, record_ids: Sequence[str], passages: int = 0,
                 background: EmbedQueue | None = None) -> VectorStatus | None:
    """Embed the passages of just-committed records, or hand them to ``background``.
    Never raises (but for KeyboardInterrupt / SystemExit): a failure leaves them queued
    and is reported in the returned status.  ``passages`` (the write's passage count) is
    the fallback when even counting them fails, and what a background hand-off reports
    as queued (the write's passages are all new, so none has a vector yet)."""
    if not record_ids:
        return None
    if background is not None and queue_in(background, record_ids=record_ids):
        return VectorStatus(embedded=0, queued=passages, model_id=background.model_id or _model_id(), error=None)
    error: str | None = None
    model_id: str | None = None
    reused = 0
    try:
        from memo.embed.backfill import embed_records

        report = embed_records(conn, record_ids, progress=False)
        model_id, error, reused = report.model_id or None, report.error, report.reused
    except Exception as exc:
        error = describe(exc)
        log.warning("embedding after commit failed; passages stay queued for `memo backfill`: %s", error,
                    exc_info=not isinstance(exc, MemoError))
    else:
        if error:
            log.info("embedding after commit skipped; passages stay queued: %s", error)
    model_id = model_id or _model_id()
    try:
        total, have = _counts(conn, record_ids, model_id)
    except Exception as exc:   # the database is busy or gone: report what is known
        log.warning("counting queued passages failed: %s", describe(exc))
        total, have = passages, 0
        error = error or f"vectors not checked: {describe(exc)}"
    return VectorStatus(embedded=have, queued=total - have, model_id=model_id, error=error, reused=reused)


def queue_in(background: EmbedQueue, *, record_ids: Sequence[str] = (), fact_pks: Sequence[int] = ()) -> bool:
    """Hand committed rows to a background embedder; False (the caller embeds them
    itself) when it is not running or its ``submit`` fails in any way."""
    try:
        return bool(background.submit(record_ids, fact_pks))
    except Exception as exc:
        log.warning("background embedder refused the write; embedding it now: %s", describe(exc))
        return False


def embed_pending(conn: sqlite3.Connection, record_ids: Sequence[str], *, progress: bool,
                  passages: int = 0) -> BackfillReport:
    """Embed an import's queued passages: those of ``record_ids`` (``memo.embed.backfill.
    embed_import``), and facts without a vector.  A missing model or any other embedding
    failure is reported in the returned report's ``error``, not raised: the import itself
    succeeded.  ``passages`` (the import's new passages) is what stays pending when even
    counting them fails (the server went away: "0 pending" said none was left)."""
    from memo.embed.backfill import BackfillReport, embed_import

    try:
        return embed_import(conn, record_ids, progress=progress)
    except Exception as exc:
        error = describe(exc)
        log.warning("embedding after import failed; passages stay queued for `memo backfill`: %s", error,
                    exc_info=not isinstance(exc, MemoError))
        model_id = _model_id()
        queued = passages
        try:
            total, have = _counts(conn, record_ids, model_id)
            queued = total - have
        except Exception:
            pass
        return BackfillReport(model_id=model_id or "", pending_before=queued, embedded=0, skipped=0,
                              pending_after=queued, seconds=0.0, per_second=0.0, error=error)


def pending_elsewhere(conn: sqlite3.Connection, report: BackfillReport) -> int:
    """Passages of the database still without a vector for the report's model beyond the
    import's own (``report.pending_after``): left queued for ``memo backfill``; 0 when
    they cannot be counted."""
    if not report.model_id:
        return 0
    try:
        from memo.embed.vectors import pending_count
        return max(0, pending_count(conn, report.model_id) - report.pending_after)
    except Exception:
        return 0


def import_vectors(report: BackfillReport | None, passages: int) -> VectorStatus:
    """An import's vector outcome from ``embed_pending``'s report (``None``: --no-embed,
    the import's ``passages`` stay queued)."""
    if report is None:
        return VectorStatus(embedded=0, queued=passages, model_id=None, error=None)
    return VectorStatus(embedded=report.embedded, queued=report.pending_after,
                        model_id=report.model_id or None, error=report.error, reused=report.reused)
