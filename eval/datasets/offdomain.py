"""``offdomain:<queries>-on-<corpus>``: a data set's own queries plus another data set's
queries as **unanswerable** ones, over the first set's index (abstention measured).

``-d offdomain:scifact-on-locomo-obs`` = every query of ``locomo-obs``'s split (answerable
with their qrels, LoCoMo category 5 unanswerable as usual) plus SciFact's claims of the same
split marked ``unanswerable`` (category ``offdomain-scifact``), searched in LoCoMo's index.
One run then reports answered recall / nDCG (means over the in-domain answerable queries,
unchanged by the extra queries), abstention recall (the unanswerable queries that got zero
results) and precision (of the queries that got zero results, the unanswerable share),
overall and per category.

The mixed set keeps the corpus set's name, corpus, facts and unit, so it **reuses that
set's cached index and passage vectors**; its split is ``<split>-offdomain-<queries>``
(batch and run ids, the ``split`` column).  ``<split>`` applies to both sets (SciFact
train/test, LoCoMo train/dev/test(=all), codesearch train/test).  An off-domain query has
the id ``off-<queries>:<its id>``; in a set whose queries are scoped to a namespace (LoCoMo:
one conversation each) the off-domain queries are spread over the in-domain namespaces in
turn (query i -> the i-th namespace in sorted order, with that namespace's reference time),
so each is searched inside one conversation's index, as a LoCoMo question is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memo.errors import DatasetError
from memo_eval.datasets.base import EvalQuery, EvalSet

PREFIX = "offdomain:"
SEP = "-on-"


def parse(spec: str) -> tuple[str, str]:
    """``scifact-on-locomo-obs`` -> (``scifact``, ``locomo-obs``)."""
    src, sep, dst = spec.partition(SEP)
    if not sep or not src or not dst:
        raise DatasetError(f"offdomain:{spec}: expected offdomain:<queries>-on-<corpus>",
                           hint="e.g. offdomain:scifact-on-locomo-obs, offdomain:codesearch-on-scifact")
    return src, dst


def mix(base: EvalSet, other: EvalSet, source: str) -> EvalSet:
    """``base`` with ``other``'s queries added as unanswerable (see the module doc)."""
    spaces = sorted({q.namespace for q in base.queries if q.namespace})
    now_of: dict[str, str | None] = {}
    for q in base.queries:
        if q.namespace and q.namespace not in now_of:
            now_of[q.namespace] = q.now
    extra = []
    for i, q in enumerate(other.queries):
        ns = spaces[i % len(spaces)] if spaces else None
        extra.append(EvalQuery(qid=f"off-{source}:{q.qid}", text=q.text, namespace=ns,
                               category=f"offdomain-{source}", answerable=False,
                               now=now_of.get(ns) if ns else base.queries[0].now if base.queries else None))
    taken = {q.qid for q in base.queries}
    if taken & {q.qid for q in extra}:
        raise DatasetError("offdomain: query ids collide")
    notes = dict(base.notes)
    notes["offdomain"] = {"queries": source, "corpus": base.name, "in_domain": len(base.queries),
                          "offdomain": len(extra), "namespaces": len(spaces)}
    return replace(base, split=f"{base.split}-offdomain-{source}", queries=base.queries + tuple(extra),
                   notes=notes)


def load_offdomain(spec: str, split: str, load: Callable[[str, str], EvalSet]) -> EvalSet:
    src, dst = parse(spec)
    base = load(dst, split)
    if base.corpus is None:
        raise DatasetError(f"offdomain:{spec}: {dst!r} has no corpus of its own (a --db set)")
    other = load(src, split)
    return mix(base, other, src)
