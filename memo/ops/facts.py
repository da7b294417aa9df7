"""Fact operations behind every skin (CLI ``memo fact``, MCP tools, JSONL and LoCoMo
imports): add, list, get, supersede, forget.  The evidence is resolved first, in a read
snapshot, before the writers' queue is joined (a long or bogus evidence list never makes
other writers wait: issue 33.1); then each write is one ``BEGIN IMMEDIATE`` that re-checks
the resolved passages by primary key and writes the fact, its evidence rows and its
keyword index row together, or nothing (a bad evidence id stores nothing).  The fact's vector is
embedded after the commit, outside any transaction; without the model it stays queued for
``memo backfill`` (degraded rules as for passages)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from memo.errors import ConfirmationRequired, MemoError, NotFound, ValidationError
from memo.ops.after_commit import EmbedQueue, queue_in
from memo.ops.guard import store_errors
from memo.ops.near_dup import NearDuplicate, best_of, find_near_fact, words
from memo.ops.paging import check_page
from memo.ops.reports import NearFact
from memo.profile import Profile, load_profile
from memo.store.connect import read_tx, write_tx
from memo.store.facts import (
    fact_from_row,
    fact_hash,
    find_live_fact,
    get_fact_row,
    insert_fact,
    recheck_evidence,
    resolve_evidence,
    validate_fact,
)
from memo.store.facts import get_fact as _get_fact
from memo.store.mentions import drop_fact_mentions
from memo.store.records import utc_now
from memo.stored import Fact, FactDraft
from memo.text.limits import MAX_IDS, check_list
from memo.types import default_profile


@dataclass(frozen=True, slots=True)
class FactAddReport:
    status: str                       # added | skipped (same text and evidence, or near-identical under skip)
    fact_id: str                      # skipped: the fact already stored
    evidence: tuple[str, ...]         # passage ids
    embedded: bool = False            # False: the vector is queued (`memo backfill`)
    note: str | None = None
    near_duplicate_of: str | None = None   # the live fact this text is near-identical to (memo.ops.near_dup)
    near_similarity: float | None = None


@dataclass(frozen=True, slots=True)
class FactSupersedeReport:
    old_id: str
    new_id: str
    superseded_at: str
    evidence: tuple[str, ...]
    embedded: bool = False            # as FactAddReport's: False while the new version's vector is queued
    dropped: tuple[str, ...] = ()     # old fields not carried over: the new text no longer names them
    # Evidence the new version cites that is in no current record (carried from the old
    # version, whose record was superseded or forgotten since): give evidence when all is.
    stale_evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FactForgetReport:
    forgotten: tuple[str, ...]
    already_forgotten: tuple[str, ...]
    forgotten_at: str | None        # None when every id was already forgotten


@dataclass(frozen=True, slots=True)
class FactImportReport:
    added: int
    skipped: int                            # exact duplicates, and near-identical ones under skip
    rejected: tuple[tuple[str, str], ...]   # (where, reason)
    fact_ids: tuple[str, ...] = ()
    near_duplicates: tuple[NearFact, ...] = ()


Evidence = list[tuple[int, str]]


def _resolve(conn: sqlite3.Connection, draft: FactDraft) -> Evidence:
    """Before the write transaction: validate the draft (caps included) and resolve its
    evidence to (passage pk, passage id) in one read snapshot."""
    validate_fact(draft)
    with read_tx(conn):
        return resolve_evidence(conn, draft.evidence, draft.namespace)


def _near(conn: sqlite3.Connection, draft: FactDraft, prof: Profile) -> NearDuplicate | None:
    """The live fact near-identical to ``draft`` under the profile's keys (reads only,
    before the write transaction); None when the check is off or none is."""
    if prof.index.near_duplicates == "off":
        return None
    return find_near_fact(conn, draft, prof.index.near_min, prof)


def _linked(draft: FactDraft, near: NearDuplicate | None) -> FactDraft:
    if near is None:
        return draft
    return replace(draft, meta={**draft.meta, "near_duplicate_of": near.record_id,
                                "near_similarity": near.similarity})


def _skip_note(near: NearDuplicate) -> str:
    return (f"near-identical to fact {near.record_id} (similarity {near.similarity:.2f}); not stored "
            f"(index.near_duplicates = skip): to replace it, `memo fact supersede {near.record_id}` "
            "with the new text (and --evidence)")


def _store(conn: sqlite3.Connection, draft: FactDraft,
           evidence: Evidence) -> tuple[str, str, tuple[str, ...], int | None]:
    """Inside the caller's write tx, with ``evidence`` from ``_resolve``: (status, fact id,
    evidence passage ids, new pk)."""
    recheck_evidence(conn, evidence)
    pids = tuple(pid for _, pid in evidence)
    dup = find_live_fact(conn, draft.namespace, fact_hash(draft.text, pids))
    if dup is not None:
        return "skipped", dup, pids, None
    fid, pk = insert_fact(conn, draft, evidence)
    return "added", fid, pids, pk


def embed_new_facts(conn: sqlite3.Connection, pks: Sequence[int]) -> bool:
    """After the commit: embed these facts with the default model; never raises for a
    missing model (they stay queued).  True when every one has its vector."""
    if not pks:
        return True
    from memo.embed.fact_vectors import backfill_facts
    from memo.embed.model import DEFAULT_BATCH
    from memo.embed.registry import load_registry
    from memo.embed.service import load_model

    try:
        embedder = load_model(load_registry().get(None))
        backfill_facts(conn, embedder, embedder.model_id, DEFAULT_BATCH, only=pks)
    except MemoError:
        return False
    return True


def _embed_new_fact(conn: sqlite3.Connection, pk: int | None, background: EmbedQueue | None) -> bool:
    """After the commit, the new fact's vector (add and supersede alike): handed to a
    server's background embedder when one takes it (False: queued, embedded within
    moments, the answer does not wait for the model), else embedded here (False when the
    model is missing: queued for `memo backfill`)."""
    if pk is None:
        return False
    if background is not None and queue_in(background, fact_pks=[pk]):
        return False
    return embed_new_facts(conn, [pk])


@store_errors("fact add")
def add_fact(conn: sqlite3.Connection, draft: FactDraft, *, embed: bool = True,
             background: EmbedQueue | None = None, profile: Profile | str | None = None) -> FactAddReport:
    """``background``: a server's embedder takes the vector (``embedded`` False: queued,
    embedded within moments), so the add returns right after the commit.  A text
    near-identical to a live fact of the namespace is linked to it (stored, named in the
    report and its meta) or skipped (reported), as the profile's ``index.near_duplicates``
    says (``memo.ops.near_dup``; ``profile`` None: the default profile)."""
    if isinstance(draft.evidence, str):      # a string is a sequence too: of its characters
        raise ValidationError("evidence must be a list of ids, not a string",
                              hint=f"evidence=({draft.evidence[:40]!r},)")
    evidence = _resolve(conn, draft)
    prof = load_profile(default_profile() if profile is None else profile)
    near = _near(conn, draft, prof)
    if near is not None and near.similarity >= 1.0 and \
            find_live_fact(conn, draft.namespace, fact_hash(draft.text, tuple(pid for _, pid in evidence))):
        near = None                 # the exact duplicate: the dedup index says so below
    if near is not None and prof.index.near_duplicates == "skip":
        return FactAddReport("skipped", near.record_id, tuple(pid for _, pid in evidence), note=_skip_note(near),
                             near_duplicate_of=near.record_id, near_similarity=near.similarity)
    with write_tx(conn):
        status, fid, pids, pk = _store(conn, _linked(draft, near), evidence)
    if status == "skipped":
        return FactAddReport("skipped", fid, pids, note=f"the same fact with the same evidence is {fid}")
    link = {} if near is None else {
        "near_duplicate_of": near.record_id, "near_similarity": near.similarity,
        "note": f"near-identical to fact {near.record_id} (similarity {near.similarity:.2f}); stored and linked "
                "to it (meta.near_duplicate_of): forget either if one is enough"}
    embedded = _embed_new_fact(conn, pk, background) if embed else False
    return FactAddReport("added", fid, pids, embedded, **link)


@store_errors("fact get")
def get_fact(conn: sqlite3.Connection, fact_id: str) -> Fact:
    return _get_fact(conn, fact_id)


@store_errors("fact list")
def list_facts(conn: sqlite3.Connection, *, namespaces: Sequence[str] = (), evidence: str | None = None,
               include_forgotten: bool = False, include_superseded: bool = False,
               limit: int = 50, offset: int = 0) -> tuple[Fact, ...]:
    """Newest first; live facts only unless asked.  ``evidence``: only facts citing this
    passage id or any passage of this record id."""
    check_page(limit, offset)
    where: list[str] = []
    params: list[object] = []
    if not include_forgotten:
        where.append("f.forgotten_at IS NULL")
    if not include_superseded:
        where.append("f.superseded_at IS NULL")
    ns = tuple(dict.fromkeys(namespaces))
    if ns:
        where.append(f"f.namespace IN ({','.join('?' * len(ns))})")
        params += ns
    if evidence:
        where.append("EXISTS (SELECT 1 FROM fact_evidence e JOIN passages p ON p.pk = e.passage_pk "
                     "WHERE e.fact_pk = f.pk AND (p.id = ? OR p.record_id = ?))")
        params += [evidence, evidence]
    sql = "SELECT f.* FROM facts f" + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY f.recorded_at DESC, f.pk DESC LIMIT ? OFFSET ?"
    return tuple(fact_from_row(conn, r) for r in conn.execute(sql, (*params, limit, offset)).fetchall())


def _check_supersedable(old_id: str, forgotten_at: str | None, superseded_by: str | None) -> None:
    if forgotten_at is not None:
        raise ValidationError(f"fact {old_id} is forgotten; add the text as a new fact instead")
    if superseded_by is not None:
        raise ValidationError(f"fact {old_id} is already superseded by {superseded_by}",
                              hint=f"supersede the newest version: `memo fact supersede {superseded_by}`")


@store_errors("fact supersede")
def supersede_fact(conn: sqlite3.Connection, old_id: str, text: str, *, evidence: Sequence[str] = (),
                   background: EmbedQueue | None = None, **changes: object) -> FactSupersedeReport:
    """A new version of a fact: fields not given (evidence included) are copied from the
    old one, except its object and event date when the new text no longer names the old
    object (``_carried_value``; the report's ``dropped`` names them), which keeps its rows (as_of) with superseded_at/by set.  The new version's
    evidence is resolved before the write transaction; inside it the old fact's state and
    the evidence are checked again.  ``background``: as ``add_fact``'s (a server's embedder
    takes the new version's vector and the call returns right after the commit)."""
    row = get_fact_row(conn, old_id)
    _check_supersedable(old_id, row["forgotten_at"], row["superseded_by"])
    old = fact_from_row(conn, row)
    refs = tuple(evidence) or tuple(e.passage_id for e in old.evidence)
    if not refs:
        raise ValidationError(f"fact {old_id} has no evidence left; give --evidence")
    given = {k: v for k, v in changes.items() if v is not None}
    carried = _carried_value(old.object, text)
    draft = FactDraft(text=text, evidence=refs, namespace=old.namespace, subject=old.subject,
                      predicate=old.predicate, object=old.object if carried else None,
                      event_at=old.event_at if carried else None, trust=old.trust,
                      author=old.author, source=old.source, meta=old.meta)
    draft = replace(draft, **given)  # type: ignore[arg-type]
    dropped = tuple(f for f, value in (("object", old.object), ("event_at", old.event_at))
                    if value is not None and not carried and f not in given)
    resolved = _resolve(conn, draft)
    with write_tx(conn):
        # Re-read under the write lock: another writer may have superseded or forgotten it.
        row = get_fact_row(conn, old_id)
        _check_supersedable(old_id, row["forgotten_at"], row["superseded_by"])
        status, new_id, pids, pk = _store(conn, draft, resolved)
        if status == "skipped":
            raise ValidationError(f"fact {new_id} already says this with the same evidence; nothing to do")
        when = utc_now()
        conn.execute("UPDATE facts SET superseded_at = ?, superseded_by = ? WHERE id = ?", (when, new_id, old_id))
        drop_fact_mentions(conn, [old_id])   # fact mentions follow live facts only
        stale = _not_current(conn, pids)
    return FactSupersedeReport(old_id, new_id, when, pids, _embed_new_fact(conn, pk, background), dropped, stale)


def _not_current(conn: sqlite3.Connection, passage_ids: Sequence[str]) -> tuple[str, ...]:
    """Those of ``passage_ids`` whose record is superseded or forgotten."""
    if not passage_ids:
        return ()
    rows = conn.execute(
        "SELECT p.id FROM passages p JOIN records r ON r.id = p.record_id "
        f"WHERE p.id IN ({','.join('?' * len(passage_ids))}) "
        "AND (r.superseded_at IS NOT NULL OR r.forgotten_at IS NOT NULL) ORDER BY p.id", tuple(passage_ids)).fetchall()
    return tuple(str(r[0]) for r in rows)


def _carried_value(old_object: str | None, new_text: str) -> bool:
    """Whether a new version keeps the old one's object and event date unasked.  They say
    what the old text said (the job, the date it was set for): a new text that no longer
    names the old object ("works as a data engineer" after "works as a chemistry teacher",
    "postponed to October 2026" after "set for April 2026") would carry a value it
    contradicts into the new version, its entity links and its date filters.  A reworded
    text that still names it (a typo fixed) keeps both; with no object nothing tells, so
    the event date is kept as before."""
    return old_object is None or old_object.casefold() in new_text.casefold()


@store_errors("fact forget")
def forget_facts(conn: sqlite3.Connection, fact_ids: Iterable[str], *, confirm: bool = False) -> FactForgetReport:
    """Soft delete (hidden from search and list; ``memo purge`` removes the rows).  More
    than one fact needs ``confirm``.  An unknown id forgets nothing."""
    ids = tuple(dict.fromkeys(fact_ids))
    if not ids:
        raise ValidationError("no fact ids given")
    check_list("fact ids", ids, MAX_IDS)
    if len(ids) > 1 and not confirm:
        raise ConfirmationRequired(f"forgetting {len(ids)} facts needs confirmation",
                                   hint="repeat with --yes to forget all of them")
    when = utc_now()
    done: list[str] = []
    already: list[str] = []
    with write_tx(conn):
        for fid in ids:
            row = conn.execute("SELECT forgotten_at FROM facts WHERE id = ?", (fid,)).fetchone()
            if row is None:
                raise NotFound(f"no fact with id {fid!r}; nothing was forgotten",
                               hint="`memo fact list` shows the fact ids that exist")
            if row[0] is not None:
                already.append(fid)
                continue
            conn.execute("UPDATE facts SET forgotten_at = ? WHERE id = ?", (when, fid))
            drop_fact_mentions(conn, [fid])
            done.append(fid)
    return FactForgetReport(tuple(done), tuple(already), when if done else None)   # as records' forget


def import_facts(conn: sqlite3.Connection, drafts: Iterable[tuple[str, FactDraft]], *,
                 embed: bool = True, batch: int = 500, profile: Profile | str | None = None) -> FactImportReport:
    """Many facts (JSONL lines of type fact, LoCoMo observations): ``(where, draft)``
    pairs, committed in batches; a fact with bad evidence is rejected with its reason
    (savepoint: nothing of it is written) while the rest goes on.  Near-identical facts
    (to a live one, or to one added earlier in this import) are linked or skipped as for
    ``add_fact`` and listed in ``near_duplicates``."""
    added = skipped = 0
    rejected: list[tuple[str, str]] = []
    ids: list[str] = []
    new_pks: list[int] = []
    nears: list[NearFact] = []
    mine: dict[str, list[tuple[str, str]]] = {}     # namespace -> (id, text) added by this import
    items = list(drafts)
    prof = load_profile(default_profile() if profile is None else profile)
    with store_errors("fact import"):
        for s in range(0, len(items), batch):
            # Resolved (and compared with the live facts) before the batch's write
            # transaction (lookups never hold the lock); re-checked inside it, one
            # savepoint per fact.
            resolved: list[tuple[str, FactDraft, Evidence, NearDuplicate | None]] = []
            for where, draft in items[s:s + batch]:
                try:
                    resolved.append((where, draft, _resolve(conn, draft), _near(conn, draft, prof)))
                except ValidationError as exc:
                    rejected.append((where, str(exc)))
            if not resolved:
                continue
            with write_tx(conn):
                for where, draft, evidence, near in resolved:
                    also = mine.get(draft.namespace, ())
                    if also and prof.index.near_duplicates != "off":
                        in_import = best_of(words(draft.text), also, prof.index.near_min)
                        if in_import is not None and (near is None or in_import.similarity > near.similarity):
                            near = in_import
                    if near is not None and near.similarity >= 1.0 and find_live_fact(
                            conn, draft.namespace, fact_hash(draft.text, tuple(pid for _, pid in evidence))):
                        near = None        # the exact duplicate: skipped by the dedup index below
                    if near is not None and prof.index.near_duplicates == "skip":
                        skipped += 1
                        nears.append(NearFact(where, None, near.record_id, near.similarity))
                        continue
                    conn.execute("SAVEPOINT fact")
                    try:
                        status, fid, _, pk = _store(conn, _linked(draft, near), evidence)
                    except ValidationError as exc:
                        conn.execute("ROLLBACK TO fact")
                        conn.execute("RELEASE fact")
                        rejected.append((where, str(exc)))
                        continue
                    conn.execute("RELEASE fact")
                    if status == "added":
                        added += 1
                        ids.append(fid)
                        new_pks.append(int(pk))  # type: ignore[arg-type]
                        mine.setdefault(draft.namespace, []).append((fid, draft.text))
                        if near is not None:
                            nears.append(NearFact(where, fid, near.record_id, near.similarity))
                    else:
                        skipped += 1
    if embed and new_pks:
        embed_new_facts(conn, new_pks)
    return FactImportReport(added, skipped, tuple(rejected), tuple(ids), tuple(nears))
