"""Frozen result types of the library operations (the CLI prints them as JSON;
schemas in docs/cli-json.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AddStatus = Literal["added", "updated", "skipped"]


@dataclass(frozen=True, slots=True)
class AddReport:
    status: AddStatus                 # skipped = same content already stored in the namespace
    record_id: str                    # the new record, or the existing duplicate when skipped
    passages: int
    superseded: str | None = None     # import: the older version this one replaced
    note: str | None = None           # why it was skipped, when that is not obvious


@dataclass(frozen=True, slots=True)
class Rejection:
    path: str                         # file (relative to the import root) or 'file:line'
    reason: str


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
    missing: tuple[str, ...] = ()     # folder import: files (relative to root) gone since imported
    pruned: int = 0                   # records of those files forgotten (--prune)
    seconds: float = 0.0


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


@dataclass(frozen=True, slots=True)
class ForgetReport:
    forgotten: tuple[str, ...]
    already_forgotten: tuple[str, ...]
    forgotten_at: str


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


@dataclass(frozen=True, slots=True)
class ReindexReport:
    passages: int
    keyword_rows: int
    exact_rows: int
    vectors: str                      # vectors need the model: `memo backfill`
    seconds: float
    facts: int = 0                    # facts whose keyword index (facts_fts) was rebuilt


@dataclass(frozen=True, slots=True)
class BackupReport:
    source: str
    path: str
    size_bytes: int
    integrity: str                    # 'ok' or the first integrity_check message
    counts: dict[str, int]            # table -> rows, equal in source snapshot and copy
    seconds: float
