"""Markdown: one passage per section, keyed by its heading path ("Install > Linux").

The text is parsed with markdown-it-py (``memo.ingest.markdown_parse``), not with regular
expressions: headings inside fenced code are code, setext headings count, and HTML
comments, ``<a id=...>`` anchors and link reference definitions are not passage text.
Text before the first heading gets the document title (or "") as its section.

A section is one passage; a long one is cut between top-level blocks (paragraphs, lists,
code fences) into passages of at most ``MAX_TOKENS`` tokens with the section line, what
the embedding model reads.  A block that is itself too long is cut by its kind, keeping
its lines: a list between its items, code and tables between lines (a cut inside a code
fence closes it and re-opens it with its language), a paragraph between sentences; its
first pieces fill the passage its lead-in sits in, and no passage is a stub of fewer than
``MIN_TOKENS`` tokens (it joins its neighbour).  A document with headings but no body at
all (a one-line note such as ``## Decision: we use WAL mode``) gives one passage per
heading: the heading is the content.  The split depends only on the text and title, so
re-importing an unchanged file gives the same passages (ids ``<record_id>:<ord>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memo.ingest.markdown_parse import HEADING_SEP, Block, front_matter, has_headings, parse_markdown
from memo.text.tokens import count_tokens
from memo.types import PassageDraft

__all__ = ["HEADING_SEP", "front_matter", "looks_like_markdown", "split_markdown"]

# A passage is embedded as its section line and its text (memo.embed.model.passage_text),
# and the model reads 256 word pieces (all-MiniLM-L6-v2; ``count_tokens`` is within ~10%
# of its WordPiece count): a longer passage would be embedded only in part.
MAX_TOKENS = 256
MIN_TOKENS = 60     # a shorter piece of a long section joins its neighbour (~40 words)


def looks_like_markdown(text: str) -> bool:
    """The text has at least one heading (what makes a note worth splitting by section)."""
    return has_headings(text)


def split_markdown(text: str, title: str | None = None) -> list[PassageDraft]:
    _, text = front_matter(text)
    blocks = parse_markdown(text)
    sections: list[tuple[str, list[Block]]] = []
    empty: list[Block] = []           # headings with no body yet (alternative signatures)
    for k, b in enumerate(blocks):
        section = HEADING_SEP.join(b.path) if b.path else (title or "")
        if b.heading or not sections or sections[-1][0] != section:
            sections.append((section, []))
        if not b.heading:
            sections[-1][1].append(b)
            empty = []
            continue
        # A heading followed at once by a sibling heading (``### f(a)`` then ``### f(a, b)``
        # and one body, as API docs list overloads) is not lost: its text opens the
        # sibling's section.
        if empty and empty[-1].level == b.level:
            sections[-1][1].extend(empty)
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        empty = [*empty, b] if nxt is not None and nxt.heading and nxt.level == b.level else []
    out: list[PassageDraft] = []
    for section, body in sections:
        budget = max(MAX_TOKENS - count_tokens(section), MAX_TOKENS // 2)
        out.extend(PassageDraft(text=group, section=section) for group in _group(body, budget))
    if not out:     # headings only: each heading is the content
        out = [PassageDraft(text=b.text, section=HEADING_SEP.join(b.path)) for b in blocks if b.heading]
    return out


@dataclass(frozen=True, slots=True)
class _Atom:
    """The smallest piece a long section is cut into: a whole block when it fits in a
    passage, else a list item, a line (code, table row, quote line) or a sentence of a
    paragraph.  ``fence_in``/``fence_out``: the opening line of the code fence open before
    and after this atom (None outside code), so a cut inside code closes and re-opens it."""

    text: str
    block: int
    sep: str = "\n"
    fence_in: str | None = None
    fence_out: str | None = None
    size: int = field(init=False, compare=False)     # count_tokens(text), counted once

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", count_tokens(self.text))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ITEM = re.compile(r"((?:> ?)*)( *)(?:[-*+]|\d+[.)])(?:\s|$)")
_FENCE = re.compile(r"((?:> ?)*\s*)(`{3,}|~{3,})")


def _by_words(text: str, budget: int) -> list[str]:
    """A sentence or line longer than ``budget`` tokens, cut between words."""
    out: list[str] = []
    count = 0
    for word in text.split():
        n = count_tokens(word)
        if out and count + n <= budget:
            out[-1] += " " + word
            count += n
        else:
            out.append(word)
            count = n
    return out


def _line_atoms(text: str, block: int, budget: int, kind: str) -> list[_Atom]:
    """A block too long for one passage, as atoms: a list's items (an item still too long,
    its sub-items, then its lines), a paragraph's sentences, every line of anything else; a
    sentence or line too long is cut between words."""
    if kind == "paragraph":
        return [_Atom(c, block, " ") for sentence in _SENTENCE_END.split(text.strip()) if sentence
                for c in ([sentence] if count_tokens(sentence) <= budget else _by_words(sentence, budget))]
    lines = text.split("\n")
    fences: list[tuple[str | None, str | None]] = []    # per line: fence open before, after
    open_: str | None = None
    for line in lines:
        before = open_
        m = _FENCE.match(line)
        if m and open_ is None:
            open_ = line
        elif m and open_ is not None and _closes(m, open_, line):
            open_ = None
        fences.append((before, open_))
    out: list[_Atom] = []

    def cut(start: int, end: int, depth: int | None) -> None:
        """Lines [start, end): items at indentation ``depth`` (None: every line)."""
        spans: list[list[int]] = []
        for i in range(start, end):
            m = _ITEM.match(lines[i]) if depth is not None and fences[i][0] is None else None
            if depth is None or not spans or (m is not None and len(m.group(2)) == depth):
                spans.append([i, i + 1])
            else:
                spans[-1][1] = i + 1
        for a, b in spans:
            item = "\n".join(lines[a:b])
            atom = _Atom(item, block, "\n", fences[a][0], fences[b - 1][1])
            if atom.size <= budget:
                out.append(atom)
            elif b - a > 1:
                sub = [len(m.group(2)) for k in range(a + 1, b)
                       if fences[k][0] is None and (m := _ITEM.match(lines[k]))]
                deeper = [d for d in sub if depth is not None and d > depth]
                cut(a, b, min(deeper) if deeper and len(spans) + len(deeper) > 1 else None)
            else:                        # one line longer than a passage: cut by words
                out.extend(_Atom(c, block, " ", fences[a][0], fences[a][1])
                           for c in _by_words(item, budget))

    cut(0, len(lines), 0 if kind == "list" else None)
    return [a for a in out if a.text.strip()]


def _closes(m: re.Match[str], opening: str, line: str) -> bool:
    """Does ``line`` (its fence marker matched by ``m``) close the fence ``opening`` opened
    (CommonMark: the same character, at least as many, nothing after it)?"""
    marker = _FENCE.match(opening).group(2)  # type: ignore[union-attr]
    run = m.group(2)
    return run[0] == marker[0] and len(run) >= len(marker) and not line[m.end():].strip(run[0]).strip()


def _fence_close(opening: str) -> str:
    m = _FENCE.match(opening)
    return f"{m.group(1)}{m.group(2)}" if m else "```"


def _render(atoms: list[_Atom]) -> str:
    parts: list[str] = []
    if atoms[0].fence_in is not None:
        parts.append(atoms[0].fence_in + "\n")
    for k, a in enumerate(atoms):
        if k:
            parts.append(a.sep if a.block == atoms[k - 1].block else "\n\n")
        parts.append(a.text)
    if atoms[-1].fence_out is not None:
        parts.append("\n" + _fence_close(atoms[-1].fence_out))
    return "".join(parts).strip()


def _group(blocks: list[Block], budget: int) -> list[str]:
    """A section is one passage; only when it is long do we cut it, between blocks first.
    A block too long for a passage is cut by its kind (``_line_atoms``: a list between
    items, code and tables between lines with the fence re-opened, a paragraph between
    sentences); its first atoms fill the passage it starts in, so a lead-in line ("The
    following flags are available:") stays with what it introduces, and the block after
    it starts a new passage (an API section's long parameter list does not swallow the
    description that follows it).  A paragraph ending in ``:`` moves to the next passage
    with the block it introduces.  No passage is a stub of fewer than ``MIN_TOKENS`` tokens:
    the tail of a cut block takes the last pieces of the passage before (or joins it when
    that would break the budget), any other short piece joins the next one.
    Sizes are ``count_tokens`` (what the embedding model reads), not words: code and API
    signatures hold several tokens per word."""
    groups: list[list[_Atom]] = []
    count = 0
    closed = False                   # the last group ended with a long block's tail
    for bi, b in enumerate(blocks):
        whole = _Atom(b.text, bi)
        n = whole.size
        atoms = [whole] if n <= budget else _line_atoms(b.text, bi, budget, b.kind)
        for a in atoms:
            if groups and not closed and count + a.size <= budget:
                groups[-1].append(a)
                count += a.size
                continue
            closed = False
            lead = groups[-1][-1] if groups and len(groups[-1]) > 1 else None
            if lead is not None and lead.block != a.block and lead.text.endswith(":") and lead.size < MIN_TOKENS:
                groups[-1].pop()         # "... as follows:" goes with what it introduces
                groups.append([lead, a])
                count = lead.size + a.size
            else:
                groups.append([a])
                count = a.size
        closed = n > budget
    k = 0
    while len(groups) > 1 and k < len(groups):
        if sum(a.size for a in groups[k]) >= MIN_TOKENS:
            k += 1
        elif k > 0 and (k + 1 == len(groups) or groups[k][0].block == groups[k - 1][-1].block):
            # a cut block's tail: atoms move to it from the passage before while both stay
            # in the budget and at least MIN_TOKENS; if that cannot be, it joins that passage
            prev, tail = groups[k - 1], groups[k]
            have, left = sum(a.size for a in tail), sum(a.size for a in prev)
            while (len(prev) > 1 and have < MIN_TOKENS and have + prev[-1].size <= budget
                   and left - prev[-1].size >= MIN_TOKENS):
                have += prev[-1].size
                left -= prev[-1].size
                tail.insert(0, prev.pop())
            if have >= MIN_TOKENS:
                k += 1
            else:
                groups[k - 1] += groups.pop(k)
        else:
            groups[k + 1] = groups[k] + groups[k + 1]
            del groups[k]
    return [_render(g) for g in groups]
