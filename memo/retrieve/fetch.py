"""The pipeline's two reads after the arms: one query each, never one per candidate.

* ``fetch_meta``: kind, namespace, source, tokens, date, speaker, section and record of
  every fused candidate (recency, speaker, dates, headings, context, budget and
  narrow_hint need them);
* ``fetch_rows``: text and provenance of the final results only.

Both are cached per connection until passages go away (``stable_cache``: a commit that
only adds rows leaves a stored passage's meta and row as they were): eval replay meets the
same passages again and again, an agent's searches between its writes meet the same popular
passages, and reading 100 result rows through a join costs more than the rest of stages 3-9
together (docs/results-log.md "Arms in one thread,
the arm-hit cache, the candidate fetch").  Rows are tuples
(``PassageRow``), never ``sqlite3.Row``: the cache must not depend on the connection's
row factory, and tuple access is cheaper.

The pk list goes in as one JSON parameter (``json_each``), so the SQL text is constant
and SQLite's statement cache reuses the plan.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from memo.retrieve.conn_cache import stable_cache
from memo.retrieve.types import Meta

META_CACHE_MAX = 200_000   # ~40 MB worst case; cleared, not evicted one by one
ROWS_CACHE_MAX = 20_000    # rows hold passage text: ~40 MB at 2 KB a passage


class PassageRow(NamedTuple):
    """What a ``Result`` and its ``why`` need from passages + records."""

    id: str
    record_id: str
    text: str
    section: str
    tokens: int
    p_event_at: str | None
    kind: str
    namespace: str
    source: str | None
    author: str | None
    import_path: str | None
    recorded_at: str
    content_hash: str
    r_event_at: str | None
    library: str | None
    version: str | None


_META_SQL = (
    "SELECT p.pk, r.kind, r.namespace, r.source, p.tokens,"
    " COALESCE(p.event_at, r.event_at, r.recorded_at), p.speaker, p.section, p.record_id,"
    " (p.event_at IS NOT NULL OR r.event_at IS NOT NULL)"
    " FROM passages p JOIN records r ON r.id = p.record_id"
    " WHERE p.pk IN (SELECT value FROM json_each(?))")

_ROWS_SQL = (   # column order = PassageRow after the pk
    "SELECT p.pk, p.id, p.record_id, p.text, p.section, p.tokens, p.event_at,"
    " r.kind, r.namespace, r.source, r.author, r.import_path, r.recorded_at, r.content_hash,"
    " r.event_at, r.library, r.version"
    " FROM passages p JOIN records r ON r.id = p.record_id"
    " WHERE p.pk IN (SELECT value FROM json_each(?))")


def fetch_meta(conn: sqlite3.Connection, pks: Iterable[int]) -> dict[int, Meta]:
    """Meta of ``pks`` (those that still exist)."""
    return _cached(conn, "meta", META_CACHE_MAX, _META_SQL, pks, Meta)


def fetch_rows(conn: sqlite3.Connection, pks: Iterable[int]) -> dict[int, PassageRow]:
    """Result rows of ``pks`` (those that still exist)."""
    return _cached(conn, "rows", ROWS_CACHE_MAX, _ROWS_SQL, pks, PassageRow)


def _cached(conn: sqlite3.Connection, name: str, cap: int, sql: str, pks: Iterable[int], make) -> dict:
    cache: dict = stable_cache(conn).setdefault(name, {})
    pks = pks if isinstance(pks, list) else list(pks)
    try:    # every pk read before (eval replay: the same candidates in every run of a grid)
        return {pk: cache[pk] for pk in pks}
    except KeyError:
        pass
    out, missing = {}, []
    get = cache.get
    for pk in pks:
        m = get(pk)
        if m is None:
            missing.append(pk)
        else:
            out[pk] = m
    if missing:
        if len(cache) > cap:
            cache.clear()
        for row in conn.execute(sql, (json.dumps(missing),)):
            out[row[0]] = cache[row[0]] = make._make(tuple(row)[1:])
    return out
