"""Per-query arm weights (issue 30, extras ``adaptive`` and ``code_queries``; profile
``fusion.keyword_full`` and ``fusion.keyword_full_code``).

Fixed weights cannot serve both code searched by a question (the keyword arm matches a few
common words of it: keyword 0.15 nDCG@10 on codesearch-nl against semantic 0.32) and
SciFact's claims, whose rare words the right abstract holds (keyword 0.69, semantic 0.63).
The search already measures which case a query is: the keyword arm's **coverage**, the idf
share of the query's terms held by the best of its hits (``memo.retrieve.evidence``, the
measure abstention rule 2 reads).  A keyword list whose best hit holds most of the query's
information is evidence; one whose best hit holds a sliver of it (the query's rare words are
not in the corpus, or not together) is noise that z-score fusion would still add in units
of its own spread.  So the keyword arm's weight is scaled by

    multiplier = min(1, coverage / keyword_full)        (keyword_full 0: off, multiplier 1)

and every other arm keeps its profile weight.  One constant: the coverage from which the
keyword arm is trusted in full (chosen on the train splits: docs/eval.md "Adaptive fusion").

Code is where that trust is misplaced most: a question in words ("check if a file exists")
meets a function body in identifiers, so the words the keyword arm matches are the
question's common ones, while the semantic arm reads across the two vocabularies (on both
code train sets the semantic arm beats the keyword arm, and a higher ``keyword_full``
raised both).  Which corpus a query lands in is evidence the search has: the **code share**,
the share of the semantic arm's hits whose record is of kind ``code``.  With the extra
``code_queries`` on (``keyword_full_code`` > 0) the coverage the keyword arm needs is the
blend

    full = keyword_full x (1 - code_share) + keyword_full_code x code_share

so a query answered by code passages asks more of its keyword hits, one answered by notes,
conversations or docs is weighed as before, and a mixed knowledge base sits in between.

Pure: the pipeline measures the coverage (one batched FTS read, inside the search's
snapshot) and passes it in; the weights and the evidence go to ``why.fusion`` and
``trace.fusion``, and every arm contribution in ``why.arms`` is computed with them, so
explain still reproduces ``final`` exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ArmWeights:
    """The weights one query's fusion used, and what set them."""

    weights: dict[str, float]                 # arm -> weight used (profile weight x multiplier)
    multipliers: dict[str, float] = field(default_factory=dict)   # arms whose weight moved: arm -> multiplier
    evidence: dict[str, float] = field(default_factory=dict)      # the measures read ("keyword_coverage")

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {"weights": dict(self.weights), "multipliers": dict(self.multipliers),
                "evidence": dict(self.evidence)}


def fixed(weights: Mapping[str, float]) -> ArmWeights:
    """The profile's weights unchanged (the extra off, or nothing measured)."""
    return ArmWeights(dict(weights))


def keyword_multiplier(coverage: float, keyword_full: float) -> float:
    """min(1, coverage / keyword_full); 1 when ``keyword_full`` is 0 (off)."""
    if keyword_full <= 0.0:
        return 1.0
    return min(1.0, max(0.0, coverage) / keyword_full)


def full_for(keyword_full: float, keyword_full_code: float, code_share: float | None) -> float:
    """The coverage from which this query's keyword arm is trusted in full: ``keyword_full``,
    blended towards ``keyword_full_code`` by the query's code share (``keyword_full_code``
    0 or no share measured: ``keyword_full`` unchanged)."""
    if keyword_full_code <= 0.0 or code_share is None:
        return keyword_full
    s = min(1.0, max(0.0, code_share))
    return keyword_full * (1.0 - s) + keyword_full_code * s


def adapt(weights: Mapping[str, float], keyword_coverage: float | None, keyword_full: float,
          keyword_full_code: float = 0.0, code_share: float | None = None) -> ArmWeights:
    """The query's arm weights.  ``keyword_coverage`` None: the keyword arm returned nothing
    (or did not run), so there is nothing to scale.  ``code_share``: the share of the
    semantic arm's hits that are code (None: not measured, the extra code_queries off)."""
    full = full_for(keyword_full, keyword_full_code, code_share)
    if full <= 0.0 or keyword_coverage is None:
        return fixed(weights)
    m = keyword_multiplier(keyword_coverage, full)
    out = dict(weights)
    out["keyword"] = weights.get("keyword", 0.0) * m
    evidence = {"keyword_coverage": keyword_coverage}
    if code_share is not None and keyword_full_code > 0.0:
        evidence["code_share"] = code_share
    return ArmWeights(out, {"keyword": m}, evidence)
