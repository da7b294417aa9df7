"""Weighted reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009; weighted as in
seed section 3): score(p) = sum over arms a that returned p of weight_a / (k + rank_a(p)).

Ranks are the arms' own 1-based ranks.  The sum runs in arm order, the same order ``why``
lists the contributions in, so explain reproduces the score exactly.

Ties.  With equal weights, keyword rank r and semantic rank r give the same score, and so
do (3, 5) and (5, 3): exact ties are common in the top 10.  RRF has thrown the scores away;
they are the natural arbiter, so equal RRF scores are ordered by the min-max fused score
(the registry in ``memo.retrieve.fusion`` pairs each fusion with the other as its
tiebreak), then by pk.  It never changes a score, only the order of equal ones.  Measured
against ordering ties by pk: docs/results-log.md "RRF ties", docs/eval.md.
"""

from __future__ import annotations

from memo.retrieve.types import ArmRun


def rrf_contributions(run: ArmRun, w: float, k: int) -> list[float]:
    """weight / (k + rank) for each hit of one arm, in hit order."""
    return [w / (k + hit.rank) for hit in run.hits]
