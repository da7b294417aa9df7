"""Score fusion over each arm's scores in units of its own spread (z-score fusion; the
"ZMUV" normalisation of Montague & Aslam, CIKM 2001, shifted so an arm's last hit is 0):

    sigma_a   = population standard deviation of arm a's raw scores (its own list)
    norm_a(p) = (raw_a(p) - min_a) / sigma_a
    score(p)  = sum over arms a that returned p of weight_a * norm_a(p)

Why not min-max: min-max gives every arm's best hit exactly 1.0, however weak the arm is
on this query.  Measured in units of the arm's own spread, a best hit that stands far
above the rest of its list (a confident arm: one passage holds the query's rare words, or
one vector is much closer than the others) counts for more than the best hit of a flat
list (a keyword arm matching only common words, as on code searched by its docstring's
words).  Equivalently, norm_a = minmax_a * (max_a - min_a) / sigma_a: min-max scaled by a
per-query arm confidence, the range of the arm's list in standard deviations.  It needs
no per-data-set constant.

An arm whose scores are all equal (including a single hit) has no spread: every hit gets
norm 1.0, as under min-max (a lone hit is evidence, not the bottom of a list).

Ties are ordered by the weighted RRF score, then by pk (``memo.retrieve.fusion``).
"""

from __future__ import annotations

import math

from memo.retrieve.types import ArmRun


def spread(raws: list[float]) -> float:
    """Population standard deviation (two passes: the mean, then the squared deviations).
    The deviations are squared in units of the largest one, so tiny raws (1e-161: their
    squares would be subnormal and lose every digit) and huge ones keep their precision."""
    n = len(raws)
    mean = math.fsum(raws) / n
    devs = [x - mean for x in raws]
    big = max(abs(d) for d in devs)
    if big == 0.0:
        return 0.0
    return big * math.sqrt(math.fsum((d / big) ** 2 for d in devs) / n)


def zscore_contributions(run: ArmRun, w: float, k: int = 0) -> list[float]:
    """weight * (raw - min) / sigma for each hit of one arm, in hit order (``k`` unused)."""
    raws = [hit.raw for hit in run.hits]
    if not raws:
        return []
    lo = min(raws)
    sigma = spread(raws)
    if sigma > 0 and max(raws) > lo:
        return [w * ((raw - lo) / sigma) for raw in raws]
    return [w * 1.0] * len(raws)
