"""Store a batch of import records in the caller's write transaction: the batch form of
``memo.ops.add.store_draft`` (issue 16.4).

Same decisions, in input order, as calling ``store_draft(..., replace_previous=True)``
record after record: same content as a current record of the namespace (stored before
or earlier in this batch) -> skipped with that record's id; a chat export's conversation
with a current version from another file -> superseded or skipped as
``memo.ops.chat_versions`` says (the rule both paths call); a current record at the same
import path and external id (stored before, or earlier in this batch) -> superseded by
the new one ('updated'), unless that record was written by hand over the text the item
holds (``memo.ops.hand_edits``: skipped, with a note); else added.  A text whose record this batch supersedes is new
again for the items after it (JSONL lines shifted by one).  What differs is the number of statements: one
SELECT per 500 keys for the duplicates and one for the earlier versions, then one
``executemany`` per table (``memo.store.records.insert_records``), instead of three
SELECTs and a dozen INSERTs per record.  The derived values of each passage (token count,
exact terms, entity mentions) are worked out before the transaction (``prepare_item``).

tests/unit/ops/test_store_batch.py imports the same inputs both ways and compares every
table.

**Another kind** (``rekind``: the import names its kind, ``memo import --kind``): a text
stored as one kind and imported as another is split anew (a conversation by turns, a doc
by sections), so it is not the same record.  When the current record holding it is the
one at the item's import path and external id (the same file imported again with
another ``--kind``), the item supersedes it ('updated', the usual version line: facts
citing it follow).  When it is another record (the same text at another path, or
added), two current records cannot hold one text (``records_dedup``): the item is
skipped with a ``note`` saying what holds it and how to re-split it.  Without
``rekind`` the kind is the file type's guess and the stored record's kind, chosen
earlier, stays (a later ``memo import`` of the folder does not undo ``--kind``).

**A moved file** (``walked``: a complete folder walk, ``memo.ops.file_moves``): a text
whose current record is the folder's and whose file is gone is not a duplicate but that
file renamed or moved: the item supersedes that record ('updated', a note saying where it
moved from), and the record of another text at the item's own path too, if any.  With
``rekind`` it is re-split as the kind asked for, as its own record would be.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memo.dc_pickle import by_fields
from memo.ops.chat_versions import LiveConversations
from memo.ops.file_moves import Walked
from memo.ops.hand_edits import imported_before, kept_note, replaced_note
from memo.ops.reports import AddReport
from memo.store.facts import carry_evidence
from memo.store.records import (
    DerivedPassage,
    NewRecord,
    check_dedup_index,
    content_hash,
    derive_passages,
    insert_records,
    new_record_id,
    record_hash,
    utc_now,
)
from memo.stored import CURRENT, PassageDraft, RecordDraft

_CHUNK = 500          # keys per IN (...) list: well under SQLite's bound-parameter limit
_LIVE = CURRENT


@by_fields
@dataclass(frozen=True, slots=True)
class PreparedItem:
    """A record ready to store: split, hashed, its passages' derived values worked out."""

    draft: RecordDraft
    content_hash: str
    passages: tuple[DerivedPassage, ...]


def prepare_item(draft: RecordDraft, passages: Sequence[PassageDraft]) -> PreparedItem:
    """Everything about a record that needs no database (run outside the transaction)."""
    return PreparedItem(draft, record_hash(draft), derive_passages(draft, passages))


def chunks(items: list, size: int = _CHUNK):  # noqa: ANN202 - a generator of list slices
    """``items`` in slices of at most ``size``: an IN (...) list each, under SQLite's bound-parameter limit."""
    for s in range(0, len(items), size):
        yield items[s:s + size]


def live_duplicates(conn: sqlite3.Connection, keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(namespace, content hash) -> the current record holding it (``find_live_duplicate``
    for many keys; the unique index records_dedup keeps it to one per key)."""
    out: dict[tuple[str, str], str] = {}
    by_ns: dict[str, list[str]] = {}
    for ns, h in keys:
        by_ns.setdefault(ns, []).append(h)
    for ns, hashes in by_ns.items():
        for chunk in chunks(hashes):
            out.update(((ns, h), rid) for h, rid in conn.execute(
                f"SELECT content_hash, id FROM records WHERE namespace = ? AND content_hash IN "
                f"({','.join('?' * len(chunk))}) AND {_LIVE}", (ns, *chunk)))
    check_dedup_index(conn, [k for k in keys if k not in out])     # the dedup index lost no entry
    return out


def live_versions(conn: sqlite3.Connection,
                  keys: set[tuple[str, str, str | None]]) -> dict[tuple[str, str, str | None], tuple[str, str]]:
    """(namespace, import path, external id) -> (the newest live record there, its content
    hash) (``memo.ops.add.find_previous_version`` for many keys).  Keys with an external id are
    looked up by it (index records_ext), keys without by import path (records_import):
    each through the index that singles it out."""
    with_ext: dict[str, list[str]] = {}
    no_ext: dict[str, list[str]] = {}
    for ns, path, ext in keys:
        if ext is None:
            no_ext.setdefault(ns, []).append(path)
        else:
            with_ext.setdefault(ns, []).append(ext)
    out: dict[tuple[str, str, str | None], tuple[str, str]] = {}
    rows: list[tuple[str, str, str | None, str, str, str]] = []
    for ns, exts in with_ext.items():
        for chunk in chunks(sorted(set(exts))):
            rows.extend(conn.execute(
                f"SELECT namespace, import_path, ext_id, id, recorded_at, content_hash FROM records INDEXED BY records_ext "
                f"WHERE namespace = ? AND ext_id IN ({','.join('?' * len(chunk))}) AND {_LIVE}", (ns, *chunk)))
    for ns, paths in no_ext.items():
        for chunk in chunks(sorted(set(paths))):
            rows.extend(conn.execute(
                f"SELECT namespace, import_path, ext_id, id, recorded_at, content_hash FROM records INDEXED BY records_import "
                f"WHERE namespace = ? AND import_path IN ({','.join('?' * len(chunk))}) AND ext_id IS NULL "
                f"AND {_LIVE}", (ns, *chunk)))
    rows.sort(key=lambda r: r[4], reverse=True)          # ORDER BY recorded_at DESC: newest first
    for ns, path, ext, rid, _, chash in rows:
        key = (ns, path, ext)
        if key in keys:
            out.setdefault(key, (rid, chash))
    return out


def identities(conn: sqlite3.Connection, ids: set[str]) -> dict[str, tuple[str, str | None, str | None]]:
    """record id -> (kind, import path, external id)."""
    out: dict[str, tuple[str, str | None, str | None]] = {}
    for chunk in chunks(sorted(ids)):
        out.update((rid, (kind, path, ext)) for rid, kind, path, ext in conn.execute(
            f"SELECT id, kind, import_path, ext_id FROM records WHERE id IN ({','.join('?' * len(chunk))})",
            chunk))
    return out


def _rekind_note(draft: RecordDraft, dup: str, held: tuple[str, str | None, str | None]) -> str:
    kind, path, _ = held
    where = f" (from {path})" if path else ""
    return (f"its text is already stored as a {kind}, record {dup}{where}, so it was not stored as a "
            f"{draft.kind}; to re-split it, `memo forget {dup}` and import it again")


def same_text_note(draft: RecordDraft, dup: str, held: dict[str, tuple[str, str | None, str | None]]) -> str | None:
    """A file skipped because another file's record holds its text: said, naming that file
    (a folder of identical READMEs kept one; a label or a search for the others found
    nothing, and the import said only "skipped 5").  None for the input's own record (an
    unchanged file imported again, a conversation saved in another export) and for inputs
    without a path."""
    if not draft.import_path or dup not in held:
        return None
    _, path, ext = held[dup]
    if path == draft.import_path or (draft.ext_id is not None and ext == draft.ext_id):
        return None             # its own record (a chat export's conversation is known by its id)
    other = f"{path}'s record {dup}" if path else f"record {dup}"
    return f"the same text as {other}: stored once, there"


def _labels(conn: sqlite3.Connection, record_id: str) -> tuple[str | None, str | None]:
    row = conn.execute("SELECT library, version FROM records WHERE id = ?", (record_id,)).fetchone()
    return (row[0], row[1]) if row is not None else (None, None)


def _stored_unversioned(conn: sqlite3.Connection, previous: tuple[str, str] | None, d: RecordDraft) -> str | None:
    """The current record of ``d``'s file when it holds ``d``'s text under ``d``'s library
    and version but was keyed by its text alone (stored before the key held them:
    ``memo.store.records.record_hash``): unchanged, so skipped, not stored again."""
    if previous is None or previous[1] != content_hash(d.body):
        return None
    return previous[0] if _labels(conn, previous[0]) == (d.library, d.version) else None


def _labels_note(conn: sqlite3.Connection, previous: str, old_hash: str, d: RecordDraft) -> str | None:
    """A notice when the new version of a file differs from the old one only by its
    library or version (an import given other ``--library`` / ``--version``, or none): the
    record now says what this import gave, which a user re-importing without the flags may
    not have meant."""
    old = _labels(conn, previous)
    if old == (d.library, d.version):
        return None
    same = old_hash in (content_hash(d.body), record_hash(replace(d, library=old[0], version=old[1])))
    if not same:
        return None

    def shown(lib: str | None, ver: str | None) -> str:
        return " ".join(x for x in (f"library {lib}" if lib else None, f"version {ver}" if ver else None) if x) \
            or "no library or version"

    return (f"text unchanged, stored again as {shown(d.library, d.version)} (was {shown(*old)}); "
            "give --library/--version as before to keep them")


def store_items(conn: sqlite3.Connection, items: Sequence[PreparedItem], *, rekind: bool = False,
                walked: Walked | None = None) -> list[AddReport]:
    """Store ``items`` (caller's write transaction); one report per item, in order.
    ``rekind``: the kinds were asked for, a text stored as another kind is not a duplicate;
    ``walked``: the items are a folder walk's, a text whose record's file is gone moved
    (module docstring)."""
    dups = live_duplicates(conn, {(it.draft.namespace, it.content_hash) for it in items})
    versions = live_versions(conn, {(it.draft.namespace, it.draft.import_path, it.draft.ext_id)
                                    for it in items if it.draft.import_path})
    conversations = LiveConversations(conn, (it.draft for it in items))
    # A file's text stored already from another file is named (the notice below): who the
    # duplicates' records are is read for any batch of files, not only a re-kinding one.
    identify = rekind or walked is not None or any(it.draft.import_path for it in items)
    held = identities(conn, set(dups.values())) if identify and dups else {}
    reports: list[AddReport] = []
    new: list[NewRecord] = []
    superseded: list[tuple[str, str, str]] = []      # (when, new id, old id)
    moves: set[str] = set()                          # old ids whose file moved (their sections may differ)
    fresh: dict[str, int] = {}                        # id stored by this batch -> its place in new
    for it in items:
        d = it.draft
        dup = dups.get((d.namespace, it.content_hash))
        moved = None
        if dup is not None and walked is not None and d.import_path and walked.gone(*held[dup][1:]):
            moved, dup = dup, None      # its file was renamed or moved to this one: superseded below
        if dup is not None and rekind and held[dup][0] != d.kind:
            own = d.import_path and versions.get((d.namespace, d.import_path, d.ext_id), (None,))[0] == dup
            if not own:
                reports.append(AddReport(status="skipped", record_id=dup, passages=0,
                                         note=_rekind_note(d, dup, held[dup])))
                continue
            dup = None                  # a new version of its own record: superseded below
        if dup is None and (d.library is not None or d.version is not None) and d.import_path:
            dup = _stored_unversioned(conn, versions.get((d.namespace, d.import_path, d.ext_id)), d)
        if dup is not None:
            reports.append(AddReport(status="skipped", record_id=dup, passages=0, note=same_text_note(d, dup, held)))
            continue
        previous_here = versions.get((d.namespace, d.import_path, d.ext_id)) if d.import_path and moved is None else None
        edited = imported_before(conn, previous_here[0]) if previous_here is not None else None
        if edited is not None and edited[1] == it.content_hash:     # the file is as imported: the hand edit stays
            reports.append(AddReport(status="skipped", record_id=previous_here[0], passages=0,
                                     note=kept_note(previous_here[0], d.import_path or "")))
            continue
        drafts = tuple(p.draft for p in it.passages)
        # A chat conversation with a live version from another export file (memo.ops.chat_versions).
        decision = conversations.decide(d, drafts) if moved is None else None
        if decision is not None and decision.kept is not None:
            reports.append(AddReport(status="skipped", record_id=decision.kept.id, passages=0, note=decision.note))
            continue
        rid = d.id or new_record_id()
        if identify:
            held[rid] = (d.kind, d.import_path, d.ext_id)
        fresh[rid] = len(new)
        new.append(NewRecord(rid, d, it.content_hash, utc_now(), it.passages))
        dups[(d.namespace, it.content_hash)] = rid
        replaced: list[tuple[str, str, str | None]] = []   # (id, content hash, import path) of each old version
        if d.import_path:
            key = (d.namespace, d.import_path, d.ext_id)
            previous, old_hash = versions.get(key, (None, None))
            versions[key] = (rid, it.content_hash)    # the newest live version from now on
            if decision is not None:
                replaced = [(v.id, v.content_hash, v.import_path) for v in decision.replaces]
            else:
                if moved is not None:
                    replaced = [(moved, it.content_hash, held[moved][1])]
                    moves.add(moved)
                if previous is not None:
                    replaced.append((previous, old_hash, d.import_path))
            for old, old_hash, path in replaced:
                if dups.get((d.namespace, old_hash)) == old:
                    # No longer current: a later item of the batch with its text is new (lines shifted).
                    del dups[(d.namespace, old_hash)]
                if path != d.import_path and versions.get((d.namespace, path, d.ext_id), (None,))[0] == old:
                    del versions[(d.namespace, path, d.ext_id)]     # superseded from another path
            conversations.stored(d, rid, it.content_hash, drafts, [old for old, _, _ in replaced])
        if not replaced:
            reports.append(AddReport(status="added", record_id=rid, passages=len(it.passages)))
        else:
            superseded.extend((utc_now(), rid, old) for old, _, _ in replaced)
            note = decision.note if decision else None
            if moved is not None and walked is not None:
                note = walked.moved_note(moved, held[moved][1] or "", previous)
            elif note is None and previous is not None:
                note = replaced_note(previous) if edited is not None else _labels_note(conn, previous, old_hash, d)
            reports.append(AddReport(status="updated", record_id=rid, passages=len(it.passages),
                                     superseded=replaced[0][0], note=note))
    # Replaced versions leave the dedup index before the inserts (a new record may hold the
    # text of one this batch supersedes: those of this batch go in superseded), and all
    # point at their new version after them (superseded_by references it).
    conn.executemany("UPDATE records SET superseded_at = ? WHERE id = ?",
                     [(w, old) for w, _, old in superseded if old not in fresh])
    for w, _, old in superseded:
        if old in fresh:
            new[fresh[old]] = replace(new[fresh[old]], superseded_at=w)
    insert_records(conn, new)
    conn.executemany("UPDATE records SET superseded_at = ?, superseded_by = ? WHERE id = ?", superseded)
    # as ``add.mark_superseded``; a moved file's passages may name its old module
    carry_evidence(conn, [(old, rid) for _, rid, old in superseded if old not in moves])
    carry_evidence(conn, [(old, rid) for _, rid, old in superseded if old in moves], moved=True)
    return reports
