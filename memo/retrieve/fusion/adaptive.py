"""Per-query arm weights (issue 30, extra ``adaptive``; profile ``fusion.keyword_full``).

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


def adapt(weights: Mapping[str, float], keyword_coverage: float | None, keyword_full: float) -> ArmWeights:
    """The query's arm weights.  ``keyword_coverage`` None: the keyword arm returned nothing
    (or did not run), so there is nothing to scale."""
    if keyword_full <= 0.0 or keyword_coverage is None:
        return fixed(weights)
    m = keyword_multiplier(keyword_coverage, keyword_full)
    out = dict(weights)
    out["keyword"] = weights.get("keyword", 0.0) * m
    return ArmWeights(out, {"keyword": m}, {"keyword_coverage": keyword_coverage})
