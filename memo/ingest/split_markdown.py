"""Markdown: one passage per section, keyed by its heading path ("Install > Linux").

Headings inside fenced code blocks are code, not structure.  Text before the first
heading gets the document title (or "") as its section.  Setext headings (underlined
with === / ---) are recognised too.
"""

from __future__ import annotations

import re

from memo.ingest.windows import windowed
from memo.types import PassageDraft

_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")

HEADING_SEP = " > "


_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split a leading YAML front matter block (``---`` ... ``---``, as Obsidian, Jekyll and
    Hugo write) from the body.  Only flat ``key: value`` lines are read; without this the
    block would be indexed as text and its closing ``---`` would make a setext heading."""
    m = _FRONT.match(text)
    if not m:
        return {}, text
    meta: dict[str, str] = {}
    for line in (m.group(1) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-")):
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta, text[m.end():]


def looks_like_markdown(text: str) -> bool:
    return any(_ATX.match(line) for line in text.splitlines())


def _paragraph_split(lines: list[str]) -> list[str]:
    """Join lines into paragraphs (blank line = break); fenced blocks stay whole."""
    paras: list[str] = []
    buf: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not line.strip():
            if buf:
                paras.append("\n".join(buf).strip())
                buf = []
            continue
        buf.append(line)
    if buf:
        paras.append("\n".join(buf).strip())
    return [p for p in paras if p]


def split_markdown(text: str, title: str | None = None) -> list[PassageDraft]:
    _, text = front_matter(text)
    sections: list[tuple[str, list[str]]] = [(title or "", [])]
    path: list[tuple[int, str]] = []
    lines = text.splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        heading: tuple[int, str] | None = None
        if not in_fence:
            m = _ATX.match(line)
            if m:
                heading = (len(m.group(1)), m.group(2).strip())
            elif line.strip() and i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) \
                    and (not sections[-1][1] or not sections[-1][1][-1].strip()):
                heading = (1 if lines[i + 1].strip().startswith("=") else 2, line.strip())
                i += 1
        if heading is not None:
            level, name = heading
            path = [(lv, n) for lv, n in path if lv < level] + [(level, name)]
            sections.append((HEADING_SEP.join(n for _, n in path), []))
        else:
            sections[-1][1].append(line)
        i += 1
    out: list[PassageDraft] = []
    for section, body in sections:
        for para_group in _group(_paragraph_split(body)):
            out.extend(windowed(PassageDraft(text=para_group, section=section)))
    return out


def _group(paragraphs: list[str], max_words: int = 200) -> list[str]:
    """A section is one passage; only when it is long do we cut it, between paragraphs
    first (``windowed`` then cuts any paragraph that is itself too long)."""
    groups: list[str] = []
    count = 0
    for p in paragraphs:
        n = len(p.split())
        if groups and count + n <= max_words:
            groups[-1] += "\n\n" + p
            count += n
        else:
            groups.append(p)
            count = n
    return groups
