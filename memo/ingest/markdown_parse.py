"""Markdown through a real parser (markdown-it-py, CommonMark + tables), as memo indexes it.

``parse_markdown(text)`` returns the document's top-level blocks, each with the heading
path it sits under, rendered as plain text:

* headings (ATX and setext, at the top level) give the section path, as plain text
  (backticks and emphasis dropped: ``### `fs.readFile()` `` -> ``fs.readFile()``);
* HTML comments, ``<a id=...></a>`` anchors and HTML's other tags are not text (an HTML
  block keeps only the text between its tags); a ``<word>`` that is not an HTML element
  (``Promise<Buffer>``, ``List<T>``, ``<my-widget>``) is the author's text and stays
  (memo.ingest.html_tags);
* link reference definitions (``[EOF]: https://...``) are not text: the parser consumes
  them; a link keeps its text, not its URL;
* fenced code keeps its language: ```` ```js ```` ... ```` ``` ````;
* lists keep their bullets or numbers, tables become ``cell | cell`` lines, block quotes
  keep ``> ``.

Front matter (``---`` YAML at the top) is read by ``front_matter`` (flat ``key: value``
lines, ``tags: [a, b]`` and ``- item`` lists) and never indexed as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from html import unescape

from markdown_it import MarkdownIt
from markdown_it.token import Token

from memo.ingest.html_tags import is_markup

HEADING_SEP = " > "
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Block:
    """One top-level block: its heading path (() before the first heading) and its text;
    a heading itself is a block with ``heading=True`` (its text is the heading's).
    ``kind`` is what the block is: ``paragraph``, ``list``, ``fence`` (fenced or indented
    code), ``table``, ``quote``, ``html`` or ``heading``; the splitter cuts a block too long
    for one passage by its kind (a list between items, code between lines...)."""

    path: tuple[str, ...]
    text: str
    heading: bool = False
    level: int = 0
    kind: str = "paragraph"


_KINDS = {"paragraph_open": "paragraph", "bullet_list_open": "list", "ordered_list_open": "list",
          "fence": "fence", "code_block": "fence", "table_open": "table", "blockquote_open": "quote",
          "html_block": "html"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """Split a leading YAML front matter block (``---`` ... ``---``, as Obsidian, Jekyll and
    Hugo write) from the body.  Flat ``key: value`` lines are read; a list is either
    ``[a, b]`` or ``- item`` lines under its key.  Keys are lower-cased."""
    m = _FRONT.match(text)
    if not m:
        return {}, text
    meta: dict[str, str | list[str]] = {}
    last: str | None = None
    for line in (m.group(1) or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("- ") and last is not None:
            items = meta.get(last)
            items = items if isinstance(items, list) else ([items] if items else [])
            items.append(_unquote(stripped[2:]))
            meta[last] = items
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key.startswith((" ", "\t", "-", "#")):
            continue
        last = key.strip().lower()
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            meta[last] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[last] = _unquote(value)
    return meta, text[m.end():]


def _unquote(value: str) -> str:
    return value.strip().strip("\"'").strip()


# A comment (which may hold '>'), or anything from '<' to the next '>' that holds no '<'.
_HTML_PIECE = re.compile(r"(<!--.*?(?:-->|$)|<[^<>]*>)", re.S)


def html_text(html: str) -> str:
    """The text of an HTML fragment: markup dropped (comments, HTML's own tags), character
    references decoded, a ``<word>`` that is not HTML kept as written (``is_markup``)."""
    parts = [p if i % 2 else unescape(p) for i, p in enumerate(_HTML_PIECE.split(html))
             if not (i % 2 and is_markup(p))]
    return " ".join("".join(parts).split())


def inline_text(token: Token) -> str:
    """An inline token as plain text: code spans without backticks, links as their text,
    images as their alt text, inline HTML markup dropped (a ``<word>`` that is not HTML,
    such as ``Promise<Buffer>``'s, kept: ``is_markup``), soft breaks as line breaks."""
    out: list[str] = []
    for child in token.children or ():
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "html_inline" and not is_markup(child.content):
            out.append(child.content)
        elif child.type == "image":
            out.append(inline_text(child) if child.children else child.content)
    return "".join(out).strip()


def _fence(token: Token) -> str:
    info = token.info.strip().split()[0] if token.info.strip() else ""
    return f"```{info}\n{token.content.rstrip()}\n```"


def parse_markdown(text: str) -> list[Block]:
    """Top-level blocks in document order (front matter already removed by the caller)."""
    tokens = _parser().parse(text)
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []            # the current top-level block's lines
    prefixes: list[str] = []         # '> ' per open block quote
    lists: list[list[object]] = []   # [ordered, next number] per open list
    item_first: list[bool] = []      # per open list item: next paragraph is its first
    row: list[str] | None = None
    kind = "paragraph"               # the current top-level block's kind

    def prefix() -> str:
        return "".join(prefixes)

    def add_line(content: str) -> None:
        if not content:
            return
        lead = prefix()
        if item_first and lists:
            depth = "  " * (len(lists) - 1)
            if item_first[-1]:
                ordered, n = lists[-1]
                bullet = f"{n}. " if ordered else "- "
                item_first[-1] = False
                lead += depth + bullet
            else:
                lead += depth + "  "
        for k, ln in enumerate(content.split("\n")):
            lines.append((lead if k == 0 else prefix() + ("  " * len(lists) if lists else "")) + ln)

    def flush() -> None:
        body = "\n".join(ln.rstrip() for ln in lines).strip()
        lines.clear()
        if body:
            blocks.append(Block(tuple(n for _, n in path), body, kind=kind))

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        t = tok.type
        if t == "heading_open" and tok.level == 0:
            flush()
            level = int(tok.tag[1:])
            name = inline_text(tokens[i + 1]) or tokens[i + 1].content.strip()
            path = [(lv, n) for lv, n in path if lv < level] + [(level, name)]
            blocks.append(Block(tuple(n for _, n in path), name, heading=True, level=level, kind="heading"))
            i += 3
            continue
        if tok.level == 0 and tok.nesting >= 0 and t != "inline":
            flush()                  # a new top-level block starts
            kind = _KINDS.get(t, "paragraph")
        if t == "inline":
            content = inline_text(tok)
            if row is not None:
                row.append(content)
            else:
                add_line(content)
        elif t in ("fence", "code_block"):
            add_line(_fence(tok) if t == "fence" else tok.content.rstrip())
        elif t == "html_block":
            add_line(html_text(tok.content))
        elif t == "blockquote_open":
            prefixes.append("> ")
        elif t == "blockquote_close":
            prefixes.pop()
        elif t in ("bullet_list_open", "ordered_list_open"):
            lists.append([t == "ordered_list_open", int(tok.attrGet("start") or 1)])
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif t == "list_item_open":
            item_first.append(True)
        elif t == "list_item_close":
            item_first.pop()
            if lists and lists[-1][0]:
                lists[-1][1] = int(lists[-1][1]) + 1  # type: ignore[call-overload]
        elif t == "tr_open":
            row = []
        elif t == "tr_close":
            add_line(" | ".join(c for c in (row or []) if c is not None))
            row = None
        elif t == "hr":
            pass
        i += 1
    flush()
    return blocks


_LINE_BREAK = re.compile(r"\r\n?|\n")


def _may_have_heading(text: str) -> bool:
    """False only when no line can be a heading: CommonMark headings are ATX (a ``#``) or
    setext (a line of only ``=`` or only ``-`` under a paragraph).  Lets plain prose (a
    JSONL record, a BEIR abstract) skip the parse: ingest runs this on every record."""
    if "#" in text:
        return True
    if "=" not in text and "-" not in text:
        return False
    for line in _LINE_BREAK.split(text):
        mark = line.strip()
        if mark and (mark.count("=") == len(mark) or mark.count("-") == len(mark)):
            return True
    return False


def has_headings(text: str) -> bool:
    """Whether the parser finds a heading at the top level of ``text``."""
    return _may_have_heading(text) and any(t.type == "heading_open" and t.level == 0 for t in _parser().parse(text))


def first_heading(text: str, level: int = 1) -> str | None:
    """The text of the first top-level heading of ``level`` (a document's title)."""
    tokens = _parser().parse(text)
    for i, t in enumerate(tokens):
        if t.type == "heading_open" and t.level == 0 and t.tag == f"h{level}":
            return inline_text(tokens[i + 1]) or None
    return None
