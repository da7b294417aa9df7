"""Stage 4's one interface: a rescorer multiplies some candidates' scores by a factor.

Recency (the seed's stage 4) and every extra factor (speaker, dates, heading, context) are
rescorers.  Each is one module with one value that has a ``name`` (also the factor's name in
``why``) and a ``rescore(cands, inp)`` that returns the factors it gives (pk -> ``Factor``)
and what the query named (``trace.rescore[name]``).  ``apply`` multiplies, appends the factor
to the candidate's ordered ``factors`` and re-sorts best first; the pipeline lists its
rescorers once (``memo.retrieve.pipeline.RESCORERS``).  A new rescorer = one new module plus
its profile keys (``memo.profile_keys``): why, the trace, the CLI line, the web UI and the
harness's Parquet traces iterate over ``Candidate.factors`` and never name one.

``final = fused x factor_1 x factor_2 x ...``, multiplied left to right in ``factors``'
order, so explain reproduces ``final`` exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Protocol

from memo.profile import Profile
from memo.retrieve.types import Candidate, Factor, Meta

__all__ = ["Factor", "RescoreInput", "Rescored", "Rescorer", "apply", "sort_best_first"]


@dataclass(frozen=True, slots=True)
class RescoreInput:
    """What every rescorer may read: the query, the candidates' record fields, the request's
    time and the profile (each reads its own section)."""

    query: str
    meta: Mapping[int, Meta]
    now: datetime
    profile: Profile


@dataclass(frozen=True, slots=True)
class Rescored:
    factors: Mapping[int, Factor]          # pk -> its factor (only candidates it changes)
    named: tuple[str, ...] = ()            # what the query named that earned them (trace)
    note: str | None = None                # for trace.notes: what the reader should know (none matched, ...)


class Rescorer(Protocol):
    name: str

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored: ...


NOTHING = Rescored({})


def apply(rescorer: Rescorer, cands: Sequence[Candidate],
          inp: RescoreInput) -> tuple[list[Candidate], Rescored]:
    """(candidates best first, the rescorer's answer: what the query named, its note).
    Input best first; re-sorted only when a factor was given."""
    out = rescorer.rescore(cands, inp)
    if not out.factors:
        return list(cands), out
    given = out.factors
    make = Candidate.__new__        # a third of NamedTuple._replace's cost (hot in eval replay)
    new = []
    for c in cands:
        f = given.get(c.pk)
        if f is not None:
            c = make(Candidate, c.pk, c.arms, c.fused, c.score * f.value, c.tiebreak, (*c.factors, f))
        new.append(c)
    sort_best_first(new)
    return new, out


def sort_best_first(cands: list[Candidate]) -> None:
    """The ranked list's order, in place: score desc; equal scores by tiebreak (higher
    first), then by pk.  Three C-level stable sorts instead of a key tuple per item."""
    cands.sort(key=itemgetter(0))
    cands.sort(key=itemgetter(4), reverse=True)
    cands.sort(key=itemgetter(3), reverse=True)


if Candidate._fields[:5] != ("pk", "arms", "fused", "score", "tiebreak"):   # apply builds by position
    raise ImportError("memo.retrieve.types.Candidate changed: update memo.retrieve.rescore")
