"""Plain text by paragraphs, and conversations by turn.

Plain text: a paragraph is a passage (blank line = break), section = the record title.
A paragraph that is a list (two or more lines starting, at the same least indentation,
with ``*``, ``-``, ``+``, ``o``, ``1.`` or ``a)``: a Debian changelog entry, a NEWS
file's items) gives one passage per item, as a markdown list does
(``memo.ingest.split_markdown.pack_blocks``), and its lines before the first item are a
passage of their own (or open the first item's, when short and ending in ``:``).  A
paragraph or item longer than the model's window is cut between sentences, lines or
words so that every passage fits it (``memo.ingest.budget``).
Conversations: one passage per turn, with its speaker and date.  The text form memo
accepts (``memo add --kind conversation``) is one turn per line, ``Speaker: words``;
a line that is only a date, bare, bracketed or as a heading (``2023-05-08``,
``## 2023-05-08 14:00``, ``[8 May 2023]``, ``2025-11-20T09:00:00-05:00``,
``2023-05-08 14:00 UTC``, ``## Nov 8, 2025``), dates the turns below it, and a turn may
carry its own (``[2023-05-08 14:00] Ann: hi``).  A date is what
``memo.text.when.event_date`` reads, ISO 8601 written with its dashes or with the month's
name: a line of digits alone (``20230508``) is a number, not a date.  Lines that are not
turns continue the previous turn; so does a line of prose with a colon, whose words before it
are no speaker's name (``_speakers``).  Front matter at the top (``---`` ... ``---``: the
record's title, date and tags, ``memo.ingest.front_matter``) is never a turn.
"""

from __future__ import annotations

import re

from memo.ingest.markdown_parse import Block, front_matter
from memo.ingest.split_markdown import list_items, pack_blocks, text_budget
from memo.ingest.windows import windowed
from memo.stored import PassageDraft
from memo.text.when import event_date

_TURN = re.compile(r"^\s*(?:\[(?P<date>[^\]]+)\]\s*)?(?P<speaker>[^\s:][^:]{0,40}):\s+(?P<text>\S.*)$")
# A line that may be only a date: bare, in brackets or as a heading; what is inside must
# then be a date (``_line_date``), so a line of prose never is one.
_DATE_LINE = re.compile(r"^\s*(?:#+\s*)?(?:\[\s*(?P<bracketed>[^\[\]]{1,80}?)\s*\]|(?P<date>[^\[\]#\s][^\[\]]{0,79}?))\s*$")
# A year, and ISO 8601 with its dashes or a date with letters in it (a month's name):
# event_date also reads 20230508 and 2023W191, which on a line of their own are numbers
# more often than dates.  Most lines (turns, prose) fail this before event_date is asked.
_DATE_SHAPE = re.compile(r"(?=.*\d{4})(?:\d{4}-\d{2}-\d{2}|.*[^\W\d_]{3})")


# A plain-text list item's first line: bullet, number or letter, then a space.
_PLAIN_ITEM = re.compile(r"((?:> ?)*)([ \t]*)(?:[-*+\u2022o]|\d{1,3}[.)]|[a-z][.)])(?:\s|$)")


def _plain_blocks(para: str) -> list[Block]:
    """A paragraph as blocks: a list (with its lead-in lines as a paragraph before it)
    when two or more of its lines start an item at the least indentation, else one
    paragraph."""
    items = list_items(para, _PLAIN_ITEM)
    lead = "" if _PLAIN_ITEM.match(items[0]) else items.pop(0)
    if len(items) < 2:
        return [Block((), para.strip())]
    out = [Block((), lead.strip())] if lead.strip() else []
    return [*out, Block((), "\n".join(items), kind="list")]


def split_paragraphs(text: str, section: str = "") -> list[PassageDraft]:
    stored, budget = text_budget(section)
    out: list[PassageDraft] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\r\n").rstrip()
        if para.strip():
            out.extend(PassageDraft(text=t, section=stored)
                       for t in pack_blocks(_plain_blocks(para), budget, _PLAIN_ITEM))
    return out


def _written_date(text: str) -> str | None:
    """The date ``text`` is, as ``event_date`` gives it (an ISO 8601 text, as written when
    it is one: ``stored_when`` gives it the stored UTC form on write), or None."""
    return event_date(text) if _DATE_SHAPE.match(text) else None


def _line_date(text: str) -> str | None:
    """A date line's date: ``_written_date`` with its first space a ``T``, what date lines
    always gave (so the sections of conversations stored before stay the same)."""
    when = _written_date(text)
    return when.replace(" ", "T", 1) if when else None


def _speakers(lines: list[str]) -> set[str]:
    """The labels before a ``:`` that are speakers: one used on two lines or more, or used
    once and short and name-like (one word, or up to three words each capitalised: "Ann",
    "user", "Dr. Jane Smith").  A line of prose with a colon ("The plan was simple: go to
    Paris", "Note to self: call Bob") continues the turn above it: its words before the
    colon were taken for a speaker."""
    counts: dict[str, int] = {}
    for line in lines:
        tm = _TURN.match(line)
        if tm:
            label = tm.group("speaker").strip()
            counts[label] = counts.get(label, 0) + 1
    out = set()
    for label, n in counts.items():
        words = label.split()
        if n >= 2 or len(words) == 1 or (len(words) <= 3 and all(w[:1].isupper() for w in words)):
            out.add(label)
    return out


def split_conversation(text: str, default_date: str | None = None) -> list[PassageDraft]:
    # The front matter's fields are the record's (memo.ingest.front_matter), never turns.
    _, text = front_matter(text)
    turns: list[dict[str, str | None]] = []
    date = default_date
    lines = text.splitlines()
    speakers = _speakers(lines)
    for line in lines:
        if not line.strip():
            continue
        dm = _DATE_LINE.match(line)
        when = _line_date(dm.group("bracketed") or dm.group("date")) if dm else None
        if when:
            date = when
            continue
        tm = _TURN.match(line)
        if tm and tm.group("speaker").strip() in speakers:
            said, own = tm.group("text").strip(), tm.group("date")
            when = _written_date(own) if own else None
            if own and when is None:    # "[laughs] Ann: ...": words, not the turn's date
                said = f"[{own}] {said}"
            turns.append({"speaker": tm.group("speaker").strip(), "text": said, "date": when or date})
        elif turns:
            turns[-1]["text"] = f"{turns[-1]['text']}\n{line.strip()}"
        else:
            turns.append({"speaker": None, "text": line.strip(), "date": date})
    out: list[PassageDraft] = []
    for t in turns:
        speaker, when = t["speaker"], t["date"]
        section = " @ ".join(x for x in (speaker, when) if x)
        out.extend(windowed(PassageDraft(text=str(t["text"]), section=section, speaker=speaker,
                                         event_at=when)))
    return out
