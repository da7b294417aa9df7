"""A file named by its date is dated by its name when nothing else dates it (a daily note
says nothing of its day but its name): it was dated by the import's time, so a search
for that day found nothing (memo.ingest.files.date_in_name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.ingest.files import date_in_name, iter_files
from memo.stored import RecordDraft


@pytest.mark.parametrize(("name", "when"), [
    ("2024-03-05.md", "2024-03-05"),              # Obsidian's daily note
    ("2024-03-05-launch.md", "2024-03-05"),       # Jekyll's post
    ("2024_03_05 standup.txt", "2024-03-05"),
    ("2024.03.05.md", "2024-03-05"),
    ("2024-02-30.md", None),                      # not a day
    ("20240305.md", None),                        # digits only: a number as often as a date
    ("2024-03-051.md", None),
    ("notes 2024-03-05.md", None),                # the date must start the name
    ("2.23.0.txt", None),
])
def test_the_date_a_name_starts_with(name: str, when: str | None) -> None:
    assert date_in_name(name) == when


def _items(root: Path) -> dict[str, object]:
    return {i.rel: i for i in iter_files(root.resolve(), RecordDraft(body=""))}


def test_a_daily_note_is_dated_by_its_name(tmp_path: Path) -> None:
    (tmp_path / "Daily").mkdir()
    (tmp_path / "Daily" / "2024-03-05.md").write_text("## Log\nDebugged the timezone bug.\n")
    (tmp_path / "2024-03-06.md").write_text("---\ndate: 2024-01-01\n---\nFront matter wins.\n")
    (tmp_path / "2024-03-07.py").write_text("def f():\n    return 1\n")
    items = _items(tmp_path)
    daily = items["Daily/2024-03-05.md"].draft
    assert daily.event_at == "2024-03-05" and daily.meta["event_at_source"] == "file name"
    assert items["2024-03-06.md"].draft.event_at == "2024-01-01"
    assert "event_at_source" not in items["2024-03-06.md"].draft.meta
    assert items["2024-03-07.py"].draft.event_at is None          # code is not dated by its name


def test_an_unreadable_front_matter_date_says_the_name_dates_the_file(tmp_path: Path) -> None:
    (tmp_path / "2024-03-14.md").write_text("---\ndate: 13/03/2024\n---\nA note.\n")
    item = _items(tmp_path)["2024-03-14.md"]
    assert item.draft.event_at == "2024-03-14"
    (notice,) = item.notices
    assert "'13/03/2024' is not a date memo reads, so the file is dated by its name (2024-03-14)" in notice
