"""Weighted reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009; weighted as in
seed section 3): score(p) = sum over arms a that returned p of weight_a / (k + rank_a(p)).

Ranks are the arms' own 1-based ranks.  The sum runs in arm order, the same order ``why``
lists the contributions in, so explain reproduces the score exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.retrieve.types import ArmRun, Candidate, Evidence


def rrf(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int) -> list[Candidate]:
    votes: dict[int, dict[str, Evidence]] = {}
    for run in runs:
        w = weights.get(run.name, 0.0)
        for hit in run.hits:
            ev = Evidence(hit.rank, hit.raw, w / (k + hit.rank))
            arms = votes.get(hit.pk)
            if arms is None:
                votes[hit.pk] = {run.name: ev}
            else:
                arms[run.name] = ev
    out = []
    for pk, arms in votes.items():
        fused = 0.0
        for ev in arms.values():
            fused += ev.contribution
        out.append(Candidate(pk, arms, fused, 1.0, fused * 1.0))  # recency may lower it
    return out
