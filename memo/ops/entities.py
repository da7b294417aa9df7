"""Entity operations behind ``memo entities list / show`` (and any other skin): read-only
views of the mention tables (memo/store/mentions.py) over live passages.

* ``list_entities``: entities with their number of live passages that mention them
  (most mentioned first, then key), optionally in some namespaces, optionally only keys
  containing a text.
* ``show_entity``: one entity (by name or alias, case-folded), its mentions (live
  passages, newest record first) and the entities mentioned in the same passages
  (co-mentions, most shared passages first).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from memo.errors import NotFound, ValidationError
from memo.ops.guard import store_errors
from memo.ops.paging import check_page
from memo.text.entities import entity_key

LIVE = "r.superseded_at IS NULL AND r.forgotten_at IS NULL"


@dataclass(frozen=True, slots=True)
class EntitySummary:
    key: str
    name: str
    kind: str
    passages: int          # live passages that mention it (in the namespaces asked for)
    mentions: int          # occurrences in them (sum of counts)


@dataclass(frozen=True, slots=True)
class EntityMentionRow:
    passage_id: str
    record_id: str
    namespace: str
    count: int
    via_fact: str | None   # fact id when a fact (not the passage's text) names it
    text: str


@dataclass(frozen=True, slots=True)
class CoMention:
    key: str
    name: str
    passages: int          # live passages mentioning both


@dataclass(frozen=True, slots=True)
class EntityDetail:
    key: str
    name: str
    kind: str
    aliases: tuple[str, ...]
    passages: int
    mentions: tuple[EntityMentionRow, ...]
    co_mentioned: tuple[CoMention, ...]


def _ns_where(namespaces: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    ns = tuple(dict.fromkeys(namespaces))
    if not ns:
        return "", ()
    return f" AND r.namespace IN ({','.join('?' * len(ns))})", ns


@store_errors("entities list")
def list_entities(conn: sqlite3.Connection, *, namespaces: Sequence[str] = (), contains: str | None = None,
                  limit: int = 50, offset: int = 0) -> tuple[EntitySummary, ...]:
    check_page(limit, offset)
    ns_sql, ns_params = _ns_where(namespaces)
    extra, extra_params = "", ()
    if contains:
        extra, extra_params = " AND instr(e.key, ?) > 0", (entity_key(contains),)
    rows = conn.execute(
        "SELECT e.key, e.name, e.kind, count(DISTINCT m.passage_pk), sum(m.count) FROM entities e "
        "JOIN mentions m ON m.entity_pk = e.pk JOIN passages p ON p.pk = m.passage_pk "
        f"JOIN records r ON r.id = p.record_id WHERE {LIVE}{ns_sql}{extra} "
        "GROUP BY e.pk ORDER BY count(DISTINCT m.passage_pk) DESC, e.key LIMIT ? OFFSET ?",
        (*ns_params, *extra_params, limit, offset)).fetchall()
    return tuple(EntitySummary(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows)


@store_errors("entities show")
def show_entity(conn: sqlite3.Connection, name: str, *, namespaces: Sequence[str] = (), limit: int = 50,
                co_limit: int = 20) -> EntityDetail:
    key = entity_key(name)
    if not key:
        raise ValidationError("entity name is empty")
    row = conn.execute("SELECT pk, key, name, kind FROM entities WHERE key = ?", (key,)).fetchone()
    if row is None:
        row = conn.execute("SELECT e.pk, e.key, e.name, e.kind FROM entity_aliases a JOIN entities e "
                           "ON e.pk = a.entity_pk WHERE a.alias = ? ORDER BY e.pk LIMIT 1", (key,)).fetchone()
    if row is None:
        raise NotFound(f"no entity named {name!r}", hint="`memo entities list --contains TEXT` shows known entities")
    pk = int(row[0])
    ns_sql, ns_params = _ns_where(namespaces)
    aliases = tuple(r[0] for r in conn.execute("SELECT alias FROM entity_aliases WHERE entity_pk = ? ORDER BY alias",
                                               (pk,)))
    n = int(conn.execute(
        "SELECT count(DISTINCT m.passage_pk) FROM mentions m JOIN passages p ON p.pk = m.passage_pk "
        f"JOIN records r ON r.id = p.record_id WHERE m.entity_pk = ? AND {LIVE}{ns_sql}", (pk, *ns_params)).fetchone()[0])
    mentions = tuple(EntityMentionRow(r[0], r[1], r[2], int(r[3]), r[4], r[5]) for r in conn.execute(
        "SELECT p.id, p.record_id, r.namespace, m.count, f.id, p.text FROM mentions m "
        "JOIN passages p ON p.pk = m.passage_pk JOIN records r ON r.id = p.record_id "
        f"LEFT JOIN facts f ON f.pk = m.fact_pk WHERE m.entity_pk = ? AND {LIVE}{ns_sql} "
        "ORDER BY r.recorded_at DESC, p.pk DESC LIMIT ?", (pk, *ns_params, limit)))
    co = tuple(CoMention(r[0], r[1], int(r[2])) for r in conn.execute(
        "SELECT e.key, e.name, count(DISTINCT o.passage_pk) AS n FROM mentions m "
        "JOIN passages p ON p.pk = m.passage_pk JOIN records r ON r.id = p.record_id "
        "JOIN mentions o ON o.passage_pk = m.passage_pk AND o.entity_pk != m.entity_pk "
        f"JOIN entities e ON e.pk = o.entity_pk WHERE m.entity_pk = ? AND {LIVE}{ns_sql} "
        "GROUP BY e.pk ORDER BY n DESC, e.key LIMIT ?", (pk, *ns_params, co_limit)))
    return EntityDetail(row[1], row[2], row[3], aliases, n, mentions, co)
