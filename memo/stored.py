"""Typed values of what memo stores: records and their passages, facts and their evidence,
and the drafts a caller writes them from (frozen dataclasses).  Apart from ``memo.types``
(the search vocabulary: kinds, scope, search fields, arm names) because a search uses none
of them, so a one-shot ``memo search`` does not build their classes (issue 31.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memo.dc_pickle import by_fields
from memo.types import Kind

# A record or fact is *current* when no newer version replaced it and it is not forgotten:
# what a search sees by default, and what the dedup indexes keep one of per text (schema v8).
CURRENT = "superseded_at IS NULL AND forgotten_at IS NULL"


@by_fields
@dataclass(frozen=True, slots=True)
class PassageDraft:
    """A passage before it has ids: what a splitter produces."""

    text: str
    section: str = ""
    speaker: str | None = None
    event_at: str | None = None
    ext_id: str | None = None


@by_fields
@dataclass(frozen=True, slots=True)
class RecordDraft:
    """Everything a caller can say about a new record.  ``passages`` empty = split by kind."""

    body: str
    kind: Kind = "note"
    namespace: str = "default"
    title: str | None = None
    source: str | None = None
    library: str | None = None
    version: str | None = None
    tags: tuple[str, ...] = ()
    event_at: str | None = None
    trust: float = 1.0
    author: str | None = None
    import_path: str | None = None
    ext_id: str | None = None
    meta: dict[str, object] = field(default_factory=dict)
    passages: tuple[PassageDraft, ...] = ()
    id: str | None = None  # caller-chosen id (tests, golden corpora); else generated


@dataclass(frozen=True, slots=True)
class Passage:
    pk: int
    id: str
    record_id: str
    ord: int
    section: str
    text: str
    speaker: str | None
    event_at: str | None
    ext_id: str | None
    tokens: int


@dataclass(frozen=True, slots=True)
class Record:
    id: str
    namespace: str
    kind: str
    title: str | None
    source: str | None
    library: str | None
    version: str | None
    tags: tuple[str, ...]
    event_at: str | None
    recorded_at: str
    superseded_at: str | None
    superseded_by: str | None
    forgotten_at: str | None
    trust: float
    author: str | None
    import_path: str | None
    ext_id: str | None
    content_hash: str
    body: str
    meta: dict[str, object]
    passages: tuple[Passage, ...] = ()
    facts: tuple[RecordFact, ...] = ()   # live facts citing its passages (``memo get``)


@dataclass(frozen=True, slots=True)
class FactDraft:
    """Everything a caller can say about a new fact.  ``evidence``: passage ids
    ('<record>:<ord>'), record ids (all their passages), record ext_ids or passage ext_ids
    (a LoCoMo turn id 'D1:3'), resolved in ``namespace`` first (memo.store.facts)."""

    text: str
    evidence: tuple[str, ...]
    namespace: str = "default"
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    event_at: str | None = None
    trust: float = 1.0
    author: str | None = None
    source: str | None = None
    meta: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FactEvidence:
    passage_id: str
    record_id: str
    namespace: str
    text: str
    live: bool                          # its record is neither forgotten nor superseded


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    namespace: str
    text: str
    subject: str | None
    predicate: str | None
    object: str | None
    event_at: str | None
    recorded_at: str
    superseded_at: str | None
    superseded_by: str | None
    forgotten_at: str | None
    trust: float
    author: str | None
    source: str | None
    content_hash: str
    meta: dict[str, object]
    evidence: tuple[FactEvidence, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordFact:
    """A live fact whose evidence includes passages of one record (``memo get``)."""

    id: str
    text: str
    subject: str | None
    passages: tuple[str, ...]           # the record's passage ids it cites
