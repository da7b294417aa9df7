"""A conversation's text (``memo add --kind conversation``, a file imported as one): front
matter is the record's title, date and tags, never turns; a line that is only a date, in
any form memo.text.when reads (ISO with an offset or ``UTC``, the month by name), dates the
turns below it, while a line of prose that holds a date stays text."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.ingest.files import iter_files
from memo.ingest.split import split_record
from memo.ingest.split_text import split_conversation
from memo.stored import RecordDraft
from memo.text.when import stored_when

CHAT = "---\ntitle: Call with Tom about the road trip\ndate: March 3, 2025\ntags: [tom, travel]\n---\n" \
       "Tom: I think we should leave on Friday.\nAna: Friday works, I can drive.\n"


def _turns(text: str, default: str | None = None) -> list[tuple[str | None, str | None, str]]:
    return [(p.speaker, p.event_at, p.text) for p in split_conversation(text, default_date=default)]


def test_front_matter_is_never_a_turn():
    assert _turns(CHAT, "2025-03-03") == [("Tom", "2025-03-03", "I think we should leave on Friday."),
                                          ("Ana", "2025-03-03", "Friday works, I can drive.")]


@pytest.mark.parametrize(("line", "event_at", "stored"), [
    ("[8 May 2023]", "2023-05-08", "2023-05-08"),                          # the form the docstring cites
    ("8 May 2023", "2023-05-08", "2023-05-08"),
    ("May 8, 2023", "2023-05-08", "2023-05-08"),
    ("## 8 Nov 2025", "2025-11-08", "2025-11-08"),
    ("### Nov 8th, 2025", "2025-11-08", "2025-11-08"),
    ("2025-11-20T09:00:00-05:00", "2025-11-20T09:00:00-05:00", "2025-11-20T14:00:00.000000Z"),
    ("[2025-11-20 09:00 +01:00]", "2025-11-20T09:00 +01:00", "2025-11-20T08:00:00.000000Z"),
    ("2023-05-08 14:00 UTC", "2023-05-08T14:00Z", "2023-05-08T14:00:00.000000Z"),
    ("## 8 May 2023 2:30 pm", "2023-05-08T14:30:00Z", "2023-05-08T14:30:00.000000Z"),
    ("May 8, 2023 09:00 -05:00", "2023-05-08T09:00:00-05:00", "2023-05-08T14:00:00.000000Z"),
    ("2023-05-08 9:00", "2023-05-08T09:00", "2023-05-08T09:00:00.000000Z"),
    # recognised before: the same date text as always (sections of stored chats unchanged)
    ("2023-05-08", "2023-05-08", "2023-05-08"),
    ("## 2023-05-08 14:00", "2023-05-08T14:00", "2023-05-08T14:00:00.000000Z"),
    ("[2023-05-08 14:00]", "2023-05-08T14:00", "2023-05-08T14:00:00.000000Z"),
    ("2023-05-08T14:00:00Z", "2023-05-08T14:00:00Z", "2023-05-08T14:00:00.000000Z"),
])
def test_a_line_that_is_only_a_date_dates_the_turns_below(line: str, event_at: str, stored: str):
    assert _turns(f"{line}\nTom: hi there\n") == [("Tom", event_at, "hi there")]
    assert stored_when(event_at) == stored


@pytest.mark.parametrize("line", ["We met on 8 May 2023", "8 May 2023 was the day we met", "20230508",
                                  "May 2023", "## Plans for 8 May 2023", "[see 2023-05-08 notes]",
                                  "2023-05-08 14:00 sharp", "February 30, 2024"])
def test_a_line_of_prose_is_never_a_date_line(line: str):
    assert _turns(f"{line}\nTom: hi there\n", "2020-01-01") == [(None, "2020-01-01", line),
                                                               ("Tom", "2020-01-01", "hi there")]


def test_a_turns_own_date_is_read_and_other_brackets_stay_words():
    text = "2023-05-08\n[8 May 2023] Ann: dated\n[2023-05-09 14:00] Bob: as written\n[laughs] Ann: ha\n"
    assert _turns(text) == [("Ann", "2023-05-08", "dated"), ("Bob", "2023-05-09 14:00", "as written"),
                            ("Ann", "2023-05-08", "[laughs] ha")]


def test_a_conversation_file_takes_its_front_matter_whatever_its_name(tmp_path: Path):
    for name in ("tom.md", "tom.txt"):
        (tmp_path / name).write_text(CHAT)
    items = list(iter_files(tmp_path.resolve(), RecordDraft(body="", namespace="ns"), kind_override="conversation"))
    for item in items:
        d = item.draft
        assert (d.title, d.event_at, d.tags) == ("Call with Tom about the road trip", "2025-03-03", ("tom", "travel"))
        assert [p.speaker for p in split_record(d)] == ["Tom", "Ana"]


def test_a_plain_text_doc_keeps_its_dashes_as_text(tmp_path: Path):
    """Only markdown and conversations read front matter: a .txt doc is split as before."""
    (tmp_path / "n.txt").write_text("---\ntitle: x\n---\nbody\n")
    (item,) = iter_files(tmp_path.resolve(), RecordDraft(body="", namespace="ns"))
    assert (item.draft.title, item.draft.tags) == ("n.txt", ())
