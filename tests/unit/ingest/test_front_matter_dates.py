"""A front matter date memo cannot read is a notice on the imported file, never dropped in
silence; a date with its month's name is read (memo.text.when.event_date)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.ingest.files import iter_files
from memo.stored import RecordDraft

T = RecordDraft(body="", namespace="ns")


def _item(tmp_path: Path, front: str, name: str = "n.md", template: RecordDraft = T):
    (tmp_path / name).write_text(f"---\ntitle: T\n{front}\n---\n# H\ntext\n")
    (item,) = iter_files(tmp_path.resolve(), template)
    return item


@pytest.mark.parametrize(("front", "stored"), [
    ("date: 2024-05-01", "2024-05-01"),
    ("date: 2024-05-01T14:30:00Z", "2024-05-01T14:30:00Z"),
    ("date: 2024-03-03 14:30:00 +0100", "2024-03-03 14:30:00 +0100"),   # Jekyll's form: ISO to Python
    ('date: "March 3, 2024"', "2024-03-03"),
    ("Date: 3 Mar 2024", "2024-03-03"),
])
def test_a_readable_date_is_the_event_date_without_notice(tmp_path: Path, front: str, stored: str):
    item = _item(tmp_path, front)
    assert item.draft.event_at == stored and item.notices == ()


@pytest.mark.parametrize(("front", "shown"), [
    ("date: someday", "'someday'"),
    ("date: 03/04/2024", "'03/04/2024'"),            # March or April: not guessed
    ("date: February 30, 2024", "'February 30, 2024'"),
    ("date: [2024-01-01, 2024-02-01]", "'2024-01-01, 2024-02-01'"),
])
def test_an_unreadable_date_is_a_notice_and_the_file_is_still_imported(tmp_path: Path, front: str, shown: str):
    item = _item(tmp_path, front)
    assert item.rejected is None and not item.ignored
    assert item.draft.event_at is None and item.draft.title == "T" and "text" in item.draft.body
    (notice,) = item.notices
    assert f"front matter 'date' value {shown} is not a date memo reads" in notice
    assert "imported without an event date" in notice and "ISO 8601 date or date-time" in notice


def test_no_notice_without_a_date_or_when_the_caller_gives_the_date(tmp_path: Path):
    assert _item(tmp_path, "date:").notices == ()                # a note template's empty key
    assert _item(tmp_path, "tags: a").notices == ()
    dated = _item(tmp_path, "date: someday", template=RecordDraft(body="", event_at="2020-01-01"))
    assert dated.notices == () and dated.draft.event_at == "2020-01-01"


def test_front_matter_dates_only_in_markdown(tmp_path: Path):
    item = _item(tmp_path, "date: someday", name="n.txt")
    assert item.notices == () and item.draft.event_at is None


def test_obsidian_dates_linked_or_created() -> None:
    """A date written as a link to its daily note, or only as ``created:``, dates the note
    (both were left undated; the unquoted link was misquoted in the notice as '[2024-03-05]')."""
    from memo.ingest.front_matter import read_front_matter

    for block in ("date: [[2024-03-05]]", 'date: "[[2024-03-05]]"', 'date: "[[2024-03-05|Tuesday]]"',
                  "created: 2024-03-05", "created: 2024-03-05\ndate: 2024-03-05"):
        fm = read_front_matter(f"---\n{block}\n---\ntext\n")
        assert (fm.event_at, fm.date_notice) == ("2024-03-05", None), block
    assert read_front_matter("---\ndate: 2024-01-01\ncreated: 2023-01-01\n---\nx\n").event_at == "2024-01-01"
    bad = read_front_matter("---\ncreated: someday\n---\nx\n")
    assert bad.event_at is None and bad.date_notice.startswith("front matter 'created' value 'someday'")
