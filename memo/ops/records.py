"""Read, list, supersede, forget and purge records."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace

from memo.errors import ConfirmationRequired, NotFound, ValidationError
from memo.ops.add import mark_superseded, prepare, storable_nul
from memo.ops.after_commit import EmbedQueue, after_commit
from memo.ops.guard import store_errors
from memo.ops.hand_edits import hand_edit_meta
from memo.ops.paging import check_page
from memo.ops.reports import ForgetReport, PurgeReport, RecordSummary, SupersedeReport
from memo.retrieve.scope import date_range
from memo.store.connect import write_tx
from memo.store.derived import unindex_passages
from memo.store.facts import facts_of_record, facts_without_live_evidence, purge_fact_rows
from memo.store.mentions import drop_record_mentions
from memo.store.records import find_live_duplicate, get_record, insert_record, record_hash, utc_now
from memo.stored import Record, RecordDraft
from memo.text.limits import MAX_IDS, check_list
from memo.text.tags import tag_form
from memo.types import KINDS


@store_errors("get")
def get(conn: sqlite3.Connection, record_id: str) -> Record:
    """A record with its passages (a passage id '<record>:<ord>' works too) and the live
    facts whose evidence is in it."""
    rec = get_record(conn, record_id)
    return replace(rec, facts=facts_of_record(conn, [(p.pk, p.id) for p in rec.passages]))


@dataclass(frozen=True, slots=True)
class ListFilter:
    namespaces: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    library: str | None = None
    version: str | None = None
    tags: tuple[str, ...] = ()        # every listed tag
    date_from: str | None = None      # a passage's event date (else the record's, else recorded) on or after
    date_to: str | None = None        # ... on or before (a bare date: the whole day; a month, a year)
    include_forgotten: bool = False
    include_superseded: bool = False
    limit: int = 50
    offset: int = 0


def _in(column: str, values: tuple[str, ...], where: list[str], params: list[object]) -> None:
    if values:
        where.append(f"{column} IN ({', '.join('?' * len(values))})")
        params.extend(values)


@store_errors("list_records")
def list_records(conn: sqlite3.Connection, flt: ListFilter | None = None) -> tuple[RecordSummary, ...]:
    """Newest first.  Live records only unless asked (superseded / forgotten)."""
    flt = flt or ListFilter()
    for k in flt.kinds:
        if k not in KINDS:
            raise ValidationError(f"kind {k!r} is not one of {', '.join(KINDS)}")
    check_page(flt.limit, flt.offset)
    where: list[str] = []
    params: list[object] = []
    if not flt.include_forgotten:
        where.append("r.forgotten_at IS NULL")
    if not flt.include_superseded:
        where.append("r.superseded_at IS NULL")
    _in("r.namespace", flt.namespaces, where, params)
    _in("r.kind", flt.kinds, where, params)
    _in("r.source", flt.sources, where, params)
    for column, value in (("r.library", flt.library), ("r.version", flt.version)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    dates, bounds = date_range(flt.date_from, flt.date_to)      # as a search's --from / --to
    if dates:
        where.append(f"EXISTS (SELECT 1 FROM passages p WHERE p.record_id = r.id AND {' AND '.join(dates)})")
        params.extend(bounds)
    for tag in dict.fromkeys(tag_form(t) for t in flt.tags):     # the form tags are stored in
        where.append("EXISTS (SELECT 1 FROM record_tags t WHERE t.record_id = r.id AND t.tag = ?)")
        params.append(tag)
    sql = ("SELECT r.*, (SELECT count(*) FROM passages p WHERE p.record_id = r.id) AS n_passages, "
           "(SELECT group_concat(tag, char(31)) FROM (SELECT tag FROM record_tags t "
           " WHERE t.record_id = r.id ORDER BY tag)) AS tag_list FROM records r")
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY r.recorded_at DESC, r.id DESC LIMIT ? OFFSET ?"
    rows = conn.execute(sql, (*params, flt.limit, flt.offset)).fetchall()
    return tuple(RecordSummary(
        id=r["id"], namespace=r["namespace"], kind=r["kind"], title=r["title"], source=r["source"],
        library=r["library"], version=r["version"],
        tags=tuple(r["tag_list"].split("\x1f")) if r["tag_list"] else (),
        event_at=r["event_at"], recorded_at=r["recorded_at"], superseded_at=r["superseded_at"],
        superseded_by=r["superseded_by"], forgotten_at=r["forgotten_at"], trust=r["trust"],
        author=r["author"], import_path=r["import_path"], passages=r["n_passages"]) for r in rows)


@store_errors("supersede")
def supersede(conn: sqlite3.Connection, old_id: str, body: str, *, background: EmbedQueue | None = None,
              **changes: object) -> SupersedeReport:
    """Write a new version of ``old_id``.  Fields not given are copied from the old
    version; the old one keeps its rows (for as_of queries) with superseded_at/by set.
    ``background``: as for ``add_record`` (a server's embedder; return after the commit)."""
    old = get_record(conn, old_id, with_passages=False)
    draft = RecordDraft(body=body, kind=old.kind, namespace=old.namespace, title=old.title,  # type: ignore[arg-type]
                        source=old.source, library=old.library, version=old.version, tags=old.tags,
                        event_at=old.event_at, trust=old.trust, author=old.author,
                        import_path=old.import_path, ext_id=old.ext_id,
                        meta=hand_edit_meta(old.meta, old.import_path))
    draft = replace(draft, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]
    passages = prepare(draft, nul_ok=storable_nul(conn))
    with write_tx(conn):
        # Re-read under the write lock: another writer may have superseded it meanwhile.
        row = conn.execute("SELECT superseded_by, forgotten_at FROM records WHERE id = ?",
                           (old.id,)).fetchone()
        if row["forgotten_at"] is not None:
            raise ValidationError(f"record {old.id} is forgotten; add the text as a new record instead")
        if row["superseded_by"] is not None:
            raise ValidationError(f"record {old.id} is already superseded by {row['superseded_by']}",
                                  hint=f"supersede the newest version: `memo supersede {row['superseded_by']}`")
        dup = find_live_duplicate(conn, draft.namespace, record_hash(draft))
        if dup == old.id:
            raise ValidationError("the new text is the same as the current version; nothing to do")
        if dup is not None:
            raise ValidationError(f"namespace {draft.namespace!r} already holds this text as record {dup}")
        new_id = insert_record(conn, draft, passages)
        when = mark_superseded(conn, old.id, new_id)
        orphaned = facts_without_live_evidence(conn, old.id)
    # Committed: embedding failures only queue the new passages (vectors), never fail it.
    vectors = after_commit(conn, [new_id], len(passages), background=background)
    return SupersedeReport(old_id=old.id, new_id=new_id, superseded_at=when, passages=len(passages),
                           vectors=vectors, facts_without_evidence=orphaned)


@store_errors("forget")
def forget(conn: sqlite3.Connection, record_ids: list[str] | tuple[str, ...], *,
           confirm: bool = False) -> ForgetReport:
    """Soft delete: hidden from every search and from ``list`` (``purge`` removes the rows).
    More than one record needs ``confirm=True`` (mcp-memory-service #353: a bulk delete
    without confirmation erased 87% of a user's memories)."""
    if isinstance(record_ids, str):          # a string is a sequence too: of its characters
        raise ValidationError("record ids must be a list, not a string", hint=f"[{record_ids[:40]!r}]")
    ids = tuple(dict.fromkeys(record_ids))
    if not ids:
        raise ValidationError("no record ids given")
    check_list("record ids", ids, MAX_IDS)
    if len(ids) > 1 and not confirm:
        raise ConfirmationRequired(f"forgetting {len(ids)} records needs confirmation",
                                   hint="repeat with --yes to forget all of them (from Python: confirm=True)")
    when = utc_now()
    with write_tx(conn):
        done, already = forget_rows(conn, ids, when)
    # forgotten_at: when this call forgot something; null when every id already was (that
    # time is not this call's: `memo get` shows each record's own).
    return ForgetReport(forgotten=done, already_forgotten=already, forgotten_at=when if done else None)


def forget_rows(conn: sqlite3.Connection, ids: tuple[str, ...], when: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The soft delete itself, inside the caller's write transaction (``forget`` and
    ``import --prune`` share it).  Returns (forgotten, already forgotten); an unknown id
    raises NotFound, which rolls the caller's transaction back."""
    done: list[str] = []
    already: list[str] = []
    for rid in ids:
        row = conn.execute("SELECT forgotten_at FROM records WHERE id = ?", (rid,)).fetchone()
        if row is None:
            raise NotFound(f"no record with id {rid!r}; nothing was forgotten")
        if row["forgotten_at"] is not None:
            already.append(rid)
            continue
        conn.execute("UPDATE records SET forgotten_at = ? WHERE id = ?", (when, rid))
        done.append(rid)
    drop_record_mentions(conn, done)   # forgotten never comes back: its mentions go now
    return tuple(done), tuple(already)


@store_errors("purge")
def purge(conn: sqlite3.Connection, *, confirm: bool = False) -> PurgeReport:
    """Delete forgotten records for good, with their passages, tags, vectors and index
    rows.  More than one record needs ``confirm=True``."""
    with write_tx(conn):
        ids = [r[0] for r in conn.execute("SELECT id FROM records WHERE forgotten_at IS NOT NULL ORDER BY id")]
        if len(ids) > 1 and not confirm:
            raise ConfirmationRequired(f"purging {len(ids)} forgotten records needs confirmation",
                                       hint="repeat with --yes to delete them for good")
        n_pass = n_vec = 0
        for rid in ids:
            pks = [r[0] for r in conn.execute("SELECT pk FROM passages WHERE record_id = ?", (rid,))]
            n_pass += len(pks)
            n_vec += conn.execute(
                "SELECT count(*) FROM vectors WHERE passage_pk IN (SELECT pk FROM passages WHERE record_id = ?)",
                (rid,)).fetchone()[0]
            unindex_passages(conn, pks)
            # An older version keeps superseded_at (it stays hidden) but can no longer
            # point at a row that is gone.
            conn.execute("UPDATE records SET superseded_by = NULL WHERE superseded_by = ?", (rid,))
            conn.execute("DELETE FROM records WHERE id = ?", (rid,))
        if ids:
            # The purged passages' input keys go too: a hash of a purged text would still
            # tell that the text was stored (one pass over the keys; purges are rare).
            conn.execute("DELETE FROM vector_keys WHERE passage_pk NOT IN (SELECT pk FROM passages)")
        fact_ids = purge_fact_rows(conn)   # forgotten facts go too (same transaction)
    return PurgeReport(records=len(ids), passages=n_pass, vectors=n_vec, record_ids=tuple(ids),
                       fact_ids=tuple(fact_ids))
