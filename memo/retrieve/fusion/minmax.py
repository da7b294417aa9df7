"""Score fusion over min-max normalised arm scores ("CombSUM" with weights; Fox & Shaw,
TREC-2 1994; min-max normalisation as in Lee, SIGIR 1997):

    norm_a(p) = (raw_a(p) - min_a) / (max_a - min_a)
    score(p)  = sum over arms a that returned p of weight_a * norm_a(p)

min/max run over the arm's own candidate list (its top fetch_depth, after scope).  An arm
whose scores are all equal (including a single hit) has no spread to normalise: every hit
gets norm 1.0 (ranx would give 0.0 through its 1e-9 floor; a lone hit is evidence, not
the worst of a list).

Ties (every arm's last hit normalises to 0.0, every lone hit to 1.0) are ordered by the
weighted RRF score, then by pk (the pairing lives in ``memo.retrieve.fusion``).
"""

from __future__ import annotations

from memo.retrieve.types import ArmRun


def minmax_contributions(run: ArmRun, w: float, k: int = 0) -> list[float]:
    """weight * norm for each hit of one arm, in hit order (``k`` unused: rank-free; the
    signature matches rrf's so the registry can pair them)."""
    raws = [hit.raw for hit in run.hits]
    if not raws:
        return []
    lo = min(raws)
    span = max(raws) - lo
    if span > 0:
        return [w * ((raw - lo) / span) for raw in raws]
    return [w * 1.0] * len(raws)
