"""memo.text.when: the stored form of an event date names the same moment as the input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from memo.retrieve.recency import parse_ts
from memo.text.when import stored_when


def test_forms():
    assert stored_when("2026-03-10") == stored_when("20260310") == stored_when("2026-W11-2") == "2026-03-10"
    assert stored_when("2026-03-10T23:30:00-05:00") == "2026-03-11T04:30:00.000000Z"
    assert stored_when("2023-05-08T13:56:00") == "2023-05-08T13:56:00.000000Z"      # no offset: UTC
    assert stored_when(" 2024-05-01T10:00:00Z ") == "2024-05-01T10:00:00.000000Z"
    assert stored_when(None) is None and stored_when("not a date") == "not a date"
    assert stored_when("0001-01-01T00:00:00+05:00") == "0001-01-01T00:00:00+05:00"  # before UTC's first moment


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
       st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_the_moment_is_kept_and_text_order_is_time_order(moment, offset_min):
    aware = moment.replace(tzinfo=timezone(timedelta(minutes=offset_min)))
    stored = stored_when(aware.isoformat())
    assert parse_ts(stored) == aware.astimezone(UTC) == parse_ts(aware.isoformat())
    later = stored_when((aware + timedelta(microseconds=1)).isoformat())
    assert later > stored
