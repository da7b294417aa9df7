"""Frozen result types of the library operations (the CLI prints them as JSON;
schemas in docs/cli-json.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AddStatus = Literal["added", "updated", "skipped"]


@dataclass(frozen=True, slots=True)
class VectorStatus:
    """What happened to the vectors of a committed write (after the commit, outside it).
    A failure here never fails the write: the passages stay queued for `memo backfill`."""

    embedded: int                     # vectors written by this command
    queued: int                       # passages of this write still without a vector (import: all pending)
    model_id: str | None = None       # the model embedded with (None when it could not be named)
    error: str | None = None          # why vectors are queued, when embedding failed
    reused: int = 0                   # of embedded: copied from a passage of the same text (memo.embed.reuse)


@dataclass(frozen=True, slots=True)
class AddReport:
    status: AddStatus                 # skipped = same content already stored in the namespace
    record_id: str                    # the new record, or the existing duplicate when skipped
    passages: int
    superseded: str | None = None     # import: the older version this one replaced
    note: str | None = None           # why it was skipped, when that is not obvious; what was left out
    vectors: VectorStatus | None = None   # memo add (not import items, not skipped): the embedding outcome
    near_duplicate_of: str | None = None  # memo add: the live record this text is near-identical to
    near_similarity: float | None = None  # and how near (memo.ops.near_dup)


@dataclass(frozen=True, slots=True)
class Rejection:
    path: str                         # file (relative to the import root) or 'file:line'
    reason: str


@dataclass(frozen=True, slots=True)
class NearFact:
    """A fact of an import found near-identical to a live fact, or to one added earlier in
    the same import (memo.ops.near_dup)."""
    where: str                        # the input's position
    fact_id: str | None               # the new fact (index.near_duplicates = link); None: not stored (skip)
    near_duplicate_of: str
    similarity: float


@dataclass(frozen=True, slots=True)
class ImportReport:
    root: str
    format: str
    added: int
    updated: int
    skipped: int
    rejected: tuple[Rejection, ...]
    ignored: int                      # files of a type memo does not import (images, ...)
    batches: int
    passages: int
    record_ids: tuple[str, ...] = ()  # added and updated records, in import order
    skipped_record_ids: tuple[str, ...] = ()  # stored records the skipped inputs matched (sorted)
    missing: tuple[str, ...] = ()     # folder import: files (relative to root) gone or emptied since imported
    pruned: int = 0                   # records of those files forgotten (--prune)
    emptied: tuple[str, ...] = ()     # those of missing still there but now empty (memo.ops.import_missing)
    facts_added: int = 0              # JSONL fact lines / LoCoMo observations stored as facts
    facts_skipped: int = 0            # the same fact (text and evidence) was already stored, or near-identical under skip
    facts_near_duplicates: tuple[NearFact, ...] = ()   # facts near-identical to another (linked or skipped)
    seconds: float = 0.0
    vectors: VectorStatus | None = None   # set by the caller that embeds after the import (the CLI)
    ignored_files: tuple[Rejection, ...] = ()  # the ignored files, each with why (path, reason)
    notices: tuple[Rejection, ...] = ()  # (path, what): a part left out (an unreadable front matter date), a text kept as another kind


@dataclass(frozen=True, slots=True)
class RecordSummary:
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
    passages: int


@dataclass(frozen=True, slots=True)
class SupersedeReport:
    old_id: str
    new_id: str
    superseded_at: str
    passages: int
    vectors: VectorStatus | None = None   # the embedding outcome of the new version
    # Current facts that cited only passages this version changed or dropped: their
    # evidence is in no current record now (memo.store.facts.facts_without_live_evidence).
    facts_without_evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ForgetReport:
    forgotten: tuple[str, ...]
    already_forgotten: tuple[str, ...]
    forgotten_at: str | None          # None when every id was already forgotten


@dataclass(frozen=True, slots=True)
class PurgeReport:
    records: int
    passages: int
    vectors: int
    record_ids: tuple[str, ...]
    fact_ids: tuple[str, ...] = ()    # forgotten facts deleted for good


@dataclass(frozen=True, slots=True)
class StatsReport:
    path: str
    schema_version: int
    size_bytes: int
    records: int                      # every row, including superseded and forgotten
    live: int
    superseded: int
    forgotten: int
    passages: int
    by_kind: dict[str, int] = field(default_factory=dict)        # live records
    by_namespace: dict[str, int] = field(default_factory=dict)   # live records
    vectors: dict[str, int] = field(default_factory=dict)        # model_id -> rows
    pending_vectors: dict[str, int] = field(default_factory=dict)  # model_id -> live passages without one
    facts: int = 0                    # every fact row, including superseded and forgotten
    facts_live: int = 0               # neither superseded nor forgotten
    facts_superseded: int = 0
    facts_forgotten: int = 0
    fact_vectors: dict[str, int] = field(default_factory=dict)          # model_id -> fact vector rows
    pending_fact_vectors: dict[str, int] = field(default_factory=dict)  # model_id -> facts not forgotten without one


@dataclass(frozen=True, slots=True)
class ReindexReport:
    passages: int
    keyword_rows: int
    exact_rows: int
    vectors: str                      # vectors need the model: `memo backfill`
    seconds: float
    facts: int = 0                    # facts whose keyword index (facts_fts) was rebuilt
    mentions: int = 0                 # mention rows written (passages' own text and live facts)
    entities: int = 0                 # distinct entities after the rebuild
    damaged_marker: str = "none"      # "none" | "cleared" (indexes rebuilt, integrity_check ok) | "kept"


@dataclass(frozen=True, slots=True)
class BackupReport:
    source: str
    path: str
    size_bytes: int
    integrity: str                    # 'ok' or the first integrity_check message
    counts: dict[str, int]            # table -> rows, equal in source snapshot and copy
    seconds: float


@dataclass(frozen=True, slots=True)
class RestoreReport:
    source: str                       # the backup file restored from
    path: str                         # the database that now holds the backup's contents
    method: str                       # 'sqlite-backup' (into the live database), 'replace', 'new-file'
    previous: str | None              # safety copy of the replaced database (None: none kept / none existed)
    previous_integrity: str | None    # integrity_check of that safety copy ('ok' unless it was damaged)
    schema_version: int               # of the restored database (older backups are migrated)
    backup_schema_version: int
    integrity: str
    counts: dict[str, int]            # table -> rows in the restored database
    seconds: float
