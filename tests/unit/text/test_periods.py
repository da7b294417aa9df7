"""Dates a query names (memo/text/periods.py)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.text.periods import in_period, query_periods
from tests.fast_examples import examples


@pytest.mark.parametrize(("query", "labels"), [
    ("What painting did Melanie show to Caroline on October 13, 2023?", ["2023-10-13"]),
    ("What did Gina find for her clothing store on 1 February, 2023?", ["2023-02-01"]),
    ("the party on the 13th of October, 2023", ["2023-10-13"]),
    ("notes from the 2024-03-05 meeting", ["2024-03-05"]),
    ("What did Mel and her kids paint in July 2023?", ["2023-07"]),
    ("what happened in Oct 2023", ["2023-10"]),
    ("When did Melanie go camping in June?", ["*-06"]),
    ("what did we decide in may", ["*-05"]),
    ("during August", ["*-08"]),
    ("How many times has Melanie gone to the beach in 2023?", ["2023"]),
    ("between June and July 2023", ["2023-07", "*-06"]),
    # not dates
    ("May I ask about the 2023 budget", []),        # "May" a verb, "2023" content
    ("March on", []),
    ("August Rush is a film", []),
    ("Jan and Dec met", []),                         # abbreviations only with a year
    ("deadline 2024-02-30", []),                     # no such day
    ("February 30, 2023", []),
    ("", []),
    # a month or year that is a bound is not a period
    ("what happened before June", []),
    ("notes since 2023", []),
    ("the week before August 3, 2023", ["2023-08-03"]),       # a day stays: see the module
    ("until the 13th of October, 2023", ["2023-10-13"]),
    ("in July 2023 and before August 2023", ["2023-07"]),
])
def test_query_periods(query, labels):
    assert [p.label for p in query_periods(query)] == labels


def test_a_day_is_widened_by_the_window():
    (p,) = query_periods("on October 13, 2023", window_days=3)
    assert (p.first, p.last) == (date(2023, 10, 10), date(2023, 10, 16))
    assert in_period(date(2023, 10, 16), p) and not in_period(date(2023, 10, 17), p)


def test_month_and_year_ranges():
    (feb,) = query_periods("in February 2024")
    assert (feb.first, feb.last) == (date(2024, 2, 1), date(2024, 2, 29))     # leap year
    (june,) = query_periods("in June")
    assert in_period(date(2019, 6, 30), june) and not in_period(date(2019, 7, 1), june)
    (y,) = query_periods("throughout 2022")
    assert in_period(date(2022, 12, 31), y) and not in_period(date(2023, 1, 1), y)


@settings(max_examples=examples(500), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 -,.JanuaryFebMchOctoberinMay2023th")), max_size=60)
       | st.text(max_size=60))
def test_any_text_gives_valid_periods_and_never_raises(text):
    for p in query_periods(text, window_days=3):
        assert (p.first is None) == (p.month != 0)
        assert p.first is None or p.first <= p.last
