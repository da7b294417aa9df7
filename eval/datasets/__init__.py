"""Labelled query sets: what a replay needs besides the index.

An ``EvalSet`` is a split of a data set: its queries, its qrels (query id -> {unit key ->
grade}) and a way to read its corpus as record drafts.  ``unit`` says what a qrels key names:

* ``record``  - a record's ``ext_id`` (BEIR doc id) or, for a user's own set, a record id,
  passage id or import path (``auto``), results are de-duplicated per record;
* ``passage`` - ``<namespace>#<passage ext_id>`` (LoCoMo turn ids like ``D1:3``).

``load_eval_set(name_or_path, split)`` resolves ``sample`` (the 300-abstract SciFact sample
packaged with memo), ``scifact``, ``locomo``, any BEIR folder,
a LoCoMo JSON file, or a user's JSONL query file (docs/eval.md); ``locomo-obs`` is LoCoMo
with the observations indexed as facts (same queries and qrels, another index);
``codesearch`` is a folder of labels over the running Python's standard library (corpus
read from the machine: ``memo_eval.datasets.codesearch``); a folder with a ``files``
manifest (``nodedocs``, ``relnotes``) is a labels file over files read from the machine
(``memo_eval.datasets.fileset``); ``offdomain:<queries>-on-<corpus>``
adds another set's queries as unanswerable ones (``memo_eval.datasets.offdomain``).
"""

from __future__ import annotations

from dataclasses import replace
from importlib.resources import files
from pathlib import Path

from memo.errors import DatasetError
from memo_eval.cache import cache_root
from memo_eval.datasets import beir, codesearch, custom, fileset, locomo, offdomain
from memo_eval.datasets.base import OBS_SUFFIX, EvalQuery, EvalSet, Unit, file_sha256

__all__ = ["DATASETS_DIR", "OBS_SUFFIX", "SAMPLE", "EvalQuery", "EvalSet", "Unit", "dataset_dir", "fetched_dir",
           "file_sha256", "load_eval_set", "sample_dir"]

# Data sets in a repository checkout (datasets/<name>/, with SOURCE.md + LICENCE.md); an
# installed memo has none of them (``memo eval fetch`` downloads scifact and locomo).
REPO_ROOT = Path(__file__).resolve().parents[2]
DATASETS_DIR = REPO_ROOT / "datasets"
# The bundled sample (300 SciFact abstracts + their test claims, two markdown notes) ships
# inside the memo package: ``memo eval run -d sample`` works from any install.
SAMPLE = "sample"
# The sample's gate sets (datasets/sample/gate): one dated conversation whose questions name
# speakers and dates, and headed API docs with identifier lookups, so the fast gate sees
# every stage of the default profile fire (issue 28.3).
GATE_SETS = {"sample-chat": ("gate", "gate-chat.json"), "sample-docs": ("gate",)}


def sample_dir() -> Path:
    """The packaged sample folder (``scifact/`` in BEIR layout, ``notes/``, licence)."""
    return Path(str(files("memo") / "sample"))


def fetched_dir() -> Path:
    """Where ``memo eval fetch`` puts data sets by default."""
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
    # "offdomain:<queries>-on-<corpus>": <corpus>'s set plus <queries> as unanswerable ones.
    if name_or_path.startswith(offdomain.PREFIX) and not Path(name_or_path).expanduser().exists():
        es = offdomain.load_offdomain(name_or_path[len(offdomain.PREFIX):], split, load_eval_set)
        return _first(es, limit)
    # "<name>-obs": the LoCoMo data set with its observations indexed as facts.
    observations = False
    if name_or_path.endswith(OBS_SUFFIX) and not Path(name_or_path).expanduser().exists():
        name_or_path, observations = name_or_path[:-len(OBS_SUFFIX)], True
    path = Path(name_or_path).expanduser()
    sample = name_or_path == SAMPLE and not path.exists()
    gate = name_or_path in GATE_SETS and not path.exists()
    if sample:
        path = sample_dir() / "scifact"
    elif gate:
        path = sample_dir().joinpath(*GATE_SETS[name_or_path])
    elif not path.exists():
        path = dataset_dir(name_or_path)
    if not path.exists():
        raise DatasetError(f"unknown data set {name_or_path!r}",
                           hint="use sample, scifact, locomo, a BEIR folder, a LoCoMo .json or a queries .jsonl "
                                "(`memo eval fetch` downloads the public ones)")
    if fileset.is_files_set(path):
        es = fileset.load_files_set(path, split)
    elif path.is_dir() and (path / codesearch.MANIFEST).exists() and (path / codesearch.LABELS).exists():
        es = codesearch.load_codesearch(path, split)
    elif path.is_dir() and (path / "queries.jsonl").exists():
        es = beir.load_beir(path, split)
    elif path.is_dir() and (conv := locomo.folder_json(path)) is not None:
        es = locomo.load_locomo(conv, split)
    elif path.suffix == ".json":
        es = locomo.load_locomo(path, split)
    elif path.suffix == ".jsonl":
        es = custom.load_custom(path, split)
    else:
        raise DatasetError(f"{path}: not a BEIR folder, LoCoMo JSON or queries JSONL")
    if sample:
        es = replace(es, name=SAMPLE)
    elif gate:
        es = replace(es, name=name_or_path)
    if observations:
        if es.name != "locomo":
            raise DatasetError(f"{name_or_path}{OBS_SUFFIX}: only LoCoMo has observations to index as facts")
        es = locomo.with_observations(es, Path(es.source))
    return _first(es, limit)


def _first(es: EvalSet, limit: int | None) -> EvalSet:
    if limit is not None and limit < len(es.queries):
        kept = es.queries[:limit]
        ids = {q.qid for q in kept}
        es = replace(es, queries=kept, qrels={k: v for k, v in es.qrels.items() if k in ids})
    return es
