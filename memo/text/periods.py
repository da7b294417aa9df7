"""Dates a query names, as calendar periods (for stage 4c, ``memo.retrieve.dated``).

A question about a memory often says when: "what did Melanie paint in July 2023?", "what
did we decide on 13 October 2023?", "how many times did she go to the beach in 2023?".
The arms cannot use it (a session's turns rarely repeat their own date), so the pipeline
reads the period here and favours passages dated inside it.

Recognised (English month names, case-insensitive unless noted):

=========================================  ===============================================
query text                                 period
=========================================  ===============================================
``October 13, 2023``, ``13 October 2023``, one day, widened by the caller's window
``13th of October, 2023``, ``2023-10-13``
``October 2023``, ``Oct 2023``             that month
``in October``, ``October``                that month of any year
``in 2023`` (after in / during /           that year
throughout / of / for)
=========================================  ===============================================

Guards against words that only look like dates: "may", "march" and "august" alone count
only after a preposition ("in May"; "May I", "August Rush" are not dates); abbreviated
months ("Jan", "Dec": names too) only with a year; a bare year needs a preposition ("in
2023": "the 2023 budget" is content, not a date); a day must exist (no February 30).
A month or year that is a bound ("before June", "since 2023") is not read: boosting it
would favour the wrong side; a day that is one stays ("the week before August 3, 2023":
what was written around that day tells what happened just before it).  Relative dates ("last
week", "yesterday") are not read either: they need the speaker's "now",
which a turn does not carry.  Pure and small (its cost: docs/results-log.md "Query
folding, date periods, the query cap").
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import date, timedelta
from typing import NamedTuple

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_MONTH_NO = {m: i for i, m in enumerate(_MONTHS, 1)} | {m[:3]: i for i, m in enumerate(_MONTHS, 1)} | {"sept": 9}
_AMBIGUOUS = {"may", "march", "august"}   # words too: a date only capitalised or after a preposition
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_PREP = r"(?:in|during|throughout|of|for)"
# "before June", "since 2023": a bound, not the period itself; such a month or year is
# not read (boosting it would favour the wrong side).  A day stays ("the week before
# August 3, 2023"): what was written around that day tells what happened just before it.
_BOUND = re.compile(r"\b(?:before|after|since|until|till|by|prior\s+to|earlier\s+than|later\s+than)\s+(?:the\s+)?$",
                    re.IGNORECASE)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"

_MDY = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
_DMY = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MY = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_FULL_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_M = re.compile(rf"(?:\b({_PREP})\s+)?\b{_FULL_MONTH}(?!\w)", re.IGNORECASE)   # "Jan", "Dec": names too
_Y = re.compile(rf"\b{_PREP}\s+(?:the\s+year\s+)?{_YEAR}\b", re.IGNORECASE)


class Period(NamedTuple):
    """Inclusive calendar range; ``first is None``: a month of any year (``month`` set)."""

    label: str                  # "2023-10-13", "2023-10", "2023", "*-10"
    first: date | None
    last: date | None
    month: int = 0              # any-year month: 1-12


def query_periods(query: str, window_days: int = 0) -> tuple[Period, ...]:
    """The periods ``query`` names (most specific form wins where forms overlap: a full
    date is not also read as its month and year).  ``window_days`` widens a named day on
    both sides."""
    out: list[Period] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in taken)

    def add(m: re.Match[str], period: Period | None) -> None:
        taken.append((m.start(), m.end()))
        if period is None or period in out:
            return
        is_day = period.first is not None and period.label.count("-") == 2
        if is_day or not _BOUND.search(query, 0, m.start()):
            out.append(period)

    for m in _MDY.finditer(query):
        add(m, _day(int(m[3]), _MONTH_NO[m[1].lower()], int(m[2]), window_days))
    for m in _DMY.finditer(query):
        if free(m):
            add(m, _day(int(m[3]), _MONTH_NO[m[2].lower()], int(m[1]), window_days))
    for m in _ISO.finditer(query):
        if free(m):
            add(m, _day(int(m[1]), int(m[2]), int(m[3]), window_days))
    for m in _MY.finditer(query):
        if free(m):
            year, month = int(m[2]), _MONTH_NO[m[1].lower()]
            add(m, Period(f"{year}-{month:02d}", date(year, month, 1), date(year, month, monthrange(year, month)[1])))
    for m in _M.finditer(query):
        if not free(m):
            continue
        word = m[2]
        if word.lower() in _AMBIGUOUS and m[1] is None:
            continue        # "May I ...", "March on", "August Rush": a date only after a preposition
        month = _MONTH_NO[word.lower()]
        add(m, Period(f"*-{month:02d}", None, None, month))
    for m in _Y.finditer(query):
        if free(m):
            year = int(m[1])
            add(m, Period(str(year), date(year, 1, 1), date(year, 12, 31)))
    return tuple(out)


def _day(year: int, month: int, day: int, window_days: int) -> Period | None:
    try:
        d = date(year, month, day)
    except ValueError:          # February 30: not a date
        return None
    w = timedelta(days=window_days)
    return Period(d.isoformat(), d - w, d + w)


def in_period(when: date, period: Period) -> bool:
    if period.first is None:
        return when.month == period.month
    return period.first <= when <= period.last
