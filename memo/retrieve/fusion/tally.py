"""The part every fusion shares: one pass over the arms' hits that records each arm's
evidence per passage, sums the contributions in arm order (the order ``why`` lists them in,
so explain reproduces the fused score exactly) and sums the tiebreak the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import repeat

from memo.retrieve.types import ArmHit, ArmRun, Candidate, Evidence

# (one arm's run, its weight, k) -> one contribution per hit, in hit order
Contributions = Callable[[ArmRun, float, int], list[float]]

# tuple.__new__ straight: the NamedTuples' own constructors add a Python call per hit (eval
# replay fuses ~200 hits a search, thousands of searches a grid); with map() over columns
# the Evidence of a whole arm is built without a Python-level step per hit.
_new = tuple.__new__

# An arm's hits as columns (pks, ranks, raws, votes, pks unique?), for the last few hits
# tuples fused.  An eval grid fuses the same hits (the arm-hit cache's tuples) in run after
# run of a query, one query at a time, so a handful of entries serve it; each entry holds
# its tuple, so the id it is keyed by cannot be reused while the entry lives.
_COLUMNS: dict[int, tuple[tuple[ArmHit, ...], list[int], list[int], list[float], list[tuple], bool]] = {}
_COLUMNS_MAX = 32


def _columns(hits: tuple[ArmHit, ...]) -> tuple[tuple[ArmHit, ...], list[int], list[int], list[float], list[tuple], bool]:
    got = _COLUMNS.get(id(hits))
    if got is not None and got[0] is hits:
        return got
    pks = [h.pk for h in hits]
    got = (hits, pks, [h.rank for h in hits], [h.raw for h in hits], [h.votes for h in hits],
           len(set(pks)) == len(pks))
    if len(_COLUMNS) >= _COLUMNS_MAX:
        _COLUMNS.clear()
    _COLUMNS[id(hits)] = got
    return got


def tally(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int,
          score: Contributions, tiebreak: Contributions) -> list[Candidate]:
    """Unordered candidates, score = fused (stage 4's factors multiply it): ``fused`` sums
    ``score``'s contributions, ``tiebreak`` sums ``tiebreak``'s."""
    live = [run for run in runs if run.hits]
    columns = [_columns(run.hits) for run in live]
    if len({run.name for run in live}) < len(live) or not all(c[5] for c in columns):
        return _tally_rows(runs, weights, k, score, tiebreak)
    by_pk: dict[int, dict[str, Evidence]] = {}
    ties: dict[int, float] = {}
    fused: dict[int, float] = {}
    for run, (_, pks, ranks, raws, votes, _) in zip(live, columns, strict=True):
        name = run.name
        w = weights.get(name, 0.0)
        cs = score(run, w, k)
        evs = list(map(_new, repeat(Evidence), zip(ranks, raws, cs, votes, strict=True)))
        for pk, ev, c, t in zip(pks, evs, cs, tiebreak(run, w, k), strict=True):
            arms = by_pk.get(pk)
            if arms is None:
                by_pk[pk] = {name: ev}
                ties[pk] = t
                fused[pk] = 0.0 + c        # as a sum from 0.0 over the arms, in arm order
            else:
                arms[name] = ev
                ties[pk] += t
                fused[pk] += c
    return [_new(Candidate, (pk, arms, fused[pk], fused[pk], ties[pk], ())) for pk, arms in by_pk.items()]


def _tally_rows(runs: Sequence[ArmRun], weights: Mapping[str, float], k: int,
                score: Contributions, tiebreak: Contributions) -> list[Candidate]:
    """The same, hit by hit: for runs where a passage repeats within an arm or an arm
    repeats (its later evidence replaces the earlier, as in ``why``; the tiebreak adds
    every hit's share)."""
    by_pk: dict[int, dict[str, Evidence]] = {}
    ties: dict[int, float] = {}
    for run in runs:
        if not run.hits:
            continue
        name = run.name
        w = weights.get(name, 0.0)
        for hit, c, t in zip(run.hits, score(run, w, k), tiebreak(run, w, k), strict=True):
            pk = hit.pk
            arms = by_pk.get(pk)
            if arms is None:
                by_pk[pk] = {name: _new(Evidence, (hit.rank, hit.raw, c, hit.votes))}
                ties[pk] = t
            else:
                arms[name] = _new(Evidence, (hit.rank, hit.raw, c, hit.votes))
                ties[pk] += t
    out = []
    for pk, arms in by_pk.items():
        fused = 0.0
        for ev in arms.values():          # in arm order, as why lists them (not sum(): exactness)
            fused += ev.contribution
        out.append(_new(Candidate, (pk, arms, fused, fused, ties[pk], ())))
    return out
