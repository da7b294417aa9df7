"""Markdown: one passage per section, keyed by its heading path ("Install > Linux").

The text is parsed with markdown-it-py (``memo.ingest.markdown_parse``), not with regular
expressions: headings inside fenced code are code, setext headings count, and HTML
comments, ``<a id=...>`` anchors and link reference definitions are not passage text.
Text before the first heading gets the document title (or "") as its section.

A section is one passage; a long one is cut between top-level blocks (paragraphs, lists,
code fences) into groups of about ``MAX_WORDS`` words, and ``windowed`` cuts any block that
is itself too long.  A document with headings but no body at all (a one-line note such as
``## Decision: we use WAL mode``) gives one passage per heading: the heading is the content.
The split depends only on the text and title, so re-importing an unchanged file gives the
same passages (ids ``<record_id>:<ord>``).
"""

from __future__ import annotations

from memo.ingest.markdown_parse import HEADING_SEP, Block, front_matter, has_headings, parse_markdown
from memo.ingest.windows import MAX_WORDS, windowed
from memo.types import PassageDraft

__all__ = ["HEADING_SEP", "front_matter", "looks_like_markdown", "split_markdown"]


def looks_like_markdown(text: str) -> bool:
    """The text has at least one heading (what makes a note worth splitting by section)."""
    return has_headings(text)


def split_markdown(text: str, title: str | None = None) -> list[PassageDraft]:
    _, text = front_matter(text)
    blocks = parse_markdown(text)
    sections: list[tuple[str, list[str]]] = []
    empty: list[Block] = []           # headings with no body yet (alternative signatures)
    for k, b in enumerate(blocks):
        section = HEADING_SEP.join(b.path) if b.path else (title or "")
        if b.heading or not sections or sections[-1][0] != section:
            sections.append((section, []))
        if not b.heading:
            sections[-1][1].append(b.text)
            empty = []
            continue
        # A heading followed at once by a sibling heading (``### f(a)`` then ``### f(a, b)``
        # and one body, as API docs list overloads) is not lost: its text opens the
        # sibling's section.
        if empty and empty[-1].level == b.level:
            sections[-1][1].extend(e.text for e in empty)
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        empty = [*empty, b] if nxt is not None and nxt.heading and nxt.level == b.level else []
    out: list[PassageDraft] = []
    for section, body in sections:
        for group in _group(body):
            out.extend(windowed(PassageDraft(text=group, section=section)))
    if not out:     # headings only: each heading is the content
        out = [PassageDraft(text=b.text, section=HEADING_SEP.join(b.path)) for b in blocks if b.heading]
    return out


def _group(blocks: list[str], max_words: int = MAX_WORDS) -> list[str]:
    """A section is one passage; only when it is long do we cut it, between blocks first
    (``windowed`` then cuts any block that is itself too long)."""
    groups: list[str] = []
    count = 0
    for p in blocks:
        n = len(p.split())
        if groups and count + n <= max_words:
            groups[-1] += "\n\n" + p
            count += n
        else:
            groups.append(p)
            count = n
    return groups
