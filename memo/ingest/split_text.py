"""Plain text by paragraphs, and conversations by turn.

Plain text: a paragraph is a passage (blank line = break), section = the record title.
Conversations: one passage per turn, with its speaker and date.  The text form memo
accepts (``memo add --kind conversation``) is one turn per line, ``Speaker: words``;
a line that is only a date (``2023-05-08``, ``## 2023-05-08 14:00``, ``[8 May 2023]``)
dates the turns below it.  Lines that are not turns continue the previous turn.
"""

from __future__ import annotations

import re

from memo.ingest.windows import windowed
from memo.types import PassageDraft

_TURN = re.compile(r"^\s*(?:\[(?P<date>[^\]]+)\]\s*)?(?P<speaker>[^\s:][^:]{0,40}):\s+(?P<text>\S.*)$")
_DATE_LINE = re.compile(r"^\s*(?:#+\s*)?\[?(?P<date>\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?Z?)\]?\s*$")


def split_paragraphs(text: str, section: str = "") -> list[PassageDraft]:
    out: list[PassageDraft] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if para:
            out.extend(windowed(PassageDraft(text=para, section=section)))
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
