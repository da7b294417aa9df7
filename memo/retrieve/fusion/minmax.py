"""Score fusion over min-max normalised arm scores ("CombSUM" with weights; Fox & Shaw,
TREC-2 1994; min-max normalisation as in Lee, SIGIR 1997):

    norm_a(p) = (raw_a(p) - min_a) / (max_a - min_a)
    score(p)  = sum over arms a that returned p of weight_a * norm_a(p)

min/max run over the arm's own candidate list (its top fetch_depth, after scope).  An arm
whose scores are all equal (including a single hit) has no spread to normalise: every hit
gets norm 1.0 (ranx would give 0.0 through its 1e-9 floor; a lone hit is evidence, not
the worst of a list).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from memo.retrieve.fusion.tally import tally
from memo.retrieve.types import ArmRun, Candidate, Evidence


def minmax(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int = 60) -> list[Candidate]:
    """``k`` only orders ties: equal scores (every arm's last hit normalises to 0.0, every
    lone hit to 1.0) are ordered by their weighted RRF score, then by pk."""
    return tally((vote for run in runs if run.hits for vote in normalised_votes(run, weights.get(run.name, 0.0))),
                 rrf_scores(runs, weights, k))


def normalised_votes(run: ArmRun, w: float) -> Iterator[tuple[int, str, Evidence]]:
    raws = [h.raw for h in run.hits]
    lo, hi = min(raws), max(raws)
    span = hi - lo
    for hit in run.hits:
        norm = (hit.raw - lo) / span if span > 0 else 1.0
        yield hit.pk, run.name, Evidence(hit.rank, hit.raw, w * norm)


def minmax_scores(runs: Sequence[ArmRun], weights: Mapping[str, float]) -> dict[int, float]:
    """pk -> min-max fused score (rrf's tiebreak), summed in arm order as ``minmax`` sums it,
    without building Evidence tuples (this runs on every rrf search)."""
    out: dict[int, float] = {}
    get = out.get
    for run in runs:
        if not run.hits:
            continue
        w = weights.get(run.name, 0.0)
        raws = [h.raw for h in run.hits]
        lo = min(raws)
        span = max(raws) - lo
        for hit in run.hits:
            out[hit.pk] = get(hit.pk, 0.0) + w * ((hit.raw - lo) / span if span > 0 else 1.0)
    return out


def rrf_scores(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int) -> dict[int, float]:
    """pk -> weighted RRF score (minmax's tiebreak)."""
    out: dict[int, float] = {}
    get = out.get
    for run in runs:
        w = weights.get(run.name, 0.0)
        for hit in run.hits:
            out[hit.pk] = get(hit.pk, 0.0) + w / (k + hit.rank)
    return out
