"""Per-connection caches that live until the data changes.

Eval replay runs hundreds of queries on one connection against unchanging data; the
scope statistics and the per-passage metadata (kind, dates, tokens) can be read once.
Validity: ``PRAGMA data_version`` changes when another connection commits, and
``total_changes`` when this one writes; either change empties the cache.  On PostgreSQL
the data generation (``memo_meta.generation``, moved by every write) plays data_version's part.

sqlite3.Connection takes no attributes and no weak references, so caches are keyed by
``id(conn)`` and hold the connection itself: while an entry exists its id cannot be
reused by a new connection.  At most ``MAX_CONNECTIONS`` are kept (oldest evicted).

``stable_cache`` lasts longer, for what a commit that only *adds* rows cannot change: the
meta and result rows of a passage already stored (``memo.retrieve.fetch``).  On SQLite a
passage's row and the record columns those read are written once and never updated in
place (``tests/unit/retrieve/test_stable_cache.py`` holds memo's own UPDATE statements to
that), and every removal of passages goes through ``unindex_passages``, which moves
``memo_meta.vectors_epoch`` (``memo.store.epochs``: a fresh random value, so a database
restored or swapped in under the connection never matches either).  So the stable cache is
kept across other connections' commits while that epoch holds, and emptied when it moves.
Without it an agent that writes once a second while it searches (or a server beside a
writer) read every candidate's meta again after each commit: ~1.2 ms of a 100k keyword
search's ~5 ms (docs/scale.md, "Session 29").  It is used only inside a read snapshot
``read_tx`` began itself, whose rows are all committed; a write of this connection (which
may yet roll back and leave its pks to other rows) empties it, and anywhere else (inside a
caller's transaction, on PostgreSQL) it is ``conn_cache``'s dict, emptied by every write.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memo.store.connect import snapshot_data_version
from memo.store.dialect import is_postgres
from memo.store.epochs import VECTORS
from memo.store.postgres.tx import generation

MAX_CONNECTIONS = 8
_ENTRIES: dict[int, tuple[sqlite3.Connection, tuple[int, int], dict[str, Any]]] = {}
# id(conn) -> (conn, (data_version, total_changes) last seen, removal epoch, total_changes at fill, dict)
_STABLE: dict[int, tuple[sqlite3.Connection, tuple[int, int], str | None, int, dict[str, Any]]] = {}
_EPOCH_SQL = f"SELECT value FROM memo_meta WHERE key = '{VECTORS}'"


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


def stable_cache(conn: sqlite3.Connection) -> dict[str, Any]:
    """A dict private to ``conn`` that outlives commits which only add rows (module docstring)."""
    version = None if is_postgres(conn) else snapshot_data_version(conn)
    if version is None:
        return conn_cache(conn)
    state = (version, conn.total_changes)
    entry = _STABLE.get(id(conn))
    if entry is not None and entry[0] is conn:
        if entry[1] == state:
            return entry[4]
        if conn.total_changes == entry[3]:      # other connections committed: did rows go away?
            epoch = _removal_epoch(conn)
            if epoch == entry[2]:
                _STABLE[id(conn)] = (conn, state, epoch, entry[3], entry[4])
                return entry[4]
    elif len(_STABLE) >= MAX_CONNECTIONS:
        del _STABLE[next(iter(_STABLE))]
    fresh: dict[str, Any] = {}
    _STABLE[id(conn)] = (conn, state, _removal_epoch(conn), conn.total_changes, fresh)
    return fresh


def _removal_epoch(conn: sqlite3.Connection) -> str | None:
    row = conn.execute(_EPOCH_SQL).fetchone()
    return None if row is None else str(row[0])


def forget(conn: sqlite3.Connection) -> None:
    """Drop ``conn``'s caches (call before closing a connection you will not reuse)."""
    _ENTRIES.pop(id(conn), None)
    _STABLE.pop(id(conn), None)
