"""Weighted reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009; weighted as in
seed section 3): score(p) = sum over arms a that returned p of weight_a / (k + rank_a(p)).

Ranks are the arms' own 1-based ranks.  The sum runs in arm order, the same order ``why``
lists the contributions in, so explain reproduces the score exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.retrieve.fusion.tally import tally
from memo.retrieve.types import ArmRun, Candidate, Evidence


def rrf(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int) -> list[Candidate]:
    return tally((hit.pk, run.name, Evidence(hit.rank, hit.raw, weights.get(run.name, 0.0) / (k + hit.rank)))
                 for run in runs for hit in run.hits)
