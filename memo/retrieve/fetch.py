"""The pipeline's two reads after the arms: one query each, never one per candidate.

* ``fetch_meta``: kind, namespace, source, tokens and date of every fused candidate
  (recency, budget and narrow_hint need them); cached per connection until data changes.
* ``fetch_rows``: text and provenance of the final results only.

The pk list goes in as one JSON parameter (``json_each``), so the SQL text is constant
and SQLite's statement cache reuses the plan.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.types import Meta

META_CACHE_MAX = 200_000   # ~40 MB worst case; cleared, not evicted one by one

_META_SQL = (
    "SELECT p.pk, r.kind, r.namespace, r.source, p.tokens,"
    " COALESCE(p.event_at, r.event_at, r.recorded_at)"
    " FROM passages p JOIN records r ON r.id = p.record_id"
    " WHERE p.pk IN (SELECT value FROM json_each(?))")

_ROWS_SQL = (
    "SELECT p.pk, p.id, p.record_id, p.text, p.section, p.tokens, p.event_at AS p_event_at,"
    " r.kind, r.namespace, r.source, r.author, r.import_path, r.recorded_at, r.content_hash,"
    " r.event_at AS r_event_at"
    " FROM passages p JOIN records r ON r.id = p.record_id"
    " WHERE p.pk IN (SELECT value FROM json_each(?))")


def fetch_meta(conn: sqlite3.Connection, pks: Iterable[int]) -> dict[int, Meta]:
    """Meta of ``pks``; rows already read since the data last changed come from the
    connection cache (eval replay meets the same passages again and again)."""
    cache: dict[int, Meta] = conn_cache(conn).setdefault("meta", {})
    out, missing = {}, []
    for pk in pks:
        m = cache.get(pk)
        if m is None:
            missing.append(pk)
        else:
            out[pk] = m
    if missing:
        if len(cache) > META_CACHE_MAX:
            cache.clear()
        for row in conn.execute(_META_SQL, (json.dumps(missing),)):
            out[row[0]] = cache[row[0]] = Meta(row[1], row[2], row[3], row[4], row[5])
    return out


def fetch_rows(conn: sqlite3.Connection, pks: Iterable[int]) -> dict[int, sqlite3.Row]:
    pks = list(pks)
    if not pks:
        return {}
    return {row["pk"]: row for row in conn.execute(_ROWS_SQL, (json.dumps(pks),))}
