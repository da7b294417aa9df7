"""What runs after a write commits.  One place, so add and supersede stay in step.

Embedding happens here, after the commit and outside any transaction: it is slow (ONNX) and
must never hold the write lock.  If the model is unavailable the passages simply stay
pending (no vector for the model) and `memo backfill` or the next server start embeds them
(seed: degraded mode).  Imports embed once at the end instead (``embed_pending``), so one
progress bar covers the whole import rather than one per batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memo.embed.backfill import BackfillReport, backfill, embed_records
from memo.errors import MemoError


def after_commit(conn: sqlite3.Connection, record_ids: Sequence[str]) -> BackfillReport | None:
    """Embed the passages of just-committed records; never raises for a missing model."""
    if not record_ids:
        return None
    return embed_records(conn, record_ids, progress=False)


def embed_pending(conn: sqlite3.Connection, *, progress: bool) -> BackfillReport:
    """Embed every queued passage (after an import).  A missing model is reported in the
    returned report's ``error``, not raised: the import itself succeeded."""
    try:
        return backfill(conn, progress=progress)
    except MemoError as exc:
        return BackfillReport(model_id="", pending_before=0, embedded=0, skipped=0, pending_after=0,
                              seconds=0.0, per_second=0.0, error=exc.one_line())
