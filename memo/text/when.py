"""The one stored form of an event date (records, passages, facts).

``--event-date``, JSONL ``event_date`` and front matter take any ISO-8601 form Python
parses: ``2026-03-10``, ``20260310``, ``2026-W11-2``, ``2026-03-10T23:30:00-05:00``.  The
date filters compare stored dates as text with bounds in one shape (``memo.retrieve.scope``),
so a value stored as typed sorted wrongly: ``20260310`` after ``2026-12-31``, a time with an
offset on the wrong side of midnight.  Stored: a date alone as ``YYYY-MM-DD``, a time as
its UTC moment ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (``recorded_at``'s shape; a time without
an offset is taken as UTC, as recency always read it).  The moment a date names is the
same before and after, so recency and the dates rescorer see no change.

Front matter also takes a date written with its month's name (``March 3, 2024``,
``3 Mar 2024``: ``event_date``), which people and some site generators write and which
reads one way only; a date of numbers alone in another order (``03/04/2024``: March or April?) is
never guessed.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
# English names and their abbreviations ("Sept" too), not strptime's %B: that one follows
# the process's locale, so the same file would import differently on another machine.
_MONTHS = {**{name: n for n, full in enumerate(_MONTH_NAMES, 1) for name in (full, full[:3])}, "sept": 9}
_NAMED = re.compile(r"(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)? (?P<m1>[a-z]+)"      # 3 March 2024
                    r"|(?P<m2>[a-z]+) (?P<d2>\d{1,2})(?:st|nd|rd|th)?) (?P<y>\d{4})")  # March 3 2024


def stamp(moment: datetime) -> str:
    """An aware UTC moment as stored.  isoformat, not strftime: strftime("%Y") writes year
    1 as "1", which sorts after "2024" as text."""
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def date_only(text: str) -> date | None:
    """The date of a date-only ISO form (2024-05-01, 20240501, 2024-W18-3), else None."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def named_month_date(text: str) -> date | None:
    """The date of "March 3, 2024", "Mar. 3rd 2024", "3 March 2024" (an English month name
    or its abbreviation, any case), else None."""
    words = " ".join(text.lower().replace(",", " ").replace(".", " ").split())
    m = _NAMED.fullmatch(words)
    month = _MONTHS.get(m.group("m1") or m.group("m2")) if m else None
    if m is None or month is None:
        return None
    try:
        return date(int(m.group("y")), month, int(m.group("d1") or m.group("d2")))
    except ValueError:              # February 30
        return None


def event_date(text: str) -> str | None:
    """``text`` as an event date the write paths take, or None when it is none: an ISO-8601
    form Python parses, as written (``stored_when`` gives it the stored form on write), or a
    date with its month's name as ``YYYY-MM-DD``."""
    s = text.strip()
    try:
        datetime.fromisoformat(s)   # what memo.ops.add checks
    except ValueError:
        day = named_month_date(s)
        return day.isoformat() if day else None
    return s


def stored_when(value: str | None) -> str | None:
    """``value`` in the stored form; None stays None, a text no ISO parser takes is kept as
    it is (the write paths refuse those for records and facts before this)."""
    if value is None:
        return None
    s = value.strip()
    day = date_only(s)
    if day is not None:
        return day.isoformat()
    try:
        moment = datetime.fromisoformat(s)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(UTC)
        except OverflowError:          # 0001-01-01T00:00+05:00: before UTC's first moment
            return value
    return stamp(moment)
