"""What runs after a write commits.  One place, so add, import and supersede stay in step."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def after_commit(conn: sqlite3.Connection, record_ids: Sequence[str]) -> None:
    """Called after every committed batch of new records (never inside a write
    transaction: embedding is slow and must not hold the write lock)."""
    if not record_ids:
        return
    # embedding of new passages: memo.embed.backfill (integrated by lead)
