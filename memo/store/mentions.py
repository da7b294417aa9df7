"""Entities, aliases and mentions (migration 3): derived tables, written in the same
transaction as the rows they come from and rebuilt from them by ``memo reindex``.

* ``entities(pk, key, name, kind)``: one row per case-folded key (``memo.text.entities``),
  shared by every namespace (a search only ever sees the mentions in its scope).
* ``entity_aliases(alias, entity_pk)``: the case-folded forms a query may name it by.
* ``mentions(seq, passage_pk, entity_pk, count, fact_pk)``: passage ``passage_pk``
  mentions the entity ``count`` times.  ``fact_pk`` NULL = the passage's own text, speaker
  or explicit entities (``record.meta["entities"]``); set = a live fact whose evidence the
  passage is names the entity (subject, object, names in its text): that is how facts'
  subject-object links enter the mention graph.

Kept in step:
* ``insert_record`` -> ``index_passage_mentions``; ``insert_fact`` -> ``index_fact_mentions``.
* Forgetting a record deletes its passages' mentions (forgotten records never come back);
  superseding keeps them (``as_of`` searches still see the old version; the live filter
  hides it from both arms, which apply the same scope).  Forgetting or superseding a fact
  deletes its mentions (fact mentions follow live facts only).  Purge deletes rows by
  foreign key.
* ``seq`` only grows (AUTOINCREMENT): the graph cache (``memo.graph.cache``) loads rows
  with ``seq`` above the last one it saw; any deletion bumps ``memo_meta.mentions_epoch``
  and the cache reloads in full.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence

from memo.store import epochs
from memo.store.dialect import is_postgres
from memo.stored import CURRENT
from memo.text.entities import EntityMention, aliases, extract, extract_record

DDL = """
CREATE TABLE entities (
    pk   INTEGER PRIMARY KEY,
    key  TEXT NOT NULL UNIQUE,        -- memo.text.entities.entity_key(name)
    name TEXT NOT NULL,               -- display form (first seen)
    kind TEXT NOT NULL                -- memo.text.entities.KINDS (first seen)
);
CREATE TABLE entity_aliases (
    alias     TEXT NOT NULL,          -- case-folded form a query may use
    entity_pk INTEGER NOT NULL REFERENCES entities(pk) ON DELETE CASCADE,
    PRIMARY KEY (alias, entity_pk)
) WITHOUT ROWID;
CREATE INDEX entity_aliases_entity ON entity_aliases(entity_pk);
CREATE TABLE mentions (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,   -- only grows: the graph cache loads new rows
    passage_pk INTEGER NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
    entity_pk  INTEGER NOT NULL REFERENCES entities(pk) ON DELETE CASCADE,
    count      INTEGER NOT NULL,
    fact_pk    INTEGER REFERENCES facts(pk) ON DELETE CASCADE   -- NULL: the passage's own text
);
CREATE UNIQUE INDEX mentions_key ON mentions(passage_pk, entity_pk, ifnull(fact_pk, 0));
CREATE INDEX mentions_entity ON mentions(entity_pk, passage_pk);
CREATE INDEX mentions_fact ON mentions(fact_pk) WHERE fact_pk IS NOT NULL;
INSERT INTO memo_meta(key, value) VALUES ('mentions_epoch', '0');
"""

LIVE_FACT = CURRENT
_CHUNK = 500                # keys per IN (...) list: well under SQLite's bound-parameter limit


def explicit_entities(meta: object) -> tuple[str, ...]:
    """``record.meta["entities"]``: names given by the caller (``--entity``, JSONL, MCP)."""
    if not isinstance(meta, dict):
        return ()
    value = meta.get("entities")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v.strip())


def _entity_pks(conn: sqlite3.Connection, found: Sequence[EntityMention]) -> list[int]:
    out = []
    for m in found:
        row = conn.execute("SELECT pk FROM entities WHERE key = ?", (m.key,)).fetchone()
        if row is None:
            pk = int(conn.execute("INSERT INTO entities(key, name, kind) VALUES (?, ?, ?)",
                                  (m.key, m.name, m.kind)).lastrowid)
            conn.executemany("INSERT OR IGNORE INTO entity_aliases(alias, entity_pk) VALUES (?, ?)",
                             [(a, pk) for a in aliases(m.key)])
        else:
            pk = int(row[0])
            if m.kind != INITIAL:
                confirm(conn, [pk])
        out.append(pk)
    return out


INITIAL = "initial"


def confirm(conn: sqlite3.Connection, pks: Sequence[int]) -> None:
    """Entities first seen only as a sentence-initial capitalised word (kind ``initial``)
    become names once a passage mentions them otherwise (in the store, whatever the order)."""
    for s in range(0, len(pks), _CHUNK):
        chunk = list(pks[s:s + _CHUNK])
        conn.execute(f"UPDATE entities SET kind = 'name' WHERE kind = 'initial' AND pk IN ({','.join('?' * len(chunk))})",
                     chunk)


def _write(conn: sqlite3.Connection, passage_pk: int, found: Sequence[EntityMention], fact_pk: int | None) -> int:
    if not found:
        return 0
    pks = _entity_pks(conn, found)
    conn.executemany(
        "INSERT INTO mentions(passage_pk, entity_pk, count, fact_pk) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET count = count + excluded.count",
        [(passage_pk, epk, m.count, fact_pk) for epk, m in zip(pks, found, strict=True)])
    return len(found)


HEADED_KINDS = ("doc", "code")   # kinds whose passage section is a heading path or a symbol


def passage_mentions(text: str, speaker: str | None, explicit: Sequence[str] = ()) -> list[EntityMention]:
    """The entities one passage mentions read alone (its text, its speaker, explicit ones)."""
    return extract(text, speaker=speaker, explicit=explicit)


def record_mentions(kind: str, title: str | None, passages: Sequence[tuple[str, str | None, str]],
                    explicit: Sequence[str] = ()) -> list[list[EntityMention]]:
    """The entities each passage of one record mentions, the record read as a whole
    (``memo.text.entities.extract_record``): ``passages`` holds (text, speaker, section) in
    order; the title is an entity of every passage; a doc's or code's section (heading
    path, symbol) is read with its passage."""
    heads = [sec or "" for _, _, sec in passages] if kind in HEADED_KINDS else None
    return extract_record([t for t, _, _ in passages], speakers=[sp for _, sp, _ in passages],
                          title=title, headings=heads, explicit=explicit)


def index_passage_mentions(conn: sqlite3.Connection, pks: Iterable[int], explicit: Sequence[str] = ()) -> int:
    """Extract and store the mentions of passages just inserted (caller's transaction):
    the passages of each record are read together (``record_mentions``)."""
    by_record: dict[str, list] = {}
    for pk in pks:
        row = conn.execute("SELECT p.text, p.speaker, p.section, p.record_id, r.kind, r.title FROM passages p "
                           "JOIN records r ON r.id = p.record_id WHERE p.pk = ?", (pk,)).fetchone()
        if row is not None:
            by_record.setdefault(row[3], []).append((int(pk), row))
    n = 0
    for rows in by_record.values():
        kind, title = rows[0][1][4], rows[0][1][5]
        found = record_mentions(kind, title, [(r[0], r[1], r[2]) for _, r in rows], explicit)
        for (pk, _), mentions in zip(rows, found, strict=True):
            n += _write(conn, pk, mentions, None)
    return n


def write_passage_mentions(conn: sqlite3.Connection,
                           found: Sequence[tuple[int, Sequence[EntityMention]]]) -> int:
    """Bulk form of ``index_passage_mentions`` (import batches): ``found`` holds (passage pk,
    its ``passage_mentions`` worked out before the write transaction) in insertion order.
    Same rows as passage-by-passage: a new entity takes the name and kind it was first
    seen with and the next pk in first-seen order, mentions get their ``seq`` in the same
    order.  One SELECT per 500 keys and one executemany per table instead of a SELECT and
    an INSERT per mention (caller's transaction)."""
    first: dict[str, EntityMention] = {}
    for _, mentions in found:
        for m in mentions:
            first.setdefault(m.key, m)
    if not first:
        return 0
    pks: dict[str, int] = {}
    initial: set[str] = set()          # stored entities still of kind 'initial'
    keys = list(first)
    for s in range(0, len(keys), _CHUNK):
        chunk = keys[s:s + _CHUNK]
        for pk, key, kind in conn.execute(
                f"SELECT pk, key, kind FROM entities WHERE key IN ({','.join('?' * len(chunk))})", chunk):
            pks[key] = int(pk)
            if kind == INITIAL:
                initial.add(key)
    confirmed = {m.key for _, mentions in found for m in mentions if m.kind != INITIAL}
    new = [m for key, m in first.items() if key not in pks]
    first = {k: (EntityMention(m.key, m.name, "name", m.count) if m.kind == INITIAL and k in confirmed else m)
             for k, m in first.items()}
    new = [first[m.key] for m in new]
    if new:
        # What INSERT without a pk would give, one row after the other: max(pk) + 1.
        base = int(conn.execute("SELECT ifnull(max(pk), 0) FROM entities").fetchone()[0])
        rows = [(base + k, m.key, m.name, m.kind) for k, m in enumerate(new, start=1)]
        pks.update((key, pk) for pk, key, _, _ in rows)
        conn.executemany("INSERT INTO entities(pk, key, name, kind) VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT OR IGNORE INTO entity_aliases(alias, entity_pk) VALUES (?, ?)",
                         [(a, pk) for pk, key, _, _ in rows for a in aliases(key)])
    # Only stored entities still 'initial' can change: confirm's UPDATE leaves the others as
    # they are, and asking it about every confirmed entity of a batch (thousands) cost ~4% of
    # an index-only import (issue 31.3).  New ones were inserted with their final kind.
    confirm(conn, [pks[k] for k in confirmed if k in initial])
    rows_m = [(ppk, pks[m.key], m.count, None) for ppk, mentions in found for m in mentions]
    conn.executemany(
        "INSERT INTO mentions(passage_pk, entity_pk, count, fact_pk) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET count = count + excluded.count", rows_m)
    return len(rows_m)


def index_fact_mentions(conn: sqlite3.Connection, fact_pk: int, passages: Collection[int] | None = None) -> int:
    """A fact names its subject, object and the names in its text; each of its evidence
    passages (or those of ``passages`` only: evidence added later, ``facts.carry_evidence``)
    gets those as mentions tagged with the fact (caller's transaction).  A passage of a
    forgotten record gets none: ``forget`` dropped its mentions for good, and ``memo
    reindex`` (or an import of an export) wrote them back for a live fact citing it."""
    row = conn.execute("SELECT text, subject, object FROM facts WHERE pk = ?", (fact_pk,)).fetchone()
    if row is None:
        return 0
    found = extract(row[0], fact_terms=[t for t in (row[1], row[2]) if t])
    ppks = [int(r[0]) for r in conn.execute(
        "SELECT e.passage_pk FROM fact_evidence e JOIN passages p ON p.pk = e.passage_pk "
        "JOIN records r ON r.id = p.record_id WHERE e.fact_pk = ? AND r.forgotten_at IS NULL "
        "ORDER BY e.passage_pk", (fact_pk,))
            if passages is None or int(r[0]) in passages]
    if not found or not ppks:
        return 0
    # The same entities on every evidence passage: their pks are looked up once and the
    # rows go in one statement (a fact may cite up to MAX_EVIDENCE_PASSAGES passages, all
    # inside the writers' queue); rows and their order are those of passage-by-passage.
    epks = _entity_pks(conn, found)
    conn.executemany(
        "INSERT INTO mentions(passage_pk, entity_pk, count, fact_pk) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET count = count + excluded.count",
        [(ppk, epk, m.count, fact_pk) for ppk in ppks for epk, m in zip(epks, found, strict=True)])
    return len(found) * len(ppks)


def bump_mentions_epoch(conn: sqlite3.Connection) -> None:
    """Rows went away: graph caches reload in full (a fresh random epoch, ``memo.store.epochs``)."""
    epochs.bump(conn, epochs.MENTIONS)


def drop_record_mentions(conn: sqlite3.Connection, record_ids: Iterable[str]) -> int:
    """Delete the mentions of these records' passages (forget; caller's transaction)."""
    n = 0
    for rid in record_ids:
        n += conn.execute("DELETE FROM mentions WHERE passage_pk IN (SELECT pk FROM passages WHERE record_id = ?)",
                          (rid,)).rowcount
    if n:
        bump_mentions_epoch(conn)
    return n


def drop_fact_mentions(conn: sqlite3.Connection, fact_ids: Iterable[str]) -> int:
    """Delete the mentions a fact contributed (fact forgotten or superseded)."""
    n = 0
    for fid in fact_ids:
        n += conn.execute("DELETE FROM mentions WHERE fact_pk = (SELECT pk FROM facts WHERE id = ?)",
                          (fid,)).rowcount
    if n:
        bump_mentions_epoch(conn)
    return n


def rebuild_mentions(conn: sqlite3.Connection) -> dict[str, int]:
    """Rebuild entities, aliases and mentions from passages of records that are not
    forgotten and from live facts (caller holds a write tx; ``memo reindex``, migration 3)."""
    conn.execute("DELETE FROM mentions")
    conn.execute("DELETE FROM entity_aliases")
    conn.execute("DELETE FROM entities")
    n = 0
    # Records in insertion order: SQLite's rowid; PostgreSQL's records have none, their
    # first passage's pk (given in insertion order, with the record) is the same order.
    order = ("(SELECT min(p.pk) FROM passages p WHERE p.record_id = records.id), id" if is_postgres(conn)
             else "rowid")
    for rid, meta in conn.execute(f"SELECT id, meta FROM records WHERE forgotten_at IS NULL ORDER BY {order}").fetchall():
        try:
            explicit = explicit_entities(json.loads(meta or "{}"))
        except ValueError:
            explicit = ()
        pks = [r[0] for r in conn.execute("SELECT pk FROM passages WHERE record_id = ? ORDER BY ord", (rid,))]
        n += index_passage_mentions(conn, pks, explicit)
    facts = 0
    for (fpk,) in conn.execute(f"SELECT pk FROM facts WHERE {LIVE_FACT} ORDER BY pk").fetchall():
        n += index_fact_mentions(conn, int(fpk))
        facts += 1
    bump_mentions_epoch(conn)
    return {"mentions": n, "entities": int(conn.execute("SELECT count(*) FROM entities").fetchone()[0]),
            "facts": facts}


def m003_entities(conn: sqlite3.Connection, run_script) -> None:  # noqa: ANN001 - migrations' runner
    """Migration 3: the tables above, filled from the rows already stored."""
    run_script(conn, DDL)
    rebuild_mentions(conn)


# --- reads (the entity and graph arms, memo entities) -----------------------------------

def entities_by_alias(conn: sqlite3.Connection, forms: Sequence[str]) -> dict[str, list[tuple[int, str, str]]]:
    """alias -> [(entity pk, key, display name)] for the given case-folded forms."""
    out: dict[str, list[tuple[int, str, str]]] = {}
    forms = list(dict.fromkeys(forms))
    for s in range(0, len(forms), 500):
        chunk = forms[s:s + 500]
        for alias, pk, key, name in conn.execute(
                "SELECT a.alias, e.pk, e.key, e.name FROM entity_aliases a JOIN entities e ON e.pk = a.entity_pk "
                f"WHERE a.alias IN ({','.join('?' * len(chunk))}) ORDER BY e.pk", chunk):
            out.setdefault(alias, []).append((int(pk), key, name))
    return out


def scoped_mentions(conn: sqlite3.Connection, entity_pks: Sequence[int], scope_where: str,
                    scope_params: Sequence[object], *, min_entities: int = 1) -> list[tuple[int, int]]:
    """Distinct (passage pk, entity pk) for these entities, passages inside the scope
    (the WHERE over ``passages p JOIN records r`` every arm applies), of the passages that
    mention at least ``min_entities`` of them.

    With ``min_entities`` > 1 the passages are counted first on the covering index
    ``mentions_entity`` alone (which entities a passage mentions does not depend on the
    scope, which keeps or drops a passage whole), and only those join passages and
    records: an entity named in thousands of passages cost one join per mention (~13 ms
    for 1,742 mentions at 1M passages, where the count takes ~1 ms and usually keeps none)."""
    if not entity_pks:
        return []
    marks = ",".join("?" * len(entity_pks))
    only = ""
    params: tuple[object, ...] = (*entity_pks, *scope_params)
    if min_entities > 1:
        keep = [int(r[0]) for r in conn.execute(
            f"SELECT passage_pk FROM mentions WHERE entity_pk IN ({marks}) GROUP BY passage_pk "
            "HAVING count(DISTINCT entity_pk) >= ?", (*entity_pks, min_entities))]
        if not keep:
            return []
        only = " AND m.passage_pk IN (SELECT value FROM json_each(?))"
        params = (*entity_pks, json.dumps(keep), *scope_params)
    return [(int(r[0]), int(r[1])) for r in conn.execute(
        "SELECT DISTINCT m.passage_pk, m.entity_pk FROM mentions m JOIN passages p ON p.pk = m.passage_pk "
        f"JOIN records r ON r.id = p.record_id WHERE m.entity_pk IN ({marks}){only} AND " + (scope_where or "1"),
        params)]


def df_outside(conn: sqlite3.Connection, entity_pks: Sequence[int], excluded: Collection[int]) -> dict[int, int]:
    """entity pk -> passages that mention it, minus those in ``excluded`` (a scope given by
    its few excluded passages, ``memo.retrieve.scope.scope_stats``).  Reads only the
    covering index mentions_entity: no join with passages and records per mention, which
    is what makes ``scoped_df`` slow for an entity named in thousands of passages."""
    if not entity_pks:
        return {}
    marks = ",".join("?" * len(entity_pks))
    out = {int(r[0]): int(r[1]) for r in conn.execute(
        f"SELECT entity_pk, count(DISTINCT passage_pk) FROM mentions WHERE entity_pk IN ({marks}) GROUP BY entity_pk",
        tuple(entity_pks))}
    if excluded and out:
        gone = json.dumps(sorted(excluded))
        for epk, n in conn.execute(
                f"SELECT entity_pk, count(DISTINCT passage_pk) FROM mentions WHERE entity_pk IN ({marks}) "
                "AND passage_pk IN (SELECT value FROM json_each(?)) GROUP BY entity_pk", (*entity_pks, gone)):
            out[int(epk)] -= int(n)
    return {k: v for k, v in out.items() if v > 0}


def scoped_df(conn: sqlite3.Connection, entity_pks: Sequence[int], scope_where: str,
              scope_params: Sequence[object]) -> dict[int, int]:
    """entity pk -> number of in-scope passages that mention it."""
    if not entity_pks:
        return {}
    marks = ",".join("?" * len(entity_pks))
    return {int(r[0]): int(r[1]) for r in conn.execute(
        "SELECT m.entity_pk, count(DISTINCT m.passage_pk) FROM mentions m JOIN passages p ON p.pk = m.passage_pk "
        f"JOIN records r ON r.id = p.record_id WHERE m.entity_pk IN ({marks}) AND " + (scope_where or "1")
        + " GROUP BY m.entity_pk", (*entity_pks, *scope_params))}
