"""A month or a year in the date filters is a span; as an event date it is refused with a
hint.  A tester's agent sent ``date_from: "2025-11"`` and ``event_at: "2026-04"`` over MCP:
both were refused as "not ISO-8601" although ISO-8601 writes a month that way and the docs
promised "any ISO-8601 form"."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memo.errors import ValidationError
from memo.retrieve.scope import _date_bound
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.text.when import check_event_date, period


def test_a_month_and_a_year_are_spans():
    assert period("2025-11") == (date(2025, 11, 1), date(2025, 11, 30))
    assert period("2024-02") == (date(2024, 2, 1), date(2024, 2, 29))
    assert period(" 2025 ") == (date(2025, 1, 1), date(2025, 12, 31))
    assert period("9999-12") == (date(9999, 12, 1), date(9999, 12, 31))
    assert all(period(t) is None for t in ("2025-13", "2025-00", "0000", "20251", "2025-11-01", "May 2025"))


@given(st.integers(1, 9999), st.integers(1, 12))
def test_every_month_runs_from_its_first_to_its_last_day(year, month):
    first, last = period(f"{year:04d}-{month:02d}")
    assert first == date(year, month, 1) and last.month == month and (last.toordinal() + 1 == date(
        year + (month == 12), month % 12 + 1, 1).toordinal() if year < 9999 or month < 12 else last.day == 31)


def test_filter_bounds_of_a_month():
    assert _date_bound("2025-11", end=False, field="from") == "2025-11-01"
    assert _date_bound("2025-11", end=True, field="to") == "2025-11-30T23:59:59.999999Z"


def test_an_event_date_must_name_a_day():
    check_event_date("2026-04-01")
    with pytest.raises(ValidationError, match="names a month") as e:
        check_event_date("2026-04")
    assert "2026-04-01" in e.value.hint
    with pytest.raises(ValidationError, match="not an ISO-8601 date"):
        check_event_date("next Tuesday")


def test_search_by_month(tmp_path):
    from memo.retrieve import SearchRequest, search
    from memo.types import Scope
    conn = open_db(tmp_path / "m.db")
    with write_tx(conn):
        for rid, when in (("oct", "2025-10-31"), ("nov", "2025-11-30"), ("dec", "2025-12-01")):
            text = f"Dinner with Tom in Brooklyn ({rid})"
            insert_record(conn, RecordDraft(body=text, id=rid, event_at=when), (PassageDraft(text=text),))
    got = search(conn, SearchRequest(query="dinner Tom", mode="keyword",
                                     scope=Scope(date_from="2025-11", date_to="2025-11")))
    assert [r.record_id for r in got.results] == ["nov"]
