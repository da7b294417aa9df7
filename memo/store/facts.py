"""Canonical fact writes and reads (tables ``facts`` and ``fact_evidence``, migration 2).

A fact is a short statement written by a person, an agent or an import ("Caroline went to
an LGBTQ support group on 7 May"), tied to one or more **evidence passages**.  The fact arm
(memo/retrieve/arms/fact.py) matches facts by keyword and by meaning and lets each one
vote for its evidence passages.

Derived indexes: ``facts_fts`` (Porter over unicode61, the passages' tokenizer options) is
kept in step by triggers on ``facts`` (so in the same transaction as the row);
``fact_vectors`` are queued (a fact without a vector for the model is pending) and
embedded after the commit like passage vectors (memo/embed/fact_vectors.py).  Both are
rebuilt from the canonical rows by ``rebuild_fact_index`` (``memo reindex``).

Callers hold the transaction (``write_tx``); nothing here commits, so a fact and its
evidence rows are written together or not at all.  Evidence is resolved *before* that
transaction (``resolve_evidence``: indexed lookups only, issue 33.1), so the writers' queue
is never held for lookups; inside it ``recheck_evidence`` confirms, by primary key, that the
resolved passages are still there and live, so nothing dangling is stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from memo.errors import NotFound, ValidationError
from memo.store.derived import bump_vectors_epoch, rebuild_fact_index  # noqa: F401  (rebuild_fact_index re-exported)
from memo.store.mentions import index_fact_mentions
from memo.store.records import utc_now
from memo.stored import CURRENT, Fact, FactDraft, FactEvidence, RecordFact
from memo.text.limits import MAX_EVIDENCE_IDS, MAX_EVIDENCE_PASSAGES, check_list
from memo.text.namespaces import check_namespace
from memo.text.when import check_event_date, stored_when

LIVE_RECORD = "r.superseded_at IS NULL AND r.forgotten_at IS NULL"


def new_fact_id() -> str:
    return f"f{datetime.now(UTC).strftime('%y%m%d%H%M%S')}{uuid.uuid4().hex[:10]}"


def fact_hash(text: str, passage_ids: Iterable[str]) -> str:
    """sha256 of the normalised text and the sorted evidence passage ids: the same
    statement about other passages is another fact."""
    norm = " ".join(text.split())
    payload = norm + "\x1e" + "\x1f".join(sorted(passage_ids))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def validate_fact(draft: FactDraft, *, carried: bool = False) -> None:
    """A new fact's checks; ``carried``: a fact an export carried keeps the evidence that
    survived (none once its records were purged, or more than a new fact may cite once
    ``carry_evidence`` added the new versions' passages)."""
    if not draft.text or not draft.text.strip():
        raise ValidationError("fact text is empty")
    check_namespace(draft.namespace)
    try:
        trust = float(draft.trust)
    except (TypeError, ValueError):
        raise ValidationError(f"trust {draft.trust!r} is not a number") from None
    if not (0.0 <= trust <= 1.0):
        raise ValidationError(f"trust {draft.trust} is outside 0..1")
    if carried:
        pass
    elif not draft.evidence:
        raise ValidationError("a fact needs at least one evidence passage",
                              hint="pass --evidence ID (a passage id '<record>:<n>', a record id or an ext_id)")
    else:
        check_list("evidence ids", draft.evidence, MAX_EVIDENCE_IDS,
                   hint=f"cite at most {MAX_EVIDENCE_IDS} passages, records or ext_ids: the ones that support the fact")
    if draft.event_at is not None:
        check_event_date(draft.event_at)


def _passages_of_record(conn: sqlite3.Connection, rid: str) -> list[tuple[int, str]]:
    return [(int(r[0]), r[1]) for r in conn.execute(
        "SELECT pk, id FROM passages WHERE record_id = ? ORDER BY ord", (rid,))]


def _resolve_one(conn: sqlite3.Connection, ref: str, namespace: str) -> tuple[list[tuple[int, str]], str | None]:
    """(passages, problem).  Order: passage id, record id, record ext_id, passage ext_id;
    ext_ids are looked up among live records of ``namespace`` first, then anywhere
    (there they must name exactly one record).  Every query is an index lookup: the ids
    are unique keys, ext_ids have ``records_ext``/``records_ext_id``/``passages_ext``
    (migration 4; before it an unknown id cost a full scan of passages)."""
    row = conn.execute("SELECT p.pk, p.id, r.forgotten_at FROM passages p JOIN records r ON r.id = p.record_id "
                       "WHERE p.id = ?", (ref,)).fetchone()
    if row is not None:
        if row[2] is not None:
            return [], f"{ref}: its record is forgotten"
        return [(int(row[0]), row[1])], None
    row = conn.execute("SELECT id, forgotten_at FROM records WHERE id = ?", (ref,)).fetchone()
    if row is not None:
        if row[1] is not None:
            return [], f"{ref}: the record is forgotten"
        return _passages_of_record(conn, ref), None
    rids = [r[0] for r in conn.execute(
        f"SELECT r.id FROM records r WHERE r.ext_id = ? AND r.namespace = ? AND {LIVE_RECORD}", (ref, namespace))]
    if not rids:
        rids = [r[0] for r in conn.execute(f"SELECT r.id FROM records r WHERE r.ext_id = ? AND {LIVE_RECORD}", (ref,))]
        if len(rids) > 1:
            return [], f"{ref}: ext_id of {len(rids)} records in other namespaces (give the record id)"
    if rids:
        return [p for rid in rids for p in _passages_of_record(conn, rid)], None
    rows = conn.execute(
        f"SELECT p.pk, p.id FROM passages p JOIN records r ON r.id = p.record_id "
        f"WHERE p.ext_id = ? AND r.namespace = ? AND {LIVE_RECORD} ORDER BY p.pk", (ref, namespace)).fetchall()
    if not rows:
        rows = conn.execute(
            f"SELECT p.pk, p.id, r.namespace FROM passages p JOIN records r ON r.id = p.record_id "
            f"WHERE p.ext_id = ? AND {LIVE_RECORD} ORDER BY p.pk", (ref,)).fetchall()
        if len({r[2] for r in rows}) > 1:
            return [], f"{ref}: ext_id of passages in several namespaces (give the passage id)"
    if rows:
        return [(int(r[0]), r[1]) for r in rows], None
    return [], f"{ref}: no passage, record or ext_id with this id"


def resolve_evidence(conn: sqlite3.Connection, refs: Sequence[str], namespace: str) -> list[tuple[int, str]]:
    """Evidence references -> distinct (passage pk, passage id), in order.  Every bad
    reference is named in one ``ValidationError`` (nothing is written)."""
    out: dict[int, str] = {}
    problems: list[str] = []
    for ref in refs:
        ref = str(ref).strip()
        if not ref:
            problems.append("an evidence id is empty")
            continue
        found, problem = _resolve_one(conn, ref, namespace)
        if problem is not None:
            problems.append(problem)
        for pk, pid in found:
            out.setdefault(pk, pid)
        if len(out) > MAX_EVIDENCE_PASSAGES:
            raise ValidationError(
                f"the evidence names more than {MAX_EVIDENCE_PASSAGES:,} passages (a record id stands for all "
                f"its passages), over the cap of {MAX_EVIDENCE_PASSAGES:,}",
                hint="cite the passages that support the fact ('<record>:<n>'); `memo get ID` lists them")
    if problems:
        raise ValidationError("bad evidence: " + "; ".join(problems),
                              hint="evidence is a passage id '<record>:<n>', a record id or a record/passage "
                                   "ext_id; `memo get ID` shows a record's passages")
    if not out:
        raise ValidationError("the evidence names no passage")
    return list(out.items())


def recheck_evidence(conn: sqlite3.Connection, evidence: Sequence[tuple[int, str]]) -> None:
    """Inside the write transaction: every passage ``resolve_evidence`` found before it is
    still there and its record is not forgotten (another writer may have forgotten or
    purged it in between).  One primary-key probe per passage; else ``ValidationError``
    naming them, and nothing is written."""
    pks = [pk for pk, _ in evidence]
    alive: set[int] = set()
    for s in range(0, len(pks), 500):
        chunk = pks[s:s + 500]
        alive.update(int(r[0]) for r in conn.execute(
            f"SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id "
            f"WHERE p.pk IN ({','.join('?' * len(chunk))}) AND r.forgotten_at IS NULL", chunk))
    gone = [pid for pk, pid in evidence if pk not in alive]
    if gone:
        shown = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        raise ValidationError(f"bad evidence: {shown}: forgotten or deleted while the fact was being added",
                              hint="check the evidence with `memo get ID` and add the fact again")


def find_live_fact(conn: sqlite3.Connection, namespace: str, chash: str) -> str | None:
    """The current fact of the namespace with this text and evidence (``facts_dedup``): a
    superseded or forgotten one does not count, so an older wording can be current again."""
    row = conn.execute(f"SELECT id FROM facts WHERE namespace = ? AND content_hash = ? AND {CURRENT}",
                       (namespace, chash)).fetchone()
    return row[0] if row else None


def insert_fact(conn: sqlite3.Connection, draft: FactDraft, evidence: Sequence[tuple[int, str]], *,
                recorded_at: str | None = None, fact_id: str | None = None,
                superseded_at: str | None = None, forgotten_at: str | None = None,
                content_hash: str | None = None, carried: bool = False) -> tuple[str, int]:
    """Insert one fact and its evidence rows (facts_fts follows by trigger).  The caller
    has resolved the evidence (``resolve_evidence``), re-checked it (``recheck_evidence``)
    and checked for duplicates inside its write transaction.  ``superseded_at`` /
    ``forgotten_at``: an earlier or forgotten version an export carried
    (``memo.ops.export_restore``), written out of the dedup index and without mentions
    (those follow live facts only), with the ``content_hash`` it was written with (its
    evidence then, which ``carry_evidence`` may have grown since), ``carried`` (its evidence
    as it survived: ``validate_fact``)."""
    validate_fact(draft, carried=carried)
    fid = fact_id or new_fact_id()
    cur = conn.execute(
        """INSERT INTO facts (id, namespace, text, subject, predicate, object, event_at, recorded_at,
               superseded_at, forgotten_at, trust, author, source, content_hash, meta)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (fid, draft.namespace, draft.text.strip(), draft.subject, draft.predicate, draft.object,
         stored_when(draft.event_at),
         recorded_at or utc_now(), superseded_at, forgotten_at, float(draft.trust), draft.author, draft.source,
         content_hash or fact_hash(draft.text, (pid for _, pid in evidence)), json.dumps(draft.meta, sort_keys=True)))
    pk = int(cur.lastrowid)
    conn.executemany("INSERT OR IGNORE INTO fact_evidence(fact_pk, passage_pk) VALUES (?, ?)",
                     [(pk, ppk) for ppk, _ in evidence])
    if superseded_at is None and forgotten_at is None:
        index_fact_mentions(conn, pk)   # its subject, object and names, on its evidence passages
    return fid, pk


def facts_without_live_evidence(conn: sqlite3.Connection, record_id: str) -> tuple[str, ...]:
    """The current facts citing a passage of ``record_id`` (a version just superseded) whose
    evidence is now in no current record: each cited only passages the new version changed
    or dropped (``carry_evidence`` carries the unchanged ones), so the fact arm no longer
    votes for it and it may no longer hold.  Sorted ids."""
    rows = conn.execute(
        "SELECT DISTINCT f.id FROM facts f JOIN fact_evidence e ON e.fact_pk = f.pk "
        "JOIN passages p ON p.pk = e.passage_pk AND p.record_id = ? "
        "WHERE f.superseded_at IS NULL AND f.forgotten_at IS NULL AND NOT EXISTS ("
        "SELECT 1 FROM fact_evidence x JOIN passages q ON q.pk = x.passage_pk JOIN records r ON r.id = q.record_id "
        "WHERE x.fact_pk = f.pk AND r.superseded_at IS NULL AND r.forgotten_at IS NULL) ORDER BY f.id",
        (record_id,)).fetchall()
    return tuple(str(r[0]) for r in rows)


def carry_evidence(conn: sqlite3.Connection, versions: Iterable[tuple[str, str]], *, moved: bool = False) -> int:
    """For each (old record, its new version): a current fact citing a passage of the old
    version also cites the new version's passages of the same section and text (caller's
    transaction; rows added returned).  A file re-imported with one line changed
    supersedes its record, and every fact an agent had written about its unchanged
    passages was left citing a version no search shows: the fact arm never voted again.
    The old rows stay (``as_of`` searches before the change see them); a changed passage
    carries nothing (the fact may no longer hold).  ``content_hash`` keeps the evidence the
    fact was written with.  ``moved``: each new version is the same text from a file
    renamed or moved (``memo.ops.file_moves``), whose code sections start with its new
    module name (a.x.helper is b.x.helper now): passages are matched by their text alone."""
    same_section = "" if moved else "AND np.section = op.section "
    added = 0
    for old_id, new_id in versions:
        rows = conn.execute(
            "SELECT DISTINCT e.fact_pk, np.pk FROM passages op "
            "JOIN fact_evidence e ON e.passage_pk = op.pk "
            "JOIN facts f ON f.pk = e.fact_pk AND f.superseded_at IS NULL AND f.forgotten_at IS NULL "
            f"JOIN passages np ON np.record_id = ? {same_section}AND np.text = op.text "
            "WHERE op.record_id = ? AND NOT EXISTS (SELECT 1 FROM fact_evidence x "
            "WHERE x.fact_pk = e.fact_pk AND x.passage_pk = np.pk) ORDER BY e.fact_pk, np.pk",
            (new_id, old_id)).fetchall()
        if not rows:
            continue
        conn.executemany("INSERT OR IGNORE INTO fact_evidence(fact_pk, passage_pk) VALUES (?, ?)", rows)
        by_fact: dict[int, set[int]] = {}
        for fpk, ppk in rows:
            by_fact.setdefault(int(fpk), set()).add(int(ppk))
        for fpk, ppks in by_fact.items():
            index_fact_mentions(conn, fpk, ppks)
        added += len(rows)
    return added


def _evidence(conn: sqlite3.Connection, pk: int) -> tuple[FactEvidence, ...]:
    return tuple(FactEvidence(passage_id=r[0], record_id=r[1], namespace=r[2], text=r[3], live=bool(r[4]))
                 for r in conn.execute(
                     f"SELECT p.id, p.record_id, r.namespace, p.text, ({LIVE_RECORD}) FROM fact_evidence e "
                     "JOIN passages p ON p.pk = e.passage_pk JOIN records r ON r.id = p.record_id "
                     "WHERE e.fact_pk = ? ORDER BY p.pk", (pk,)))


def fact_from_row(conn: sqlite3.Connection, row: sqlite3.Row, *, with_evidence: bool = True) -> Fact:
    return Fact(id=row["id"], namespace=row["namespace"], text=row["text"], subject=row["subject"],
                predicate=row["predicate"], object=row["object"], event_at=row["event_at"],
                recorded_at=row["recorded_at"], superseded_at=row["superseded_at"],
                superseded_by=row["superseded_by"], forgotten_at=row["forgotten_at"], trust=row["trust"],
                author=row["author"], source=row["source"], content_hash=row["content_hash"],
                meta=json.loads(row["meta"] or "{}"),
                evidence=_evidence(conn, row["pk"]) if with_evidence else ())


def get_fact_row(conn: sqlite3.Connection, fact_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM facts WHERE id = ?", (fact_id,)).fetchone()
    if row is None:
        raise NotFound(f"no fact with id {fact_id!r}", hint="`memo fact list` shows the fact ids that exist")
    return row


def get_fact(conn: sqlite3.Connection, fact_id: str) -> Fact:
    return fact_from_row(conn, get_fact_row(conn, fact_id))


def facts_for_passages(conn: sqlite3.Connection, pks: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
    """Live facts behind each passage: pk -> [(fact id, text)] (web UI, ``memo get``)."""
    out: dict[int, list[tuple[str, str]]] = {}
    pks = list(pks)
    for s in range(0, len(pks), 500):
        chunk = pks[s:s + 500]
        for ppk, fid, text in conn.execute(
                f"SELECT e.passage_pk, f.id, f.text FROM fact_evidence e JOIN facts f ON f.pk = e.fact_pk "
                f"WHERE e.passage_pk IN ({','.join('?' * len(chunk))}) AND f.superseded_at IS NULL "
                "AND f.forgotten_at IS NULL ORDER BY f.pk", chunk):
            out.setdefault(int(ppk), []).append((fid, text))
    return out


def facts_of_record(conn: sqlite3.Connection, passages: Sequence[tuple[int, str]]) -> tuple[RecordFact, ...]:
    """Live facts (neither superseded nor forgotten) citing any of these passages of one
    record, ``(pk, id)`` pairs: oldest first, each with the passage ids it cites among
    them (``memo get``).  A database from before migration 2 has none."""
    if not passages or conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'facts'").fetchone() is None:
        return ()
    pid = dict(passages)
    found: dict[int, tuple[str, str, str | None, list[int]]] = {}
    pks = list(pid)
    for s in range(0, len(pks), 500):
        chunk = pks[s:s + 500]
        for ppk, fpk, fid, text, subject in conn.execute(
                f"SELECT e.passage_pk, f.pk, f.id, f.text, f.subject FROM fact_evidence e JOIN facts f "
                f"ON f.pk = e.fact_pk WHERE e.passage_pk IN ({','.join('?' * len(chunk))}) "
                "AND f.superseded_at IS NULL AND f.forgotten_at IS NULL", chunk):
            found.setdefault(int(fpk), (fid, text, subject, []))[3].append(int(ppk))
    return tuple(RecordFact(id=fid, text=text, subject=subject, passages=tuple(pid[p] for p in sorted(ps)))
                 for _, (fid, text, subject, ps) in sorted(found.items()))


def purge_fact_rows(conn: sqlite3.Connection) -> list[str]:
    """Delete forgotten facts for good (evidence rows, FTS rows and vectors follow);
    inside the caller's write transaction."""
    ids = [r[0] for r in conn.execute("SELECT id FROM facts WHERE forgotten_at IS NOT NULL ORDER BY id")]
    if ids:
        conn.execute("UPDATE facts SET superseded_by = NULL WHERE superseded_by IN "
                     "(SELECT id FROM facts WHERE forgotten_at IS NOT NULL)")
        conn.execute("DELETE FROM facts WHERE forgotten_at IS NOT NULL")
        bump_vectors_epoch(conn)
    return ids
