"""Which version of a chat export's conversation is current when the same conversation is
imported from two files (an export unzipped to a new folder, an older export after a newer
one): the one rule both import paths follow (``memo.ops.store_batch.store_items`` and
``memo.ops.add.store_draft``).

A conversation from a chat export is known by its namespace and conversation key
(``memo.ingest.chat_exports.conversation_key``: the app's conversation id), not by its file,
because people save every export in a new folder.  Every other record keeps its identity
rule, namespace + import path + external id.

While every live version of the conversation is at the new draft's own import path, the
usual rule holds: that file changed in place and says what the conversation is now, so a
changed draft supersedes its version.  When a live version came from another path, the two
exports are compared by their messages (a message by its id; one without an id by its text
and time):

* the new export holds every message of the stored version and more: the conversation
  **grew**, the new version supersedes the stored one ('updated');
* the stored version holds every message of the new export and more: this is an **older
  export**, skipped with a notice naming the version that holds more;
* each holds messages the other lacks (an edited message or a regenerated answer starts a
  branch, and an app exports the branch it shows), or the same messages with other text:
  the export whose **last message is newer** is the later snapshot of the conversation, so
  when that is the new one it supersedes the stored version, else the stored version stays
  (skipped); a notice says which and why either way.

A superseded version is kept (``--as-of``), and the facts citing its unchanged messages
follow the new version (``memo.store.facts.carry_evidence``), so taking the newer snapshot
loses nothing; storing both would put every shared message in the results twice.

Why this never flip-flops: a version only ever gives way to one whose last message is as
new (it holds all its messages and more) or strictly newer (they diverge), and never to
one it holds entirely, so "gives way to" has no cycle (a message keeps its time from one
export to the next).  Importing any number of exports of a conversation, in any order and
any number of times, settles on one live record, the longest when one holds the others,
and re-imports leave it there; a tie keeps the stored version.

Live versions imported before this rule (one per export folder) are compared through the
best of them (newest last message, then most messages, then newest recorded); a new version
that wins supersedes them all, so such duplicates heal on the next newer export.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memo.ingest.chat_exports import conversation_key
from memo.stored import CURRENT, PassageDraft, RecordDraft
from memo.text.when import stored_when

_CHUNK = 500          # keys per IN (...) list, as memo.ops.store_batch

Key = tuple[str, str]                 # (namespace, conversation key)
Message = tuple[str, ...]             # ('id', ext_id) or ('text', text, time)


@dataclass(frozen=True, slots=True)
class LiveVersion:
    """A live record of a conversation."""

    id: str
    import_path: str | None
    content_hash: str


@dataclass(frozen=True, slots=True)
class Messages:
    """What the rule compares of one version: its messages, and its newest message's time
    (stored form, which sorts as text; '' when none has a time)."""

    keys: frozenset[Message]
    last: str


@dataclass(frozen=True, slots=True)
class Decision:
    """A new version's fate when a live version came from another path: it supersedes
    ``replaces`` (the first is the one reported), or ``kept`` stays current and it is
    skipped."""

    replaces: tuple[LiveVersion, ...] = ()
    kept: LiveVersion | None = None
    note: str | None = None


def key_of(draft: RecordDraft) -> Key | None:
    """(namespace, conversation key) of an import's draft of a chat conversation, else None
    (a draft without an import path is a ``memo add``: no version line of an import)."""
    key = conversation_key(draft.kind, draft.ext_id, draft.meta) if draft.import_path else None
    return (draft.namespace, key) if key else None


def messages_of(passages: Iterable[tuple[str | None, str, str | None]]) -> Messages:
    """From (ext_id, text, event_at as stored) per passage; a long message windowed into
    several passages keeps its id in each, so it counts once."""
    keys: set[Message] = set()
    last = ""
    for ext_id, text, when in passages:
        keys.add(("id", ext_id) if ext_id else ("text", text, when or ""))
        if when and when > last:
            last = when
    return Messages(frozenset(keys), last)


def draft_messages(draft: RecordDraft, passages: Sequence[PassageDraft]) -> Messages:
    # Times as memo.store.records.insert_records stores them, so a draft compares with a
    # stored version as that version's own draft would.
    return messages_of((p.ext_id, p.text, stored_when(p.event_at or draft.event_at)) for p in passages)


def _differ(gone: int, extra: int) -> str:
    if not gone and not extra:
        return "the same messages with other text"
    return f"{gone} of its messages are not in this export, {extra} of this export's are not in it"


def judge(new: Messages, best: LiveVersion, old: Messages, others: Sequence[LiveVersion] = ()) -> Decision:
    """The rule (module docstring): ``new`` against ``best``, the live version from another
    path that holds most (``others``: further live versions, superseded with it)."""
    gone, extra = len(old.keys - new.keys), len(new.keys - old.keys)
    where = f"record {best.id} (from {best.import_path})"
    also = (f"; it also supersedes {', '.join(v.id for v in others)}, other live copies of this conversation"
            if others else "")
    if not gone and extra:
        return Decision(replaces=(best, *others), note=also[2:] or None)
    if gone and not extra:
        return Decision(kept=best, note=f"an older export of this conversation: {where} holds all "
                                        f"{len(new.keys)} of its messages and {gone} more, so that version "
                                        f"stays current and this one was not stored")
    differ = f"this export and {where} differ ({_differ(gone, extra)}: an edited or branched conversation)"
    if new.last > old.last:
        return Decision(replaces=(best, *others),
                        note=f"{differ}; this export's last message is newer ({new.last} after "
                             f"{old.last or 'no time'}), so it is the current version now and {best.id} "
                             f"stays as an older version{also}")
    return Decision(kept=best, note=f"{differ}; the stored version's last message is as new or newer "
                                    f"({old.last or 'no time'}, this export's {new.last or 'no time'}), so it "
                                    f"stays current and this export was not stored; to make this one current, "
                                    f"`memo forget {best.id}` and import it again")


def meta_of(value: object) -> dict[str, object] | None:
    """A record's ``meta`` as a dict (SQLite gives JSON text, PostgreSQL a dict); None when it is not one."""
    if isinstance(value, dict):
        return value
    try:
        loaded = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


class LiveConversations:
    """The live versions of the conversations some drafts belong to (looked up once, by
    index records_ext), kept as the database will hold them while the caller stores new
    versions in one transaction (``stored``).  A version's messages are read only when a
    draft has to be compared with it (a changed conversation from another path)."""

    def __init__(self, conn: sqlite3.Connection, drafts: Iterable[RecordDraft]) -> None:
        self.conn = conn
        wanted: dict[str, set[str]] = {}
        for d in drafts:
            if (k := key_of(d)) is not None:
                wanted.setdefault(k[0], set()).add(k[1])
        rows: list[tuple[str, str, str, str | None, str, str, str, object]] = []
        for ns, exts in wanted.items():
            ordered = sorted(exts)
            for s in range(0, len(ordered), _CHUNK):
                chunk = ordered[s:s + _CHUNK]
                rows.extend((ns, *r) for r in conn.execute(
                    f"SELECT recorded_at, id, import_path, ext_id, content_hash, kind, meta FROM records "
                    f"INDEXED BY records_ext WHERE namespace = ? AND ext_id IN ({','.join('?' * len(chunk))}) "
                    f"AND {CURRENT}", (ns, *chunk)))
        rows.sort(key=lambda r: (r[1], r[2]), reverse=True)      # newest recorded first
        self.live: dict[Key, list[LiveVersion]] = {}
        for ns, _, rid, path, ext, chash, kind, meta in rows:
            # The same ext_id on a record that is no chat conversation (a JSONL line's id)
            # is not this conversation.
            if ext is not None and conversation_key(kind, ext, meta_of(meta)) == ext:
                self.live.setdefault((ns, ext), []).append(LiveVersion(rid, path, chash))
        self.messages: dict[str, Messages] = {}

    def decide(self, draft: RecordDraft, passages: Sequence[PassageDraft]) -> Decision | None:
        """None: the usual rule (no live version from another path, or not a chat
        conversation); else what the conversation rule says."""
        key = key_of(draft)
        live = self.live.get(key, []) if key else []
        if all(v.import_path == draft.import_path for v in live):
            return None
        rated = [(v, self._messages(v.id)) for v in live]
        # newest first, so max() keeps the newest of equals
        best, old = max(rated, key=lambda vm: (vm[1].last, len(vm[1].keys)))
        return judge(draft_messages(draft, passages), best, old, [v for v, _ in rated if v is not best])

    def stored(self, draft: RecordDraft, record_id: str, chash: str, passages: Sequence[PassageDraft],
               replaced: Iterable[str]) -> None:
        """The caller stored ``record_id`` from ``draft``, superseding ``replaced``."""
        key = key_of(draft)
        if key is None:
            return
        gone = set(replaced)
        self.live[key] = [LiveVersion(record_id, draft.import_path, chash),
                          *(v for v in self.live.get(key, []) if v.id not in gone)]
        self.messages[record_id] = draft_messages(draft, passages)

    def _messages(self, record_id: str) -> Messages:
        if record_id not in self.messages:
            self.messages[record_id] = messages_of(
                (ext, text, when) for ext, text, when in self.conn.execute(
                    "SELECT ext_id, text, event_at FROM passages WHERE record_id = ? ORDER BY ord", (record_id,)))
        return self.messages[record_id]
