"""The part every fusion shares: one pass over the arms' hits that records each arm's
evidence per passage, sums the contributions in arm order (the order ``why`` lists them in,
so explain reproduces the fused score exactly) and sums the tiebreak the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memo.retrieve.types import ArmRun, Candidate, Evidence

# (one arm's run, its weight, k) -> one contribution per hit, in hit order
Contributions = Callable[[ArmRun, float, int], list[float]]


def tally(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int,
          score: Contributions, tiebreak: Contributions) -> list[Candidate]:
    """Unordered candidates, score = fused (stage 4's factors multiply it): ``fused`` sums
    ``score``'s contributions, ``tiebreak`` sums ``tiebreak``'s."""
    by_pk: dict[int, dict[str, Evidence]] = {}
    ties: dict[int, float] = {}
    # tuple.__new__ straight: the NamedTuples' own constructors add a Python call per hit
    # (eval replay fuses ~200 hits a search, thousands of searches a grid).
    make = tuple.__new__
    for run in runs:
        if not run.hits:
            continue
        name = run.name
        w = weights.get(name, 0.0)
        for hit, c, t in zip(run.hits, score(run, w, k), tiebreak(run, w, k), strict=True):
            pk = hit.pk
            arms = by_pk.get(pk)
            if arms is None:
                by_pk[pk] = {name: make(Evidence, (hit.rank, hit.raw, c, hit.votes))}
                ties[pk] = t
            else:
                arms[name] = make(Evidence, (hit.rank, hit.raw, c, hit.votes))
                ties[pk] += t
    out = []
    for pk, arms in by_pk.items():
        fused = 0.0
        for ev in arms.values():          # in arm order, as why lists them (not sum(): exactness)
            fused += ev.contribution
        out.append(make(Candidate, (pk, arms, fused, fused, ties[pk], ())))
    return out
