"""A record's fields from its text's front matter: the title, date and tags that a leading
``---`` block (as Obsidian, Jekyll and Hugo write) gives it.

One reading for every way a text comes in: a file import (``memo.ingest.files``: markdown
files, and any file imported as a conversation) and ``memo add`` (``memo.ops.add``).  The
block is parsed by ``memo.ingest.markdown_parse.front_matter`` and never indexed as text:
the splitters drop it (``split_markdown``, ``split_conversation``).

* ``title``: the record's title, unless the caller gave one;
* ``date`` (else ``created``, as Obsidian writes it): the event date
  (``memo.text.when.event_date``: ISO 8601, or the month by name; a link to a daily note,
  ``"[[2024-03-05]]"``, is its date), unless the caller gave one; a date memo cannot read is a notice for the caller's
  report, not an error: the text is stored, without an event date;
* ``tags``: a list or words, after the caller's tags (a leading ``#`` dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memo.ingest.markdown_parse import front_matter
from memo.stored import RecordDraft
from memo.text.tags import tag_form
from memo.text.when import event_date


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """What a text's front matter gives its record (empty when it has none)."""

    title: str | None = None
    tags: tuple[str, ...] = ()
    event_at: str | None = None
    date_notice: str | None = None    # the 'date' memo could not read, said for the report


def read_front_matter(text: str, stored_as: str = "imported", dated_by: str | None = None) -> FrontMatter:
    """The record fields ``text``'s front matter gives; ``stored_as`` is the verb the
    notice of an unreadable date uses ("the file was imported without an event date");
    ``dated_by``: what dates the text instead ("its name (2024-03-14)"), for that notice."""
    meta, _ = front_matter(text)
    if not meta:
        return FrontMatter()
    title = meta.get("title")
    tags = meta.get("tags")
    if isinstance(tags, str):
        tags = [t for t in tags.replace(",", " ").split() if t]
    key = "date" if meta.get("date") else "created"    # Obsidian's notes often carry only when they were created
    value = _linked(meta.get(key))
    when = event_date(value) if isinstance(value, str) and value else None
    notice = _date_notice(value, stored_as, key, dated_by) if value and when is None else None  # "date:" alone: no date
    return FrontMatter(title=title if isinstance(title, str) and title else None,
                       tags=tuple(dict.fromkeys(tag_form(str(t)) for t in tags or () if tag_form(str(t)))),
                       event_at=when, date_notice=notice)


def with_front_matter(draft: RecordDraft, fm: FrontMatter | None = None, stored_as: str = "imported",
                      dated_by: str | None = None) -> tuple[RecordDraft, tuple[str, ...]]:
    """``draft`` with its body's front matter applied (``fm``, else read from the body):
    the caller's title and date win, its tags come first.  Returns the notices for the
    report (none when the caller gave the date: the front matter's is not used)."""
    fm = fm if fm is not None else read_front_matter(draft.body, stored_as, dated_by)
    fields: dict[str, object] = {}
    if fm.title and not draft.title:
        fields["title"] = fm.title
    if fm.tags:
        fields["tags"] = tuple(dict.fromkeys([*draft.tags, *fm.tags]))
    if draft.event_at:
        return replace(draft, **fields), ()  # type: ignore[arg-type]
    if fm.event_at:
        fields["event_at"] = fm.event_at
    return replace(draft, **fields), (fm.date_notice,) if fm.date_notice else ()  # type: ignore[arg-type]


def _linked(value: object) -> object:
    """A date written as a link to its daily note (``date: "[[2024-03-05]]"``; unquoted, YAML
    reads ``[[2024-03-05]]`` as a list holding ``'[2024-03-05]'``) as the date it links to."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
    if isinstance(value, str):
        stripped = value.strip()
        while stripped.startswith("[") and stripped.endswith("]"):
            stripped = stripped[1:-1].strip()
        return stripped.split("|", 1)[0].strip()       # [[2024-03-05|Tuesday]]
    return value


def _date_notice(value: str | list[str], stored_as: str, key: str = "date", dated_by: str | None = None) -> str:
    """What the report says of a front matter date memo cannot read."""
    shown = ", ".join(value) if isinstance(value, list) else value
    what = "file was imported" if stored_as == "imported" else f"text was {stored_as}"
    outcome = f"the file is dated by {dated_by}" if dated_by else f"the {what} without an event date"
    return (f"front matter {key!r} value {shown[:80]!r} is not a date memo reads, so {outcome}; write an ISO 8601 date or date-time (2024-03-03, 2024-03-03T14:30:00Z) "
            "or the month by name (March 3, 2024 or 3 March 2024)")
