"""What the stages after fusion know of each candidate from the arms' hits alone, kept for
the searches that fuse the very same hits.

An eval grid (``ArmServices.arm_cache``) fuses one query's hits again in every run, with
other fusion, recency or cutoff constants: the arm-hit cache hands each run the same hit
tuples.  What depends on those hits and not on the constants is then the same in every
run: the candidates' meta (``fetch_meta``: the fused set is the union of the hits) and the
rows of those returned so far (``fetch_rows``), each candidate's best cosine and its band,
and abstention rule 1's verdict on it (both read the arms' raw scores and votes, never a
contribution).  Working them out again cost ~200 lookups per stage in each of a grid's runs.

An entry lives in the connection's cache (``conn_cache``: emptied when the data changes)
and is keyed by the identity of the hit tuples; it holds the tuples, so no id it is keyed
by can be reused while it lives.  A search without the arm-hit cache (every search a
user runs) gets None and computes everything, as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.fetch import PassageRow, fetch_meta, fetch_rows
from memo.retrieve.types import ArmRun, Candidate, Meta

MEMO_MAX = 64     # entries per connection and data state (a grid works one query at a time)


def hit_memo(conn: sqlite3.Connection, runs: Sequence[ArmRun]) -> dict[Any, Any]:
    """The dict private to this exact set of hits (the runs that ran and returned some),
    for this connection's data state."""
    live = tuple(r.hits for r in runs if r.ran and r.hits)
    key = (tuple(r.name for r in runs if r.ran and r.hits), tuple(map(id, live)))
    entries = conn_cache(conn).setdefault("hit_memo", {})
    got = entries.get(key)
    if got is not None:
        return got[1]
    if len(entries) >= MEMO_MAX:
        entries.clear()
    memo: dict[Any, Any] = {}
    entries[key] = (live, memo)
    return memo


def part(memo: dict[Any, Any] | None, key: Any) -> dict[Any, Any] | None:
    """The memo's dict for one stage's values (None without a memo: the stage computes)."""
    return None if memo is None else memo.setdefault(key, {})


def meta_of(conn: sqlite3.Connection, runs: Sequence[ArmRun], memo: dict[Any, Any] | None) -> dict[int, Meta]:
    """``fetch_meta`` of every passage the arms that ran returned: the union of their hits,
    which is the fused set in every run (read before fusion, so stage 3 can read the kinds),
    read once for these hits."""
    meta = memo.get("meta") if memo is not None else None
    if meta is None:
        meta = fetch_meta(conn, list(dict.fromkeys(h.pk for r in runs if r.ran for h in r.hits)))
        if memo is not None:
            memo["meta"] = meta
    return meta


def rows_of(conn: sqlite3.Connection, packed: Sequence[Candidate],
            memo: dict[Any, Any] | None) -> dict[int, PassageRow]:
    """``fetch_rows`` of the results; with a memo, the rows its searches returned so far,
    this one's new ones read and added."""
    if memo is None:
        return fetch_rows(conn, [c.pk for c in packed])
    rows = memo.get("rows")
    if rows is None:
        rows = memo["rows"] = {}
    missing = [c.pk for c in packed if c.pk not in rows]
    if missing:
        rows.update(fetch_rows(conn, missing))
    return rows
