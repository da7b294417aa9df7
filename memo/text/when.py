"""The one stored form of an event date (records, passages, facts).

``--event-date``, JSONL ``event_date`` and front matter take any ISO-8601 form Python
parses: ``2026-03-10``, ``20260310``, ``2026-W11-2``, ``2026-03-10T23:30:00-05:00``.  The
date filters compare stored dates as text with bounds in one shape (``memo.retrieve.scope``),
so a value stored as typed sorted wrongly: ``20260310`` after ``2026-12-31``, a time with an
offset on the wrong side of midnight.  Stored: a date alone as ``YYYY-MM-DD``, a time as
its UTC moment ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (``recorded_at``'s shape; a time without
an offset is taken as UTC, as recency always read it).  The moment a date names is the
same before and after, so recency and the dates rescorer see no change.
"""

from __future__ import annotations

from datetime import UTC, date, datetime


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
