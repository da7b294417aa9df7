"""The values a data set loader returns (``EvalQuery``, ``EvalSet``) and the helpers the
loaders share.  ``memo_eval.datasets`` resolves a name or path to a loader; the loaders
(``beir``, ``custom``, ``locomo``) import this module, never the package, so the package can
import them at the top without a cycle."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memo.stored import RecordDraft

Unit = Literal["record", "passage", "auto"]

OBS_SUFFIX = "-obs"   # "locomo-obs": LoCoMo with each session's observations indexed as facts


@dataclass(frozen=True, slots=True)
class EvalQuery:
    qid: str
    text: str
    namespace: str | None = None   # search only inside this namespace (LoCoMo: the conversation)
    category: str | None = None    # reported per category (LoCoMo 1-5)
    answerable: bool = True        # False: the right answer is to abstain (zero results)
    now: str | None = None         # reference time for recency (ISO); None = wall clock


@dataclass(frozen=True)
class EvalSet:
    name: str                                   # "scifact", "locomo", or the file stem
    split: str
    corpus_hash: str                            # sha256 of the corpus file(s): split-independent
    unit: Unit
    queries: tuple[EvalQuery, ...]
    qrels: Mapping[str, Mapping[str, int]]      # qid -> {unit key -> grade > 0}
    corpus: Callable[[], Iterator[RecordDraft]] | None  # None: the corpus is a user's memo DB
    source: str = ""                            # where it was read from
    notes: Mapping[str, object] = field(default_factory=dict)  # loader diagnostics (fixed ids...)
    # Facts indexed with the corpus, as (where, FactDraft) ("locomo-obs": the observations)
    facts: Callable[[], Iterator[tuple[str, Any]]] | None = None
    # The corpus file and the ``memo import --format`` that reads it: the harness builds its
    # index through ``memo.ops.importer.import_path`` (the index users get).  None: ``corpus``
    # drafts are stored as they are (synthetic sets).
    corpus_path: str | None = None
    corpus_format: str | None = None            # "beir" | "locomo"

    @property
    def dataset_hash(self) -> str:
        """Hash of corpus + this split's queries and qrels (for the runs table)."""
        h = hashlib.sha256(self.corpus_hash.encode())
        for q in self.queries:
            h.update(f"\x1e{q.qid}\x1f{q.text}\x1f{q.namespace}\x1f{q.answerable}".encode())
            for key, grade in sorted(self.qrels.get(q.qid, {}).items()):
                h.update(f"\x1d{key}={grade}".encode())
        return h.hexdigest()

    @property
    def has_corpus(self) -> bool:
        """False for a set of labels alone (your own queries): it is replayed against a memo
        database, the user's (``memo_eval.run.user_database``)."""
        return self.corpus is not None or self.corpus_format is not None

    def by_id(self) -> dict[str, EvalQuery]:
        return {q.qid: q for q in self.queries}


def file_sha256(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
