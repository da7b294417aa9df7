"""Stage 4, recency: for kinds that age (note, conversation by default),

    factor = floor + (1 - floor) * 0.5 ** (age_days / half_life_days)
    score  = fused * factor

with age from the passage's event_at, else the record's event_at, else recorded_at,
relative to the request's ``now``.  Other kinds (doc, code) get factor 1.0: versioned
documents and code do not age (seed section 4).  A date in the future counts as age 0;
an unparseable date leaves the factor at 1.0.  Returns candidates best first (ties: pk).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from operator import itemgetter

from memo.retrieve.types import Candidate, Meta


def parse_ts(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def age_days(when: str | None, now: datetime) -> float | None:
    moment = parse_ts(when)
    if moment is None:
        return None
    return max(0.0, (now - moment).total_seconds() / 86400.0)


def recency_factor(age: float | None, floor: float, half_life_days: float) -> float:
    if age is None:
        return 1.0
    return floor + (1.0 - floor) * 0.5 ** (age / half_life_days)


def apply_recency(cands: Sequence[Candidate], meta: Mapping[int, Meta], *, floor: float,
                  half_life_days: float, aging_kinds: tuple[str, ...], now: datetime) -> list[Candidate]:
    out = []
    factors: dict[str | None, float] = {}   # many passages share a date (one record)
    for c in cands:
        m = meta.get(c.pk)
        if m is not None and m.kind in aging_kinds:
            factor = factors.get(m.when)
            if factor is None:
                factor = factors[m.when] = recency_factor(age_days(m.when, now), floor, half_life_days)
            c = Candidate(c.pk, c.arms, c.fused, factor, c.fused * factor, c.tiebreak)
        else:
            # Fusion already set factor 1.0 and score = fused * 1.0: reuse the tuple.
            c = c if c.factor == 1.0 else Candidate(c.pk, c.arms, c.fused, 1.0, c.fused * 1.0, c.tiebreak)
        out.append(c)
    sort_best_first(out)
    return out


def sort_best_first(cands: list[Candidate]) -> None:
    """The ranked list's order, in place (recency, speaker and dates all re-sort by it):
    score desc; equal scores by tiebreak (higher first), then by pk.  Three C-level stable
    sorts instead of a key tuple per item."""
    cands.sort(key=itemgetter(0))
    cands.sort(key=itemgetter(5), reverse=True)
    cands.sort(key=itemgetter(4), reverse=True)
