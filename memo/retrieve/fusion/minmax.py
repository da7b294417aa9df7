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

from collections.abc import Mapping, Sequence

from memo.retrieve.types import ArmRun, Candidate, Evidence


def minmax(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int = 0) -> list[Candidate]:
    del k  # rank-free: the signature matches rrf for the name switch
    votes: dict[int, dict[str, Evidence]] = {}
    for run in runs:
        if not run.hits:
            continue
        w = weights.get(run.name, 0.0)
        raws = [h.raw for h in run.hits]
        lo, hi = min(raws), max(raws)
        span = hi - lo
        for hit in run.hits:
            norm = (hit.raw - lo) / span if span > 0 else 1.0
            ev = Evidence(hit.rank, hit.raw, w * norm)
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
