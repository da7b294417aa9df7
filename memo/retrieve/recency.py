"""Stage 4, recency (a rescorer, ``memo.retrieve.rescore``): for kinds that age (note,
conversation by default),

    factor = floor + (1 - floor) * 0.5 ** (age_days / half_life_days)
    score  = fused * factor

with age from the passage's event_at, else the record's event_at, else recorded_at,
relative to the request's ``now``.  Other kinds (doc, code) get factor 1.0: versioned
documents and code do not age (seed section 4).  A date in the future counts as age 0;
an unparseable date gives no factor (1.0).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache

from memo.retrieve.rescore import Rescored, RescoreInput
from memo.retrieve.types import Candidate, Factor


@lru_cache(maxsize=65536)
def parse_ts(text: str | None) -> datetime | None:
    """A stored ISO date as an aware datetime (UTC when naive); None when absent or not a
    date.  Cached: results + why and recency ask it for every dated candidate, and eval
    replay asks the same dates in every run of a grid (``now`` differs per query, so the
    age itself is not worth caching)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def age_days(when: str | None, now: datetime) -> float | None:
    """Days from ``when`` to ``now`` (0 when later; None when undated)."""
    moment = parse_ts(when)
    if moment is None:
        return None
    return max(0.0, (now - moment).total_seconds() / 86400.0)


def recency_factor(age: float | None, floor: float, half_life_days: float) -> float:
    if age is None:
        return 1.0
    return floor + (1.0 - floor) * 0.5 ** (age / half_life_days)


class Recency:
    """Stage 4's seed rescorer: ``recency.floor``, ``recency.half_life_days``,
    ``recency.aging_kinds``.  A passage of a kind that ages, with a date, gets its factor
    (1.0 when dated now or later); other passages get none (1.0)."""

    name = "recency"

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored:
        cfg = inp.profile.recency
        meta, kinds = inp.meta, cfg.aging_kinds
        given: dict[int, Factor] = {}
        by_date: dict[str | None, Factor | None] = {}   # many passages share a date (one record)
        for c in cands:
            m = meta.get(c.pk)
            if m is None or m.kind not in kinds:
                continue
            if m.when in by_date:
                f = by_date[m.when]
            else:
                age = age_days(m.when, inp.now)
                f = by_date[m.when] = None if age is None else Factor(
                    self.name, recency_factor(age, cfg.floor, cfg.half_life_days), f"{age:.1f} days old")
            if f is not None:
                given[c.pk] = f
        return Rescored(given)


RESCORER = Recency()
