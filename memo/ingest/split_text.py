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
a line that is only a date (``2023-05-08``, ``## 2023-05-08 14:00``, ``[8 May 2023]``)
dates the turns below it.  Lines that are not turns continue the previous turn.
"""

from __future__ import annotations

import re

from memo.ingest.markdown_parse import Block
from memo.ingest.split_markdown import list_items, pack_blocks, text_budget
from memo.ingest.windows import windowed
from memo.stored import PassageDraft

_TURN = re.compile(r"^\s*(?:\[(?P<date>[^\]]+)\]\s*)?(?P<speaker>[^\s:][^:]{0,40}):\s+(?P<text>\S.*)$")
_DATE_LINE = re.compile(r"^\s*(?:#+\s*)?\[?(?P<date>\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?Z?)\]?\s*$")


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


def split_conversation(text: str, default_date: str | None = None) -> list[PassageDraft]:
    turns: list[dict[str, str | None]] = []
    date = default_date
    for line in text.splitlines():
        if not line.strip():
            continue
        dm = _DATE_LINE.match(line)
        if dm:
            date = dm.group("date").replace(" ", "T")
            continue
        tm = _TURN.match(line)
        if tm:
            turns.append({"speaker": tm.group("speaker").strip(), "text": tm.group("text").strip(),
                          "date": tm.group("date") or date})
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
