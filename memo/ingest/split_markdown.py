"""Markdown: passages by section, keyed by its heading path ("Install > Linux"); a list
item is a passage of its own.

The text is parsed with markdown-it-py (``memo.ingest.markdown_parse``), not with regular
expressions: headings inside fenced code are code, setext headings count, and HTML
comments, ``<a id=...>`` anchors and link reference definitions are not passage text.
Text before the first heading gets the document title (or "") as its section.

**Lists.**  Each item of a list (a bullet ``-``/``*``/``+`` or a number ``1.``, with its
sub-items and its continuation lines) is a passage of its own, carrying the heading path
as its section: a release note's "UI, Workflows & Features" list is thirty unrelated
changes, and packed into one window they blur into one vector that answers none of them
(and the model truncates what does not fit).  A short paragraph ending in ``:`` just
before a list ("The following options are accepted:") opens the first item's passage.
Sibling items of one list both at most ``ITEM_MERGE_TOKENS`` word pieces would share a
passage; the constant was chosen on the train splits of the documentation sets
(datasets/nodedocs, datasets/relnotes; docs/eval.md "List items"), and 0 means never.

**Everything else** in a section (paragraphs, code, tables, quotes between the lists) is
packed in order into passages of at most the model's window; a block that is itself too
long is cut by its kind, keeping its lines: code and tables between lines (a cut inside a
code fence closes it and re-opens it with its language), a paragraph between sentences; a
list item too long for one passage between its sub-items, then lines, then words.  A
passage of such text shorter than ``MIN_TOKENS`` joins its neighbour when both fit the
window (never an item); the constant was chosen on the same train splits.

**The window.**  Every passage, section line included, fits in ``WINDOW`` word pieces
counted with the model's own tokenizer (``memo.ingest.budget``); a heading path longer
than half the window keeps its end.  A document with headings but no body at all (a
one-line note such as ``## Decision: we use WAL mode``) gives one passage per heading:
the heading is the content.  The split depends only on the text and title, so
re-importing an unchanged file gives the same passages (ids ``<record_id>:<ord>``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memo.ingest.budget import SPECIAL, WINDOW, count_many, count_pieces, pieces_up_to
from memo.ingest.markdown_parse import HEADING_SEP, Block, front_matter, has_headings, parse_markdown
from memo.stored import PassageDraft

__all__ = ["HEADING_SEP", "MAX_TOKENS", "front_matter", "looks_like_markdown", "pack_blocks", "split_markdown"]

# A passage is embedded as its section line and its text (memo.embed.model.passage_text)
# and the model reads WINDOW word pieces of it: a longer passage would be embedded only in part.
MAX_TOKENS = WINDOW
MIN_TOKENS = 120           # a shorter passage of text between lists joins its neighbour (chosen on train)
ITEM_MERGE_TOKENS = 0      # sibling list items at most this long may share a passage (0: never)
SECTION_MAX = WINDOW // 2  # a longer heading path keeps its end (the heading itself)


def looks_like_markdown(text: str) -> bool:
    """The text has at least one heading (what makes a note worth splitting by section)."""
    return has_headings(text)


def text_budget(section: str) -> tuple[str, int]:
    """(the section as stored, the word pieces its passages' text may have)."""
    section = fit_section(section)
    return section, MAX_TOKENS - SPECIAL - count_pieces(section)


def fit_section(section: str) -> str:
    """``section``, or its end when it is longer than ``SECTION_MAX`` word pieces (a heading
    path of a hundred headings, a heading that is a whole paragraph)."""
    if count_pieces(section) <= SECTION_MAX:
        return section
    words = section.split()
    lo, hi = 0, len(words)           # the most words, from the end, that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_pieces("… " + " ".join(words[-mid:])) <= SECTION_MAX:
            lo = mid
        else:
            hi = mid - 1
    if lo:
        return "… " + " ".join(words[-lo:])
    return _by_chars(words[-1], SECTION_MAX - 1)[-1] if words else ""


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
        # sibling's section.  A run of them opens the last one's only: the section of the
        # one before held the run so far, and gives it up (three empty headings put the
        # first one's text in two passages).
        if empty and empty[-1].level == b.level:
            if len(empty) > 1:
                sections[-2][1].clear()
            sections[-1][1].extend(empty)
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        empty = [*empty, b] if nxt is not None and nxt.heading and nxt.level == b.level else []
    out: list[PassageDraft] = []
    for section, body in sections:
        stored, budget = text_budget(section)
        out.extend(PassageDraft(text=t, section=stored) for t in pack_blocks(body, budget))
    if not out:     # headings only: each heading is the content
        for b in blocks:
            if b.heading:
                stored, budget = text_budget(HEADING_SEP.join(b.path))
                out.extend(PassageDraft(text=t, section=stored) for t in _fit([_Atom(b.text, 0)], budget))
    return out


@dataclass(frozen=True, slots=True)
class _Atom:
    """The smallest piece text is cut into: a whole block or list item when it fits in a
    passage, else a sub-item, a line (code, table row, quote line), a sentence of a
    paragraph or a run of words.  ``fence_in``/``fence_out``: the opening line of the code
    fence open before and after this atom (None outside code), so a cut inside code closes
    and re-opens it."""

    text: str
    block: int
    sep: str = "\n"
    fence_in: str | None = None
    fence_out: str | None = None
    size: int = field(default=-1, compare=False)     # count_pieces(text), counted once

    def __post_init__(self) -> None:
        if self.size < 0:
            object.__setattr__(self, "size", count_pieces(self.text))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ITEM = re.compile(r"((?:> ?)*)( *)(?:[-*+]|\d+[.)])(?:\s|$)")
_FENCE = re.compile(r"((?:> ?)*\s*)(`{3,}|~{3,})")


def _by_chars(word: str, budget: int) -> list[str]:
    """A word longer than ``budget`` word pieces (a run of punctuation, a long identifier),
    cut into runs of at most ``budget`` characters: each holds at most that many pieces."""
    size = max(1, budget)
    return [word[i:i + size] for i in range(0, len(word), size)]


def _by_words(text: str, budget: int) -> list[str]:
    """A sentence or line longer than ``budget`` word pieces, cut between words (a word
    longer than that, between characters)."""
    return [c for c, _ in _sized_by_words(text, budget)]


def _sized_by_words(text: str, budget: int) -> list[tuple[str, int]]:
    """``_by_words`` with each chunk's word pieces: the sum of its words' (the tokenizer
    splits at whitespace first), so no chunk is counted twice."""
    out: list[tuple[str, int]] = []
    count = 0
    words = text.split()
    # one tokenizer call for the distinct words (a 2 MB note cut by words made one call per word)
    distinct = list(dict.fromkeys(words))
    pieces = dict(zip(distinct, count_many(distinct), strict=True))
    for word in words:
        n = pieces[word]
        parts = [(word, n)] if n <= budget else [(c, count_pieces(c)) for c in _by_chars(word, budget)]
        for part, m in parts:
            if out and count + m <= budget:
                out[-1] = (out[-1][0] + " " + part, count + m)
                count += m
            else:
                out.append((part, m))
                count = m
    return out


def _fences(lines: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """Per line: the opening line of the code fence open before it and after it."""
    out: list[tuple[str | None, str | None]] = []
    open_: str | None = None
    for line in lines:
        before = open_
        m = _FENCE.match(line)
        if m and open_ is None:
            open_ = line
        elif m and open_ is not None and _closes(m, open_, line):
            open_ = None
        out.append((before, open_))
    return out


def _line_atoms(text: str, block: int, budget: int, kind: str) -> list[_Atom]:
    """A block too long for one passage, as atoms: a list's items (an item still too long,
    its sub-items, then its lines), a paragraph's sentences, every line of anything else; a
    sentence or line too long is cut between words."""
    if kind == "paragraph":
        out_p: list[_Atom] = []
        for sentence in _SENTENCE_END.split(text.strip()):
            if not sentence:
                continue
            n = pieces_up_to(sentence, budget)
            pieces = [(sentence, n)] if n <= budget else _sized_by_words(sentence, budget)
            out_p.extend(_Atom(c, block, " ", size=m) for c, m in pieces)
        return out_p
    lines = text.split("\n")
    fences = _fences(lines)
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
                out.extend(_Atom(c, block, " ", fences[a][0], fences[a][1], size=m)
                           for c, m in _sized_by_words(item, budget))

    cut(0, len(lines), 0 if kind == "list" else None)
    return [a for a in out if a.text.strip()]


def list_items(text: str, item: re.Pattern[str] = _ITEM) -> list[str]:
    """The top-level items of a list block, each with its sub-items and continuation lines
    (lines before the first item, if any, are an item of their own).  Items start at the
    lines, outside code fences, that ``item`` matches with the least indentation."""
    lines = text.split("\n")
    fences = _fences(lines)
    starts = [(i, len(m.group(2))) for i, line in enumerate(lines)
              if fences[i][0] is None and (m := item.match(line))]
    if not starts:
        return [text]
    depth = min(d for _, d in starts)
    cuts = [i for i, d in starts if d == depth]
    if cuts[0] != 0:
        cuts.insert(0, 0)
    return ["\n".join(lines[a:b]) for a, b in zip(cuts, [*cuts[1:], len(lines)], strict=True)]


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


def _fit(atoms: list[_Atom], budget: int) -> list[str]:
    """The passage(s) of one group: its rendering, or, when the fence lines re-opened
    around a cut push it past ``budget``, the group cut in two (a single atom: by words).
    Atoms are joined by whitespace, so without re-opened fences the rendering has exactly
    the atoms' word pieces."""
    text = _render(atoms)
    fenced = atoms[0].fence_in is not None or atoms[-1].fence_out is not None
    if not fenced and sum(a.size for a in atoms) <= budget:
        return [text] if text else []
    if count_pieces(text) <= budget or not text:
        return [text] if text else []
    if len(atoms) > 1:
        half = len(atoms) // 2
        return _fit(atoms[:half], budget) + _fit(atoms[half:], budget)
    return _by_words(text, budget)


def _pack(chunks: list[list[_Atom]], budget: int) -> list[list[_Atom]]:
    """Text between lists, as groups of atoms of at most ``budget`` word pieces.  Each
    chunk is one block's atoms (one atom when the block fits).  A block cut into several
    atoms fills the passage it starts in, so a lead-in line ("The following flags are
    available:") stays with what it introduces, and the block after it starts a new
    passage (an API section's long example does not swallow the description that follows
    it).  A paragraph ending in ``:`` moves to the next passage with the block it
    introduces.  A passage shorter than ``MIN_TOKENS`` is merged while the result fits
    ``budget``: the tail of a cut block takes the last pieces of the passage before (or
    joins it), any other short piece joins the next one."""
    groups: list[list[_Atom]] = []
    count = 0
    closed = False                   # the last group ended with a long block's tail
    for atoms in chunks:
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
        closed = len(atoms) > 1
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
            elif have + left <= budget:
                groups[k - 1] += groups.pop(k)
            else:
                k += 1
        elif sum(a.size for a in groups[k] + groups[k + 1]) <= budget:
            groups[k + 1] = groups[k] + groups[k + 1]
            del groups[k]
        else:
            k += 1
    return groups


def _block_atoms(text: str, block: int, budget: int, kind: str, size: int = -1) -> list[_Atom]:
    whole = _Atom(text, block, size=size if size >= 0 else pieces_up_to(text, budget))
    return [whole] if whole.size <= budget else _line_atoms(text, block, budget, kind)


def _item_groups(text: str, block: int, budget: int, item: re.Pattern[str]) -> list[list[list[_Atom]]]:
    """Per top-level item of a list block: its passages (one when it fits)."""
    items = list_items(text, item)
    return [_pack([_block_atoms(it, block, budget, "list", n)], budget)
            for it, n in zip(items, count_many(items), strict=True)]


def _merge_short(items: list[list[list[_Atom]]], budget: int) -> list[list[_Atom]]:
    """The passages of one list's items: each item its own, except that runs of sibling
    items that fit whole in ``ITEM_MERGE_TOKENS`` word pieces each share passages."""
    out: list[list[_Atom]] = []
    run_open = False
    for groups in items:
        small = ITEM_MERGE_TOKENS > 0 and len(groups) == 1 and sum(a.size for a in groups[0]) <= ITEM_MERGE_TOKENS
        if small and run_open and sum(a.size for a in out[-1] + groups[0]) <= budget:
            out[-1] = out[-1] + groups[0]
        else:
            out.extend(groups)
        run_open = small
    return out


def pack_blocks(blocks: Sequence[Block], budget: int, item: re.Pattern[str] = _ITEM) -> list[str]:
    """The passages' texts of one section's blocks (each at most ``budget`` word pieces):
    every list item its own passage (``_merge_short``), the text between lists packed
    (``_pack``); a short lead-in ending in ``:`` right before a list, or an overload's
    heading (``### f(a)`` over ``### f(a, b)``), opens its first item's passage."""
    out: list[tuple[bool, list[_Atom]]] = []      # (is a list item's passage, atoms)
    flow: list[list[_Atom]] = []

    def flush() -> None:
        out.extend((False, g) for g in _pack(flow, budget))
        flow.clear()

    for bi, b in enumerate(blocks):
        if b.kind != "list":
            flow.append(_block_atoms(b.text, bi, budget, b.kind))
            continue
        flush()
        groups = _merge_short(_item_groups(b.text, bi, budget, item), budget)
        if groups and out and not out[-1][0]:
            prev = out[-1][1]
            lead = prev[-1]
            opens = lead.text.endswith(":") or blocks[lead.block].heading
            if (lead.block == bi - 1 and opens and lead.size < MIN_TOKENS
                    and lead.size + sum(a.size for a in groups[0]) <= budget):
                prev.pop()
                if not prev:
                    out.pop()
                groups[0] = [lead, *groups[0]]
        out.extend((True, g) for g in groups)
    flush()
    return [t for _, g in out for t in _fit(g, budget)]
