"""Canonical record writes and reads.  Callers hold the transaction (``write_tx``);
functions here never commit, so a batch is all-or-nothing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memo.dc_pickle import by_fields
from memo.errors import NotFound, StoreCorrupt, ValidationError
from memo.store.damage import db_path_of, mark_damaged
from memo.store.derived import index_passage_range, index_passages, passage_terms
from memo.store.dialect import is_postgres
from memo.store.mentions import (
    explicit_entities,
    index_passage_mentions,
    record_mentions,
    write_passage_mentions,
)
from memo.stored import CURRENT, Passage, PassageDraft, Record, RecordDraft
from memo.text.entities import EntityMention
from memo.text.limits import MAX_BODY_CHARS, MAX_ENTITIES, MAX_TAGS, check_list
from memo.text.namespaces import check_namespace
from memo.text.tags import tag_form
from memo.text.tokens import count_tokens
from memo.text.when import stored_when
from memo.types import KINDS


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_record_id() -> str:
    # Time-ordered prefix (list order = insertion order) + random tail (no collisions
    # between processes).
    return f"r{datetime.now(UTC).strftime('%y%m%d%H%M%S')}{uuid.uuid4().hex[:10]}"


def content_hash(body: str) -> str:
    normalised = "\n".join(line.rstrip() for line in body.strip().splitlines())
    return hashlib.sha256(normalised.encode("utf-8", "surrogatepass")).hexdigest()


def record_hash(draft: RecordDraft) -> str:
    """A record's dedup key (``records.content_hash``): its normalised body's hash, and for
    a record that names a library or a version, those with it.  The same text imported as
    Node 20's and as Node 22's docs is two records, one per version: with the body alone the
    second import skipped the file as a duplicate of the first, and a search with
    ``--version 22`` found nothing of it."""
    body = content_hash(draft.body)
    if draft.library is None and draft.version is None:
        return body
    key = f"{draft.library or ''}\x1f{draft.version or ''}\x1f{body}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def validate_draft(draft: RecordDraft) -> None:
    # The library's callers pass Python values the CLI and MCP never produce: a string for
    # tags was stored as one tag per character, a list for meta as it is.
    if isinstance(draft.tags, str) or not all(isinstance(t, str) for t in draft.tags):
        raise ValidationError(f"tags must be a list of text values, not {draft.tags!r}",
                              hint="pass tags=('a', 'b')")
    if not isinstance(draft.meta, dict):
        raise ValidationError(f"meta must be a JSON object (a dict), not {type(draft.meta).__name__}")
    if draft.kind not in KINDS:
        raise ValidationError(f"kind {draft.kind!r} is not one of {', '.join(KINDS)}")
    if len(draft.body) > MAX_BODY_CHARS:
        raise ValidationError(
            f"text is {len(draft.body):,} characters, over the {MAX_BODY_CHARS:,}-character cap for one record",
            hint="split it: put the parts in a folder and run `memo import <folder>`, or write one "
                 "record per line to a .jsonl file and run `memo import <file>.jsonl` (committed in batches)")
    if not draft.body.strip():
        raise ValidationError("text is empty")
    if not (0.0 <= float(draft.trust) <= 1.0):
        raise ValidationError(f"trust {draft.trust} is outside 0..1")
    check_namespace(draft.namespace)
    check_list("tags", draft.tags, MAX_TAGS)
    for tag in draft.tags:
        if not tag_form(tag):
            raise ValidationError("a tag is empty" if not tag.strip() else f"tag {tag!r} is empty without its '#'")
    check_list("entities", explicit_entities(draft.meta), MAX_ENTITIES,
               hint=f"name at most {MAX_ENTITIES} entities (--entity, entities, meta.entities) per record; "
                    "names in the text are found without being listed")


def find_live_duplicate(conn: sqlite3.Connection, namespace: str, chash: str) -> str | None:
    """The current record of the namespace holding this text (``records_dedup``: one at
    most).  A superseded or forgotten record does not count: its text may be current again."""
    row = conn.execute(
        f"SELECT id FROM records WHERE namespace = ? AND content_hash = ? AND {CURRENT}",
        (namespace, chash)).fetchone()
    if row is not None:
        return row["id"]
    check_dedup_index(conn, [(namespace, chash)])
    return None


def find_older_version(conn: sqlite3.Connection, namespace: str, chash: str) -> tuple[str, str] | None:
    """(an older version holding this text, the current record that replaced it), when no
    current record holds the text but a superseded one does whose line of versions ends in
    a current record: ``memo add`` of that text skips it and names the version to supersede.
    None when every such line ends forgotten (the text is then nowhere: it may be added)."""
    rows = conn.execute(
        "SELECT id, superseded_by FROM records WHERE namespace = ? AND content_hash = ? "
        "AND superseded_at IS NOT NULL AND forgotten_at IS NULL ORDER BY superseded_at DESC, id",
        (namespace, chash)).fetchall()
    for old_id, nxt in rows:
        seen = {old_id}
        while nxt is not None and nxt not in seen:      # a cycle cannot be written; guard anyway
            seen.add(nxt)
            row = conn.execute("SELECT superseded_by, superseded_at, forgotten_at FROM records WHERE id = ?",
                               (nxt,)).fetchone()
            if row is None or row[2] is not None:
                break
            if row[1] is None:
                return old_id, nxt
            nxt = row[0]
    return None


def check_dedup_index(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> None:
    """The dedup index (``records_dedup``) said no live record holds these (namespace,
    content hash) keys: ask the plain ``records_hash`` index too (SQLite; migration 5).  A
    live record it finds means the dedup index lost entries, and the write about to store a
    second live copy is refused, the file marked for ``memo reindex`` (StoreCorrupt)."""
    if not keys or is_postgres(conn):
        return
    wanted = set(keys)
    hashes = sorted({h for _, h in keys})
    found: list[str] = []
    try:
        for start in range(0, len(hashes), 500):
            chunk = hashes[start:start + 500]
            found += [str(r[0]) for r in conn.execute(
                "SELECT id, namespace, content_hash FROM records INDEXED BY records_hash WHERE content_hash IN "
                f"({','.join('?' * len(chunk))}) AND {CURRENT}", chunk) if (r[1], r[2]) in wanted]
    except sqlite3.OperationalError as exc:
        if "no such index" in str(exc):     # a file not yet migrated (reads only get here)
            return
        raise
    if found:
        path = db_path_of(conn)
        reason = (f"the dedup index records_dedup misses live records {' '.join(found[:5])}: "
                  "a write would store a second live copy")
        if path:
            mark_damaged(path, reason, repair="reindex")
        raise StoreCorrupt(reason + "; writes are refused",
                           hint="run `memo reindex` (rebuilds the indexes from the table; nothing is lost)")


def insert_record(conn: sqlite3.Connection, draft: RecordDraft,
                  passages: tuple[PassageDraft, ...], *, recorded_at: str | None = None) -> str:
    """Insert one record, its tags and passages, and index the passages.  Returns the id.
    The caller has checked for duplicates and holds a write transaction."""
    validate_draft(draft)
    if not passages:
        raise ValidationError("a record needs at least one passage")
    rid = draft.id or new_record_id()
    conn.execute(
        """INSERT INTO records (id, namespace, kind, title, source, library, version, event_at,
               recorded_at, trust, author, import_path, ext_id, content_hash, body, meta)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (rid, draft.namespace, draft.kind, draft.title, draft.source, draft.library, draft.version,
         stored_when(draft.event_at), recorded_at or utc_now(), float(draft.trust), draft.author,
         draft.import_path, draft.ext_id, record_hash(draft), draft.body,
         json.dumps(draft.meta, sort_keys=True)))
    conn.executemany("INSERT OR IGNORE INTO record_tags(record_id, tag) VALUES (?, ?)",
                     [(rid, t.strip()) for t in draft.tags])
    pks = []
    for ord_, p in enumerate(passages):
        cur = conn.execute(
            """INSERT INTO passages (id, record_id, ord, section, text, speaker, event_at, ext_id, tokens)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (f"{rid}:{ord_}", rid, ord_, p.section, p.text, p.speaker, stored_when(p.event_at or draft.event_at),
             p.ext_id, passage_tokens(p)))
        pks.append(int(cur.lastrowid))
    index_passages(conn, pks)
    index_passage_mentions(conn, pks, explicit_entities(draft.meta))
    return rid


def passage_tokens(p: PassageDraft) -> int:
    """``passages.tokens``: the token count of the section line and the text."""
    return count_tokens(f"{p.section}\n{p.text}" if p.section else p.text)


@by_fields
@dataclass(frozen=True, slots=True)
class DerivedPassage:
    """A passage with what its rows in the derived indexes hold, worked out before the
    write transaction (pure functions of its text: the lock is held for the writes only)."""

    draft: PassageDraft
    tokens: int                           # passage_tokens
    terms: str                            # memo.store.derived.passage_terms
    mentions: tuple[EntityMention, ...]   # memo.store.mentions.record_mentions


def derive_passages(draft: RecordDraft, passages: Sequence[PassageDraft]) -> tuple[DerivedPassage, ...]:
    found = record_mentions(draft.kind, draft.title, [(p.text, p.speaker, p.section) for p in passages],
                            explicit_entities(draft.meta))
    return tuple(DerivedPassage(p, passage_tokens(p), passage_terms(p.section, p.text), tuple(m))
                 for p, m in zip(passages, found, strict=True))


@dataclass(frozen=True, slots=True)
class NewRecord:
    """One record of a bulk insert: its id and recorded_at chosen by the caller;
    ``superseded_at`` set when a later record of the same batch replaces it (it goes in
    out of the dedup index; the caller points ``superseded_by`` at its successor after);
    ``forgotten_at`` set for a forgotten version an export carried (``memo.ops.export_restore``:
    its passages get no mentions, as ``forget`` drops them)."""

    id: str
    draft: RecordDraft
    content_hash: str
    recorded_at: str
    passages: tuple[DerivedPassage, ...]
    superseded_at: str | None = None
    forgotten_at: str | None = None


def insert_records(conn: sqlite3.Connection, records: Sequence[NewRecord]) -> int:
    """Bulk form of ``insert_record`` (import batches): the same rows, with the same pks,
    ``seq`` values and entity pks as inserting the records one by one in this order, written
    with one statement per table.  Passage pks are given explicitly as SQLite would pick
    them (max(pk) + 1, one after the other), so the derived indexes need not read them
    back.  The caller checked for duplicates and holds the write transaction.  Returns
    the number of passages."""
    for r in records:
        validate_draft(r.draft)
        if not r.passages:
            raise ValidationError("a record needs at least one passage")
    if not records:
        return 0
    conn.executemany(
        """INSERT INTO records (id, namespace, kind, title, source, library, version, event_at,
               recorded_at, superseded_at, forgotten_at, trust, author, import_path, ext_id, content_hash, body, meta)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [(r.id, d.namespace, d.kind, d.title, d.source, d.library, d.version, stored_when(d.event_at), r.recorded_at,
          r.superseded_at, r.forgotten_at, float(d.trust), d.author, d.import_path, d.ext_id, r.content_hash, d.body,
          json.dumps(d.meta, sort_keys=True)) for r in records for d in (r.draft,)])
    conn.executemany("INSERT OR IGNORE INTO record_tags(record_id, tag) VALUES (?, ?)",
                     [(r.id, tag_form(t)) for r in records for t in r.draft.tags])
    first = int(conn.execute("SELECT ifnull(max(pk), 0) + 1 FROM passages").fetchone()[0])
    rows, terms, found = [], [], []
    pk = first
    for r in records:
        for ord_, dp in enumerate(r.passages):
            p = dp.draft
            rows.append((pk, f"{r.id}:{ord_}", r.id, ord_, p.section, p.text, p.speaker,
                         stored_when(p.event_at or r.draft.event_at), p.ext_id, dp.tokens))
            terms.append(dp.terms)
            found.append((pk, () if r.forgotten_at else dp.mentions))
            pk += 1
    conn.executemany(
        """INSERT INTO passages (pk, id, record_id, ord, section, text, speaker, event_at, ext_id, tokens)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)
    index_passage_range(conn, first, terms)
    write_passage_mentions(conn, found)
    return len(rows)


def _passage(row: sqlite3.Row) -> Passage:
    return Passage(pk=row["pk"], id=row["id"], record_id=row["record_id"], ord=row["ord"],
                   section=row["section"], text=row["text"], speaker=row["speaker"],
                   event_at=row["event_at"], ext_id=row["ext_id"], tokens=row["tokens"])


def record_from_row(conn: sqlite3.Connection, row: sqlite3.Row, *, with_passages: bool) -> Record:
    tags = tuple(r[0] for r in conn.execute(
        "SELECT tag FROM record_tags WHERE record_id = ? ORDER BY tag", (row["id"],)))
    passages: tuple[Passage, ...] = ()
    if with_passages:
        passages = tuple(_passage(r) for r in conn.execute(
            "SELECT * FROM passages WHERE record_id = ? ORDER BY ord", (row["id"],)))
    return Record(id=row["id"], namespace=row["namespace"], kind=row["kind"], title=row["title"],
                  source=row["source"], library=row["library"], version=row["version"], tags=tags,
                  event_at=row["event_at"], recorded_at=row["recorded_at"],
                  superseded_at=row["superseded_at"], superseded_by=row["superseded_by"],
                  forgotten_at=row["forgotten_at"], trust=row["trust"], author=row["author"],
                  import_path=row["import_path"], ext_id=row["ext_id"],
                  content_hash=row["content_hash"], body=row["body"],
                  meta=json.loads(row["meta"] or "{}"), passages=passages)


def get_record(conn: sqlite3.Connection, record_id: str, *, with_passages: bool = True) -> Record:
    row = conn.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchone()
    if row is None:
        # Accept a passage id too ('<record>:<ord>'): users copy those from search results.
        prow = conn.execute("SELECT record_id FROM passages WHERE id = ?", (record_id,)).fetchone()
        if prow is not None:
            row = conn.execute("SELECT * FROM records WHERE id = ?", (prow[0],)).fetchone()
    if row is None:
        raise NotFound(f"no record with id {record_id!r}")
    return record_from_row(conn, row, with_passages=with_passages)
