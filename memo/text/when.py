"""The one stored form of an event date (records, passages, facts).

``--event-date``, JSONL ``event_date`` and front matter take any ISO-8601 form Python
parses: ``2026-03-10``, ``20260310``, ``2026-W11-2``, ``2026-03-10T23:30:00-05:00``.  The
date filters compare stored dates as text with bounds in one shape (``memo.retrieve.scope``),
so a value stored as typed sorted wrongly: ``20260310`` after ``2026-12-31``, a time with an
offset on the wrong side of midnight.  Stored: a date alone as ``YYYY-MM-DD``, a time as
its UTC moment ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (``recorded_at``'s shape; a time without
an offset is taken as UTC, as recency always read it).  The moment a date names is the
same before and after, so recency and the dates rescorer see no change.

Front matter and a conversation's date lines (``memo.ingest.split_text``) also take a date
written with its month's name (``March 3, 2024``, ``3 Mar 2024``, with a time after it:
``8 May 2023 2:30 pm``, ``May 8, 2023 14:00 UTC``) and an ISO date-time whose zone is
written ``UTC`` or ``GMT`` (``2023-05-08 14:00 UTC``): ``event_date``.  People and some
site generators write these, and they read one way only; a date of numbers alone in
another order (``03/04/2024``: March or April?) is never guessed.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, date, datetime

from memo.errors import ValidationError

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
# English names and their abbreviations ("Sept" too), not strptime's %B: that one follows
# the process's locale, so the same file would import differently on another machine.
_MONTHS = {**{name: n for n, full in enumerate(_MONTH_NAMES, 1) for name in (full, full[:3])}, "sept": 9}
_NAMED = re.compile(r"(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)? (?P<m1>[a-z]+)"      # 3 March 2024
                    r"|(?P<m2>[a-z]+) (?P<d2>\d{1,2})(?:st|nd|rd|th)?) (?P<y>\d{4})")  # March 3 2024
# A time after a named-month date ("at 2:30 pm", "14:00:05 UTC", "09:00 -05:00"), matched
# on the words as named_month_date folds them (lower case, no commas or dots).
_CLOCK = re.compile(r"(?:at )?(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?(?: ?(?P<ampm>am|pm))?"
                    r"(?: ?(?P<zone>z|utc|gmt|[+-]\d{2}:?\d{2}))?")
# An ISO date-time's zone written as a word: "2023-05-08 14:00 UTC" is "2023-05-08 14:00Z".
_ZONE_WORD = re.compile(r"(?<=\d)\s*(?:UTC|GMT)\Z", re.IGNORECASE)
# An ISO date-time with a one-digit hour ("2023-05-08 9:00"), which fromisoformat refuses.
_SHORT_HOUR = re.compile(r"(\d{4}-\d{2}-\d{2}[ T])(\d:)")


def stamp(moment: datetime) -> str:
    """An aware UTC moment as stored.  isoformat, not strftime: strftime("%Y") writes year
    1 as "1", which sorts after "2024" as text."""
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


# A month or a year, ISO-8601's reduced precision ("2025-11", "2025"): a span, not a day.
_PERIOD = re.compile(r"(?P<y>\d{4})(?:-(?P<m>\d{2}))?")


def period(text: str) -> tuple[date, date] | None:
    """The first and last day of a month (``2025-11``) or a year (``2025``), else None.  The
    date filters take these as spans (``--from 2025-11 --to 2025-11`` is that month); an
    event date must name a day or a moment, so ``check_event_date`` refuses them with a
    hint rather than guess which day."""
    m = _PERIOD.fullmatch(text.strip())
    if m is None:
        return None
    year, month = int(m.group("y")), m.group("m")
    if month is None:
        return (date(year, 1, 1), date(year, 12, 31)) if year >= 1 else None
    mo = int(month)
    if not (1 <= mo <= 12 and year >= 1):
        return None
    return date(year, mo, 1), date(year, mo, monthrange(year, mo)[1])


def check_event_date(value: str) -> None:
    """Refuse an event date no ISO parser takes (the one check of records' and facts'
    write paths), saying what to give instead."""
    try:
        datetime.fromisoformat(value)
        return
    except ValueError:
        pass
    span = period(value)
    if span is not None:
        raise ValidationError(f"date {value!r} names a {'month' if '-' in value.strip() else 'year'}, "
                              "not a day: an event date is a day or a moment",
                              hint=f"give the day, e.g. {span[0].isoformat()} (the date filters do take "
                                   f"{value.strip()} as a span)")
    raise ValidationError(f"date {value!r} is not an ISO-8601 date or date-time",
                          hint="use e.g. 2024-05-01 or 2024-05-01T14:30:00Z")


def date_only(text: str) -> date | None:
    """The date of a date-only ISO form (2024-05-01, 20240501, 2024-W18-3), else None."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _folded(text: str) -> str:
    return " ".join(text.lower().replace(",", " ").replace(".", " ").split())


def _named_day(m: re.Match[str]) -> date | None:
    month = _MONTHS.get(m.group("m1") or m.group("m2"))
    if month is None:
        return None
    try:
        return date(int(m.group("y")), month, int(m.group("d1") or m.group("d2")))
    except ValueError:              # February 30
        return None


def named_month_date(text: str) -> date | None:
    """The date of "March 3, 2024", "Mar. 3rd 2024", "3 March 2024" (an English month name
    or its abbreviation, any case), else None."""
    m = _NAMED.fullmatch(_folded(text))
    return _named_day(m) if m else None


def _named_moment(text: str) -> str | None:
    """A named-month date followed by a time ("8 May 2023 2:30 pm", "May 8, 2023 at 14:00
    UTC") as an ISO date-time (UTC when no offset is written, as ``stored_when`` reads a
    time without one), else None."""
    words = _folded(text)
    m = _NAMED.match(words)
    rest = words[m.end():].strip() if m else ""
    clock = _CLOCK.fullmatch(rest) if rest else None
    day = _named_day(m) if m and clock else None
    if day is None or clock is None:
        return None
    hour, minute, second = int(clock.group("h")), int(clock.group("mi")), int(clock.group("s") or 0)
    if clock.group("ampm"):
        if not 1 <= hour <= 12:     # "14:00 pm" is no time
            return None
        hour = hour % 12 + (12 if clock.group("ampm") == "pm" else 0)
    zone = clock.group("zone") or "z"
    zone = "Z" if zone in ("z", "utc", "gmt") else zone
    iso = f"{day.isoformat()}T{hour:02d}:{minute:02d}:{second:02d}{zone}"
    try:
        datetime.fromisoformat(iso)  # 25:00, 10:61, an offset of +99:00
    except ValueError:
        return None
    return iso


def _iso(text: str) -> bool:
    try:
        datetime.fromisoformat(text)   # what memo.ops.add checks
    except ValueError:
        return False
    return True


def event_date(text: str) -> str | None:
    """``text`` as an event date the write paths take, or None when it is none: an ISO-8601
    form Python parses, as written (``stored_when`` gives it the stored form on write), the
    same with its zone written ``UTC`` or ``GMT`` (as ``Z``) or a one-digit hour (``9:00``
    as ``09:00``), or a date with its month's
    name as ``YYYY-MM-DD`` (with a time after it: an ISO date-time)."""
    s = text.strip()
    if _iso(s):
        return s
    fixed = _ZONE_WORD.sub("Z", _SHORT_HOUR.sub(r"\g<1>0\2", s, count=1))
    if fixed != s and _iso(fixed):
        return fixed
    day = named_month_date(s)
    return day.isoformat() if day else _named_moment(s)


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
