"""memo.text.when.event_date: ISO forms as written, a date with its month's name as
YYYY-MM-DD, nothing guessed."""

from __future__ import annotations

import pytest

from memo.text.when import event_date, named_month_date


@pytest.mark.parametrize("text", ["March 3, 2024", "march 3 2024", "Mar. 3rd, 2024", "3 March 2024",
                                  "3rd MAR 2024", "  3  March,  2024 "])
def test_named_month_forms(text: str):
    assert event_date(text) == "2024-03-03"


def test_every_month_and_its_abbreviation():
    for n, name in enumerate(("January", "February", "March", "April", "May", "June", "July", "August",
                              "September", "October", "November", "December"), 1):
        assert named_month_date(f"{name} 1, 2024").month == named_month_date(f"1 {name[:3]} 2024").month == n
    assert event_date("Sept 9, 2024") == "2024-09-09"


@pytest.mark.parametrize("text", ["03/04/2024", "3.4.2024", "2024-3-3", "someday", "March 2024", "March 3",
                                  "February 30, 2024", "Marchy 3, 2024", "Sunday, March 3, 2024", "3 March 24", ""])
def test_anything_else_is_not_read(text: str):
    assert event_date(text) is None


def test_iso_forms_are_kept_as_written():
    for text in ("2024-05-01", "20240501", "2024-W18-3", "2024-05-01T14:30:00-05:00", "2024-05-01 14:30:00 +0100"):
        assert event_date(f" {text} ") == text


@pytest.mark.parametrize(("text", "read"), [
    ("2023-05-08 14:00 UTC", "2023-05-08 14:00Z"), ("2023-05-08T14:00 gmt", "2023-05-08T14:00Z"),
    ("2023-05-08 9:00", "2023-05-08 09:00"),
    ("8 May 2023 14:00", "2023-05-08T14:00:00Z"), ("May 8, 2023 2:30 pm", "2023-05-08T14:30:00Z"),
    ("May 8 2023 at 12:15am", "2023-05-08T00:15:00Z"), ("8 Nov 2025 09:00 -05:00", "2025-11-08T09:00:00-05:00"),
    ("8 May 2023 14:00:05 UTC", "2023-05-08T14:00:05Z"),
])
def test_times_with_a_zone_word_or_after_a_named_date(text: str, read: str):
    assert event_date(text) == read


@pytest.mark.parametrize("text", ["2023-05-08 UTC", "8 May 2023 UTC", "8 May 2023 25:00", "8 May 2023 14:00 pm",
                                  "March 3, 2024 soon", "the call was at 14:00 UTC", "8 May 2023 14:00 CEST"])
def test_a_time_memo_cannot_place_is_not_read(text: str):
    assert event_date(text) is None
