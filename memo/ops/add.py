"""Add one record: validate, split into passages, de-duplicate, insert and index in one
BEGIN IMMEDIATE transaction."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

from memo.errors import ValidationError
from memo.ingest.front_matter import with_front_matter
from memo.ingest.markdown_parse import front_matter
from memo.ingest.split import split_record
from memo.ingest.split_markdown import looks_like_markdown
from memo.ops.after_commit import EmbedQueue, after_commit
from memo.ops.chat_versions import LiveConversations
from memo.ops.file_moves import Walked
from memo.ops.guard import store_errors
from memo.ops.hand_edits import imported_before, kept_note, replaced_note
from memo.ops.near_dup import find_near_duplicate
from memo.ops.reports import AddReport
from memo.ops.store_batch import PreparedItem, identities, prepare_item, same_text_note
from memo.profile import Profile, load_profile
from memo.store.connect import write_tx
from memo.store.dialect import is_postgres
from memo.store.facts import carry_evidence
from memo.store.records import (
    NewRecord,
    find_live_duplicate,
    find_older_version,
    insert_record,
    insert_records,
    new_record_id,
    record_hash,
    utc_now,
    validate_draft,
)
from memo.stored import PassageDraft, RecordDraft
from memo.text.folding import has_surrogates
from memo.text.json_value import json_problem
from memo.text.tags import with_inline_tags
from memo.text.when import check_event_date
from memo.types import default_profile


def prepare(draft: RecordDraft, *, nul_ok: bool = True) -> tuple[PassageDraft, ...]:
    """Everything that can reject a draft without touching the database (runs outside
    the write transaction, so the lock is held only for the inserts).  ``nul_ok=False``
    (PostgreSQL, ``storable_nul``): a NUL character in any text field is refused here,
    so an import rejects that one item instead of failing its whole batch at the server."""
    validate_draft(draft)
    check_unicode(draft)
    if not nul_ok:
        check_no_nul(draft)
    if draft.event_at is not None:
        check_event_date(draft.event_at)
    passages = split_record(draft)
    for p in passages:
        check_unicode_fields(("passage text", p.text), ("section", p.section), ("speaker", p.speaker),
                             ("passage event date", p.event_at), ("passage id", p.ext_id))
    return passages


def check_unicode_fields(*fields: tuple[str, object]) -> None:
    """A string holding a lone surrogate (undecodable bytes passed on with surrogate
    escapes, or a ``\\ud800`` JSON escape) cannot be stored: reject it before the write."""
    for name, value in fields:
        # has_surrogates: json_problem's answer for a string, without its walk (issue 31.3:
        # an import asks about ~10 fields a record).
        if isinstance(value, str) and has_surrogates(value):
            raise ValidationError(f"{name} is not valid Unicode text (a lone surrogate or undecodable bytes)",
                                  hint="pass UTF-8 text; fix or re-encode the input")


def check_unicode(draft: RecordDraft) -> None:
    check_unicode_fields(("text", draft.body), ("title", draft.title), ("source", draft.source),
                         ("library", draft.library), ("version", draft.version), ("author", draft.author),
                         ("namespace", draft.namespace), ("event date", draft.event_at),
                         ("import path", draft.import_path), ("external id", draft.ext_id),
                         *(("tag", t) for t in draft.tags))
    problem = json_problem(draft.meta)
    if problem:
        raise ValidationError(f"meta: {problem}")


def storable_nul(conn: object) -> bool:
    """Can this database store U+0000 in text?  SQLite can (it is stored and read back
    as given); PostgreSQL's text type cannot."""
    return not is_postgres(conn)


def check_no_nul(draft: RecordDraft) -> None:
    # meta is stored as JSON text, where a NUL is the escape \u0000: it round-trips.
    fields = (("text", draft.body), ("title", draft.title), ("source", draft.source),
              ("library", draft.library), ("version", draft.version), ("author", draft.author),
              ("namespace", draft.namespace), ("event date", draft.event_at),
              ("import path", draft.import_path), ("external id", draft.ext_id),
              *(("tag", t) for t in draft.tags))
    for name, value in fields:
        if isinstance(value, str) and "\x00" in value:
            raise ValidationError(f"{name} holds a NUL character (U+0000), which PostgreSQL cannot store",
                                  hint="remove the NUL characters from the input")




def find_previous_version(conn: sqlite3.Connection, draft: RecordDraft) -> str | None:
    """The live record this draft is a new version of: same namespace, same import path
    and same external id (both may be NULL only for the import path's own record).  A chat
    conversation's version at another path is ``memo.ops.chat_versions``' to find."""
    if not draft.import_path:
        return None
    row = conn.execute(
        """SELECT id FROM records WHERE namespace = ? AND import_path = ? AND ext_id IS ?
             AND superseded_at IS NULL AND forgotten_at IS NULL
           ORDER BY recorded_at DESC LIMIT 1""",
        (draft.namespace, draft.import_path, draft.ext_id)).fetchone()
    return row["id"] if row else None


def _older_version(conn: sqlite3.Connection, namespace: str, chash: str) -> AddReport | None:
    """``memo add`` of a text that only an older, superseded version holds: skipped, with
    the current version to supersede (adding it beside that version would leave two current
    records saying different things).  None when the text's versions all end forgotten."""
    found = find_older_version(conn, namespace, chash)
    if found is None:
        return None
    old, current = found
    return AddReport(status="skipped", record_id=old, passages=0,
                     note=f"same text as {old}, an older version superseded by {current}; "
                          f"to make it current again use `memo supersede {current}`")


def store_draft(conn: sqlite3.Connection, draft: RecordDraft, passages: tuple[PassageDraft, ...],
                *, replace_previous: bool, walked: Walked | None = None) -> AddReport:
    """Insert inside the caller's write transaction.  Same content as a current record of
    the namespace -> skipped; without ``replace_previous`` (an add) also a text an older
    version holds (``_older_version``); with it (an import: the file says what is true
    now) a changed record at the same import path supersedes the old version (status
    'updated'), whatever older versions held its text, and a chat export's conversation
    with a live version from another file is superseded or skipped as
    ``memo.ops.chat_versions`` says.  ``walked`` (an import's complete folder walk): a text
    whose current record's file is gone is that file moved here, and supersedes that record
    (``memo.ops.file_moves``; the rule ``memo.ops.store_batch.store_items`` follows too)."""
    chash = record_hash(draft)
    dup = find_live_duplicate(conn, draft.namespace, chash)
    moved: tuple[str, str] | None = None       # (record, its import path) whose file moved to this one
    if dup is not None and walked is not None and replace_previous and draft.import_path:
        row = conn.execute("SELECT import_path, ext_id FROM records WHERE id = ?", (dup,)).fetchone()
        if walked.gone(row[0], row[1]):
            moved, dup = (dup, row[0]), None
    if dup is not None:
        note = same_text_note(draft, dup, identities(conn, {dup})) if replace_previous and draft.import_path else None
        return AddReport(status="skipped", record_id=dup, passages=0, note=note)
    if not replace_previous:
        older = _older_version(conn, draft.namespace, chash)
        if older is not None:
            return older
    replaced: tuple[str, ...] = ()
    note = None
    if moved is not None and walked is not None:
        previous = find_previous_version(conn, draft)
        replaced = (moved[0], *((previous,) if previous is not None else ()))
        note = walked.moved_note(moved[0], moved[1], previous)
    elif replace_previous:
        # A chat conversation with a live version from another export file: the rule the
        # batched import follows too (memo.ops.chat_versions).
        decision = LiveConversations(conn, (draft,)).decide(draft, passages)
        if decision is not None and decision.kept is not None:
            return AddReport(status="skipped", record_id=decision.kept.id, passages=0, note=decision.note)
        if decision is not None:
            replaced, note = tuple(v.id for v in decision.replaces), decision.note
        elif (previous := find_previous_version(conn, draft)) is not None:
            edited = imported_before(conn, previous)   # written by hand (memo.ops.hand_edits)
            if edited is not None and edited[1] == chash:
                return AddReport(status="skipped", record_id=previous, passages=0,
                                 note=kept_note(previous, draft.import_path or ""))
            replaced = (previous,)
            note = replaced_note(previous) if edited is not None else None
    recorded = utc_now()
    whens = [(utc_now(), old) for old in replaced]
    # The replaced versions leave the dedup index before the insert: a moved file's new
    # version holds the very text of the one it supersedes (superseded_by, which must
    # reference a stored record, is set after).
    conn.executemany("UPDATE records SET superseded_at = ? WHERE id = ?", whens)
    new_id = insert_record(conn, draft, passages, recorded_at=recorded)
    if not replaced:
        return AddReport(status="added", record_id=new_id, passages=len(passages))
    for when, old in whens:
        mark_superseded(conn, old, new_id, when, moved=moved is not None and old == moved[0])
    return AddReport(status="updated", record_id=new_id, passages=len(passages), superseded=replaced[0], note=note)


def store_prepared(conn: sqlite3.Connection, item: PreparedItem) -> AddReport:
    """``store_draft(..., replace_previous=False)`` for a record whose derived values were
    worked out before the transaction (caller's write transaction)."""
    dup = find_live_duplicate(conn, item.draft.namespace, item.content_hash)
    if dup is not None:
        return AddReport(status="skipped", record_id=dup, passages=0)
    older = _older_version(conn, item.draft.namespace, item.content_hash)
    if older is not None:
        return older
    rid = item.draft.id or new_record_id()
    insert_records(conn, [NewRecord(rid, item.draft, item.content_hash, utc_now(), item.passages)])
    return AddReport(status="added", record_id=rid, passages=len(item.passages))


def mark_superseded(conn: sqlite3.Connection, old_id: str, new_id: str, when: str | None = None,
                    *, moved: bool = False) -> str:
    """``old_id`` superseded by ``new_id`` (inserted already), the facts citing its unchanged
    passages citing the new version's too (``memo.store.facts.carry_evidence``; ``moved``:
    the same text from a renamed or moved file)."""
    when = when or utc_now()
    conn.execute("UPDATE records SET superseded_at = ?, superseded_by = ? WHERE id = ?",
                 (when, new_id, old_id))
    carry_evidence(conn, [(old_id, new_id)], moved=moved)
    return when


@store_errors("add_record")
def add_record(conn: sqlite3.Connection, draft: RecordDraft, *, background: EmbedQueue | None = None,
               profile: Profile | str | None = None) -> AddReport:
    """Add one record (``memo add``).  A text that starts with front matter gets the title,
    date and tags it gives, where the draft has none (``memo.ingest.front_matter``; a date
    memo cannot read is said in ``note``); a markdown text's inline ``#tags`` are tags too.  Adding the same text twice stores it once; a text
    near-identical to a live record of its namespace is linked to it or skipped, as the
    profile's ``index.near_duplicates`` says (``memo.ops.near_dup``; ``profile`` None: the
    default profile).  Once committed the add is reported as done; ``vectors`` says whether
    its passages were embedded or are queued for `memo backfill` (and why).  With
    ``background`` (a server's ``memo.embed.background.BackgroundEmbedder``) it returns right
    after the commit and the passages are reported queued for that thread."""
    # The text's front matter gives the title, date and tags as a file import's does
    # (memo.ingest.front_matter); code's ``---`` lines are code.
    notices: tuple[str, ...] = ()
    if draft.kind != "code":
        draft, notices = with_front_matter(draft, stored_as="added")
        # A markdown note's Obsidian #tags are its tags, as `memo import note.md` reads them;
        # with no file name, markdown is a text with front matter or headings (split_record).
        if front_matter(draft.body)[0] or looks_like_markdown(draft.body):
            draft = replace(draft, tags=with_inline_tags(draft.tags, draft.body))
    # Token counts, exact terms and entity mentions are worked out here, before the
    # writers' queue: with several writers the lock is the queue everyone waits in, so it
    # is held for the inserts only (the soak's ack p99, docs/reliability.md section 9).
    passages = prepare(draft, nul_ok=storable_nul(conn))
    prof = load_profile(default_profile() if profile is None else profile)
    near = None
    if prof.index.near_duplicates != "off":
        near = find_near_duplicate(conn, draft, prof.index.near_min, prof)
        if near is not None and find_live_duplicate(conn, draft.namespace, record_hash(draft)) is None:
            if prof.index.near_duplicates == "skip":
                return AddReport(status="skipped", record_id=near.record_id, passages=0,
                                 near_duplicate_of=near.record_id, near_similarity=near.similarity,
                                 note=f"near-identical to {near.record_id} (similarity {near.similarity:.2f}); "
                                      f"not stored (index.near_duplicates = skip): to replace it, "
                                      f"`memo supersede {near.record_id}` with the new text")
            draft = replace(draft, meta={**draft.meta, "near_duplicate_of": near.record_id,
                                         "near_similarity": near.similarity})
        else:
            near = None
    item = prepare_item(draft, passages)
    with write_tx(conn):
        report = store_prepared(conn, item)
    if near is not None and report.status == "added":
        report = replace(report, near_duplicate_of=near.record_id, near_similarity=near.similarity,
                         note=f"near-identical to {near.record_id} (similarity {near.similarity:.2f}); stored and "
                              "linked to it (meta.near_duplicate_of): forget either if one is enough")
    if notices and report.status != "skipped":
        report = replace(report, note="; ".join(n for n in (report.note, *notices) if n))
    if report.status != "skipped":
        # Committed: from here on the add has succeeded.  Embedding failures only queue
        # the passages (report.vectors), they never turn the add into an error.
        report = replace(report, vectors=after_commit(conn, [report.record_id], report.passages,
                                                           background=background))
    return report
