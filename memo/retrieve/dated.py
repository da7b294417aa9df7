"""Stage 4c, dates: a passage dated inside a period the query names scores ``x (1 + boost)``.

Why: "what did Melanie paint in July 2023?", "what did we decide on 13 October 2023?" -
the date is the question's sharpest filter, yet a conversation turn or a note rarely
repeats its own date, so neither arm can use it.  The passage's date is the one recency
uses (``Meta.when``: the passage's event_at, else its record's, else recorded_at); only
kinds whose dates mean something are considered: ``recency.aging_kinds`` (note,
conversation), the same definition recency uses, and a passage of another kind that has an
event date of its own (``Meta.dated``: a meeting note or a daily note imported from a
markdown folder is a ``doc`` with a front matter date or a dated file name).  Undated
documents and code are never boosted.

A candidate lifted here has its date as evidence: abstention's rule 1 keeps it however weak
its similarity (``memo.retrieve.abstention``): "what did I do on March 5 2024?" is answered
by that day's notes, whatever they say.

Rules (pure; the periods come from ``memo.text.periods.query_periods``):

* a named day is widened by ``dates.window_days`` on both sides (a session or a note is
  often written a day or two after the event it tells);
* a passage inside any named period gets ``factor = 1 + dates.boost``, others 1.0;
* ``boost`` 0, or a query naming no date, returns the list untouched;
* when the query names a period and no dated candidate is in it, ``trace.notes`` says the
  results come from other dates (the boost had nothing to lift).

``why.factors`` carries the factor with the period's label ("2023-07", "2023-10-13", "*-06").
"""

from __future__ import annotations

from collections.abc import Sequence

from memo.retrieve.recency import parse_ts
from memo.retrieve.rescore import NOTHING, Rescored, RescoreInput
from memo.retrieve.types import Candidate, Factor
from memo.text.periods import Period, in_period, query_periods


class Dates:
    """Stage 4c: ``dates.boost``, ``dates.window_days``; the kinds are ``recency.aging_kinds``."""

    name = "dates"

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored:
        cfg = inp.profile.dates
        if cfg.boost <= 0.0:
            return NOTHING
        periods = query_periods(inp.query, cfg.window_days)
        if not periods:
            return NOTHING
        kinds = inp.profile.recency.aging_kinds
        value = 1.0 + cfg.boost
        label_of: dict[str | None, Factor | None] = {}     # many passages share a date (one record)
        given: dict[int, Factor] = {}
        dated = 0
        for c in cands:
            m = inp.meta.get(c.pk)
            if m is None or (m.kind not in kinds and not m.dated):
                continue
            dated += 1
            if m.when in label_of:
                f = label_of[m.when]
            else:
                label = passage_period(m.when, periods)
                f = label_of[m.when] = None if label is None else Factor(self.name, value, label)
            if f is not None:
                given[c.pk] = f
        labels = tuple(p.label for p in periods)
        note = None
        if dated and not given:
            # "What did Caroline do in May 2023?" over turns of July only: the results come
            # from other dates, and nothing said so.
            note = (f"the query names {', '.join(labels)}; none of the {dated} dated candidates "
                    "is dated then: the results come from other dates")
        return Rescored(given, labels, note)


RESCORER = Dates()


def passage_period(when: str | None, periods: Sequence[Period]) -> str | None:
    """The label of the first period ``when`` falls in (the factor's label), else None; the
    date is read as recency reads it (``parse_ts``)."""
    moment = parse_ts(when)
    if moment is None:
        return None
    d = moment.date()
    return next((p.label for p in periods if in_period(d, p)), None)
