"""The part every fusion shares: gather each arm's per-passage evidence and sum the
contributions in arm order (the order ``why`` lists them in, so explain reproduces the
fused score exactly)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memo.retrieve.types import Candidate, Evidence


def tally(votes: Iterable[tuple[int, str, Evidence]], tiebreak: Mapping[int, float]) -> list[Candidate]:
    """``votes``: (passage pk, arm name, evidence), arm by arm; ``tiebreak``: pk -> the key
    that orders equal scores.  Returns unordered candidates with recency factor 1.0 (the
    recency stage may lower it)."""
    by_pk: dict[int, dict[str, Evidence]] = {}
    for pk, arm, ev in votes:
        arms = by_pk.get(pk)
        if arms is None:
            by_pk[pk] = {arm: ev}
        else:
            arms[arm] = ev
    out = []
    for pk, arms in by_pk.items():
        fused = 0.0
        for ev in arms.values():
            fused += ev.contribution
        out.append(Candidate(pk, arms, fused, 1.0, fused * 1.0, tiebreak[pk]))
    return out
