"""LoCoMo questions as a labelled query set over dialogue turns.

* Corpus: ``memo.ingest.locomo.iter_conversations`` (one namespace per conversation, one
  record per session, one passage per turn, turn id = passage ``ext_id``).
* Queries: every QA item, searched inside its own conversation's namespace, with the
  reference time ``now`` = the conversation's last session (questions come after it).
* Qrels: the ``evidence`` turn ids, as ``<namespace>#D<s>:<t>``.
* Category 5 (adversarial) questions are labelled unanswerable: memo should abstain.

The upstream evidence lists hold a few malformed ids (see datasets/locomo/SOURCE.md).  They
are repaired or dropped here and every action is counted in ``EvalSet.notes["evidence"]``:

* ``split``      - several ids joined in one string (``'D8:6; D9:17'``, ``'D9:1 D4:4'``):
  split on ``;``, ``,`` and whitespace (``memo.ingest.locomo_facts.normalise_evidence``, shared
  with the observations loaded as facts by ``locomo-obs``);
* ``zero_pad``   - ``'D30:05'`` -> ``'D30:5'``;
* ``extra_colon``- ``'D:11:26'`` -> ``'D11:26'``;
* ``dropped_bare``   - ``'D'`` (no turn at all);
* ``dropped_unknown``- an id that names no turn of that conversation (beyond the session
  length, e.g. ``D10:19`` in conv-42).
Questions left without any evidence (categories 1-4) are kept in the traces but have no
qrels, so trec_eval-style means skip them; their count is ``no_evidence``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo.ingest.locomo import iter_conversations, load_samples, sessions
from memo.ingest.locomo_facts import iter_observations, normalise_evidence
from memo_eval.datasets.base import OBS_SUFFIX, EvalQuery, EvalSet, file_sha256

NAMESPACE_PREFIX = "locomo"
UNANSWERABLE_CATEGORY = 5
# LoCoMo has no train/test split of its own: "test" and "all" both mean every question (the
# benchmark as published, what its reference figures and the regression gate measure), so
# neither is held out from anything.  "train" and "dev" halve it by conversation (first 5
# samples / last 5): tune on one half, report on the other (``HELD_OUT``, as the suite's
# choose = train / report = dev).
_SPLITS = {"test": None, "all": None, "train": slice(0, 5), "dev": slice(5, 10)}
# The split that holds none of a tuning split's questions: the other half of the conversations.
HELD_OUT = {"train": "dev", "dev": "train"}


def folder_json(folder: Path) -> Path | None:
    """The LoCoMo-format JSON of a folder: ``locomo*.json``, else its only ``*.json`` other
    than a ``manifest.json`` (``datasets/chats/chats.json``: ``-d chats``); None if neither."""
    named = sorted(folder.glob("locomo*.json"))
    if named:
        return named[0]
    others = [p for p in sorted(folder.glob("*.json")) if p.name != "manifest.json"]
    return others[0] if len(others) == 1 else None


def load_locomo(path: Path, split: str = "test") -> EvalSet:
    if split not in _SPLITS:
        raise DatasetError(f"LoCoMo has no split {split!r}", hint=f"use one of {', '.join(_SPLITS)}")
    samples = load_samples(path)
    chosen = samples[_SPLITS[split]] if _SPLITS[split] is not None else samples
    counts: Counter[str] = Counter()
    per_category: Counter[str] = Counter()
    queries: list[EvalQuery] = []
    qrels: dict[str, dict[str, int]] = {}
    for sample in chosen:
        sid = str(sample["sample_id"])
        namespace = f"{NAMESPACE_PREFIX}/{sid}"
        sess = sessions(sample["conversation"])
        known = {str(t.get("dia_id")) for _, turns, _ in sess for t in turns}
        last_date = max((d for _, _, d in sess if d), default=None)
        for i, qa in enumerate(sample.get("qa", [])):
            qid = f"{sid}/q{i:04d}"
            category = str(qa.get("category", ""))
            per_category[category] += 1
            counts["references"] += len(qa.get("evidence") or [])
            evidence = normalise_evidence(list(qa.get("evidence") or []), known, counts)
            answerable = category != str(UNANSWERABLE_CATEGORY)
            queries.append(EvalQuery(qid=qid, text=str(qa["question"]), namespace=namespace,
                                     category=category, answerable=answerable, now=last_date))
            if evidence:
                qrels[qid] = {f"{namespace}#{e}": 1 for e in evidence}
            elif answerable:
                counts["no_evidence"] += 1
    notes = {"evidence": dict(sorted(counts.items())), "categories": dict(sorted(per_category.items())),
             "samples": [str(s["sample_id"]) for s in chosen]}
    # LoCoMo itself is "locomo"; another set in its shape (datasets/chats) is named by its file
    return EvalSet(name="locomo" if path.stem.startswith("locomo") else path.stem, split=split, corpus_hash=file_sha256(path), unit="passage",
                   queries=tuple(queries), qrels=qrels,
                   corpus=partial(iter_conversations, path, NAMESPACE_PREFIX), source=str(path),
                   notes=notes, corpus_path=str(path), corpus_format="locomo")


def with_observations(es: EvalSet, path: Path) -> EvalSet:
    """The same queries and qrels, with each session's observations indexed as facts
    (``memo.ingest.locomo_facts``; evidence repaired and counted as for the questions:
    ``notes["observations"]``).  The name ``locomo-obs`` keys its own cached index."""
    counts: Counter[str] = Counter()
    n = sum(1 for _ in iter_observations(path, NAMESPACE_PREFIX, counts))
    notes = {**es.notes, "observations": {"facts": n, **dict(sorted(counts.items()))}}
    return replace(es, name=es.name + OBS_SUFFIX, notes=notes,
                   facts=partial(iter_observations, path, NAMESPACE_PREFIX))


def describe_fixes(notes: dict[str, Any]) -> str:
    ev = notes.get("evidence", {})
    keys = ("split", "zero_pad", "extra_colon", "dropped_bare", "dropped_unknown", "dropped_malformed",
            "no_evidence")
    return ", ".join(f"{k}={ev.get(k, 0)}" for k in keys)
