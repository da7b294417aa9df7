"""Labelled query sets: what a replay needs besides the index.

An ``EvalSet`` is a split of a data set: its queries, its qrels (query id -> {unit key ->
grade}) and a way to read its corpus as record drafts.  ``unit`` says what a qrels key names:

* ``record``  - a record's ``ext_id`` (BEIR doc id) or, for a user's own set, a record id,
  passage id or import path (``auto``), results are de-duplicated per record;
* ``passage`` - ``<namespace>#<passage ext_id>`` (LoCoMo turn ids like ``D1:3``).

``load_eval_set(name_or_path, split)`` resolves ``scifact``, ``locomo``, any BEIR folder,
a LoCoMo JSON file, or a user's JSONL query file (docs/eval.md); ``locomo-obs`` is LoCoMo
with the observations indexed as facts (same queries and qrels, another index).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from memo.errors import DatasetError
from memo.types import RecordDraft

Unit = Literal["record", "passage", "auto"]

# Data sets that ship with the repository (datasets/<name>/, with SOURCE.md + LICENCE.md).
REPO_ROOT = Path(__file__).resolve().parents[2]
DATASETS_DIR = REPO_ROOT / "datasets"
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

    @property
    def dataset_hash(self) -> str:
        """Hash of corpus + this split's queries and qrels (for the runs table)."""
        import hashlib
        h = hashlib.sha256(self.corpus_hash.encode())
        for q in self.queries:
            h.update(f"\x1e{q.qid}\x1f{q.text}\x1f{q.namespace}\x1f{q.answerable}".encode())
            for key, grade in sorted(self.qrels.get(q.qid, {}).items()):
                h.update(f"\x1d{key}={grade}".encode())
        return h.hexdigest()

    def by_id(self) -> dict[str, EvalQuery]:
        return {q.qid: q for q in self.queries}


def file_sha256(*paths: Path) -> str:
    import hashlib
    h = hashlib.sha256()
    for p in paths:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def fetched_dir() -> Path:
    """Where ``memo eval fetch`` puts data sets by default."""
    from eval.index import cache_root

    return cache_root() / "datasets"


def dataset_dir(name: str) -> Path:
    """A named data set: the repository's copy first, then a fetched one."""
    for base in (DATASETS_DIR, fetched_dir()):
        if (base / name).exists():
            return base / name
    return DATASETS_DIR / name


def load_eval_set(name_or_path: str, split: str = "test", *, limit: int | None = None) -> EvalSet:
    """Resolve a data set by name or path and load one split.  ``limit`` keeps the first N
    queries (fast checks); the corpus is always whole."""
    from eval.datasets import beir, custom, locomo

    # "<name>-obs": the LoCoMo data set with its observations indexed as facts.
    observations = False
    if name_or_path.endswith(OBS_SUFFIX) and not Path(name_or_path).expanduser().exists():
        name_or_path, observations = name_or_path[:-len(OBS_SUFFIX)], True
    path = Path(name_or_path).expanduser()
    if not path.exists():
        path = dataset_dir(name_or_path)
    if not path.exists():
        raise DatasetError(f"unknown data set {name_or_path!r}",
                           hint="use scifact, locomo, a BEIR folder, a LoCoMo .json or a queries .jsonl "
                                "(`memo eval fetch` downloads the public ones)")
    if path.is_dir() and (path / "queries.jsonl").exists():
        es = beir.load_beir(path, split)
    elif path.is_dir() and any(path.glob("locomo*.json")):
        es = locomo.load_locomo(sorted(path.glob("locomo*.json"))[0], split)
    elif path.suffix == ".json":
        es = locomo.load_locomo(path, split)
    elif path.suffix == ".jsonl":
        es = custom.load_custom(path, split)
    else:
        raise DatasetError(f"{path}: not a BEIR folder, LoCoMo JSON or queries JSONL")
    if observations:
        if es.name != "locomo":
            raise DatasetError(f"{name_or_path}{OBS_SUFFIX}: only LoCoMo has observations to index as facts")
        es = locomo.with_observations(es, Path(es.source))
    if limit is not None and limit < len(es.queries):
        kept = es.queries[:limit]
        ids = {q.qid for q in kept}
        es = replace(es, queries=kept, qrels={k: v for k, v in es.qrels.items() if k in ids})
    return es
