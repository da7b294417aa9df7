"""Per-connection caches that live until the data changes.

Eval replay runs hundreds of queries on one connection against unchanging data; the
scope statistics and the per-passage metadata (kind, dates, tokens) can be read once.
Validity: ``PRAGMA data_version`` changes when another connection commits, and
``total_changes`` when this one writes; either change empties the cache.  On PostgreSQL
the data generation (``memo_meta.generation``, moved by every write) plays data_version's part.

sqlite3.Connection takes no attributes and no weak references, so caches are keyed by
``id(conn)`` and hold the connection itself: while an entry exists its id cannot be
reused by a new connection.  At most ``MAX_CONNECTIONS`` are kept (oldest evicted).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memo.store.connect import snapshot_data_version
from memo.store.dialect import is_postgres
from memo.store.postgres.tx import generation

MAX_CONNECTIONS = 8
_ENTRIES: dict[int, tuple[sqlite3.Connection, tuple[int, int], dict[str, Any]]] = {}


def conn_cache(conn: sqlite3.Connection) -> dict[str, Any]:
    """A dict private to ``conn`` and to the current state of its data."""
    if is_postgres(conn):   # the data generation every write moves (memo.store.postgres.tx)
        state = (generation(conn), conn.total_changes)
    else:   # inside a search's read snapshot the version was read once (memo.store.connect.read_tx)
        version = snapshot_data_version(conn)
        if version is None:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
        state = (version, conn.total_changes)
    entry = _ENTRIES.get(id(conn))
    if entry is not None and entry[0] is conn and entry[1] == state:
        return entry[2]
    if entry is None and len(_ENTRIES) >= MAX_CONNECTIONS:
        del _ENTRIES[next(iter(_ENTRIES))]
    fresh: dict[str, Any] = {}
    _ENTRIES[id(conn)] = (conn, state, fresh)
    return fresh


def forget(conn: sqlite3.Connection) -> None:
    """Drop ``conn``'s cache (call before closing a connection you will not reuse)."""
    _ENTRIES.pop(id(conn), None)
