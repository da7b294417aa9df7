"""Stage 4c, dates: a passage dated inside a period the query names scores ``x (1 + boost)``.

Why: "what did Melanie paint in July 2023?", "what did we decide on 13 October 2023?" -
the date is the question's sharpest filter, yet a conversation turn or a note rarely
repeats its own date, so neither arm can use it.  The passage's date is the one recency
uses (``Meta.when``: the passage's event_at, else its record's, else recorded_at); only
kinds whose dates mean something are considered: ``recency.aging_kinds`` (note,
conversation), the same definition recency uses.  Documents and code are never boosted.

Rules (pure; the periods come from ``memo.text.periods.query_periods``):

* a named day is widened by ``dates.window_days`` on both sides (a session or a note is
  often written a day or two after the event it tells);
* a passage inside any named period gets ``factor = 1 + dates.boost``, others 1.0;
* ``boost`` 0, or a query naming no date, returns the list untouched.

``score = ((fused * recency) * speaker) * date``; ``why`` carries every factor, so explain
still reproduces ``final`` exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.retrieve.recency import parse_ts, sort_best_first
from memo.retrieve.types import Candidate, Meta
from memo.text.periods import Period, in_period, query_periods


def apply_dated(cands: Sequence[Candidate], meta: Mapping[int, Meta], query: str, *, boost: float,
                window_days: int, kinds: tuple[str, ...]) -> tuple[list[Candidate], tuple[Period, ...]]:
    """(candidates best first, the named periods).  Input best first; the output is
    re-sorted only when a factor changed."""
    if boost <= 0.0:
        return list(cands), ()
    periods = query_periods(query, window_days)
    if not periods:
        return list(cands), ()
    factor = 1.0 + boost
    inside: dict[str | None, bool] = {}          # many passages share a date (one record)
    out, changed = [], False
    for c in cands:
        m = meta.get(c.pk)
        if m is not None and m.kind in kinds:
            hit = inside.get(m.when)
            if hit is None:
                hit = inside[m.when] = passage_period(m.when, periods) is not None
            if hit:
                c = c._replace(score=c.score * factor, dated=factor)
                changed = True
        out.append(c)
    if changed:
        sort_best_first(out)
    return out, periods


def passage_period(when: str | None, periods: Sequence[Period]) -> str | None:
    """The label of the first period ``when`` falls in (``why.period``), else None; the
    date is read as recency reads it (``parse_ts``)."""
    moment = parse_ts(when)
    if moment is None:
        return None
    d = moment.date()
    return next((p.label for p in periods if in_period(d, p)), None)
