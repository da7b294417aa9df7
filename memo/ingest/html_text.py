"""An HTML document as the markdown memo splits and indexes: its headings, paragraphs,
lists, tables and code, without its page furniture.

Saved web pages and generated documentation (Sphinx, Node.js's API pages, npm's, javadoc)
are HTML; ``memo import`` ignored every such file.  Read with the standard library's
``html.parser`` (entities decoded; broken markup is read as browsers do, not refused):

* the page's main content when it marks one (``<main>``, ``role="main"``, a single
  ``<article>``), else the whole ``<body>``;
* never what a reader does not read as text: scripts, styles, navigation (``<nav>``,
  ``role="navigation"``: a table of contents would put every heading's words in the
  first passage), forms and their controls, embedded images and SVG;
* ``<h1>``-``<h6>`` as markdown headings (a passage's section is its heading path, as for
  a markdown file), ``<pre>`` as a fenced code block kept as written, inline ``<code>`` in
  backticks, list items as ``- `` lines, table rows as cells joined by `` | ``;
* a permalink mark after a heading (``#``, ``¶``, ``§``, ``🔗``) is dropped.

The title is the page's ``<title>``, else its first heading.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

HTML_EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "math", "button", "input", "select",
                   "textarea", "option", "nav", "iframe", "object", "canvas", "form", "head", "dialog"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "embed", "source",
                   "track", "param"})
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside", "ul", "ol", "li",
                     "table", "thead", "tbody", "tfoot", "tr", "blockquote", "dl", "dt", "dd", "figure",
                     "figcaption", "details", "summary", "address", "hr", "br", "body", "caption", "center"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_PERMALINKS = frozenset({"#", "¶", "§", "🔗", "link", "permalink"})
_SPACES = re.compile(r"\s+")


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []    # (tag, skipping, main) per open element
        self.blocks: list[tuple[bool, str]] = []          # (inside the main content, markdown block)
        self.line: list[str] = []
        self.heading = 0
        self.pre: list[str] | None = None
        self.lists = 0
        self.item = ""                     # a list item's "- " prefix, until its first line is out
        self.code = 0                      # inline <code> elements open
        self.row: list[str] | None = None
        self.link_at: list[int] = []
        self.title: list[str] | None = None
        self.title_text = ""
        self.articles = 0
        self.saw_main = False

    # --- state of the element being read -------------------------------------------------
    def _skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def _in_main(self) -> bool:
        return bool(self.stack) and self.stack[-1][2]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "title":
            self.title = []
        skipping = self._skipping() or tag in _SKIP or (a.get("role") or "") == "navigation" \
            or a.get("aria-hidden") == "true" or "hidden" in a
        main = self._in_main() or tag == "main" or (a.get("role") or "") == "main"
        if tag == "article":
            self.articles += 1
        if main and not self._in_main():
            self.saw_main = True
        if tag not in _VOID:
            self.stack.append((tag, skipping, main))
        if skipping:
            return
        if tag in _HEADINGS:
            self._flush()
            self.heading = _HEADINGS[tag]
        elif tag == "pre":
            self._flush()
            self.pre = []
        elif self.pre is not None:
            if tag == "code" and self.pre and not "".join(self.pre).endswith("\n"):
                self.pre.append("\n")     # a second listing in one <pre> (Node's ESM and CommonJS)
            return
        elif tag in ("ul", "ol"):
            self._flush()
            self.lists += 1
        elif tag == "li":
            self._flush()
            self.item = "  " * max(0, self.lists - 1) + "- "
        elif tag == "tr":
            self._flush()
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self._cell()
        elif tag in _BLOCKS:
            self._flush()
        elif tag == "code":
            self.code += 1
            self.line.append("`")
        elif tag == "a":
            self.link_at.append(len(self.line))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title is not None:
            self.title_text = self.title_text or _SPACES.sub(" ", "".join(self.title)).strip()
            self.title = None
        if not any(t == tag for t, _, _ in self.stack):
            return                          # a stray end tag: browsers ignore it too
        skipping = self.stack[-1][1] if self.stack[-1][0] == tag else self._skipping()
        main = self._in_main()
        while self.stack:
            t, skipping, main = self.stack.pop()
            if t == tag:
                break
        if skipping:
            return
        if tag == "pre" and self.pre is not None:
            code = "".join(self.pre).strip("\n")
            self.pre = None
            if code.strip():
                fence = "````" if "```" in code else "```"
                self.blocks.append((main, f"{fence}\n{code}\n{fence}"))
        elif self.pre is not None:
            return
        elif tag in _HEADINGS:
            self._flush(prefix="#" * self.heading + " ", main=main)
            self.heading = 0
        elif tag in ("ul", "ol"):
            self._flush(main=main)
            self.lists = max(0, self.lists - 1)
        elif tag == "li":
            self._flush(main=main)
            self.item = ""
        elif tag == "tr" and self.row is not None:
            self._cell()
            cells = [c for c in self.row if c]
            self.row = None
            if cells:
                self.blocks.append((main, " | ".join(cells)))
        elif tag in _BLOCKS:
            self._flush(main=main)
        elif tag == "code":
            self.code = max(0, self.code - 1)
            self.line.append("`")
        elif tag == "a" and self.link_at:
            at = self.link_at.pop()
            if "".join(self.line[at:]).strip().lower() in _PERMALINKS:
                del self.line[at:]

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        if self._skipping():
            return
        if self.pre is not None:
            self.pre.append(data)
        elif self.code:
            self.line.append(data)
        else:
            # A page's escaped "&lt;div&gt;" is text: escaped again for the markdown splitter,
            # which reads "<div>" as markup and dropped the word (code spans keep it as is).
            self.line.append(data.replace("<", "\\<"))

    # --- output ------------------------------------------------------------------------------
    def _cell(self) -> None:
        assert self.row is not None
        text = _inline("".join(self.line))
        self.line = []
        self.row.append(text)

    def _flush(self, prefix: str = "", main: bool | None = None) -> None:
        if self.row is not None and self.line:
            self._cell()
            return
        text = _inline("".join(self.line))
        self.line = []
        self.link_at = []
        if text:
            if self.item and not prefix:      # a list item's first line (its nested list follows)
                prefix, self.item = self.item, ""
            self.blocks.append((self._in_main() if main is None else main, prefix + text))


def _inline(text: str) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text.replace("``", "").strip()      # an empty <code></code> leaves nothing behind


def html_to_markdown(html: str) -> tuple[str | None, str]:
    """(the page's title or None, its text as markdown: module docstring)."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader._flush()
    blocks = reader.blocks
    if reader.saw_main and any(m for m, _ in blocks):
        blocks = [(m, b) for m, b in blocks if m]
    text = "\n\n".join(b for _, b in blocks)
    title = reader.title_text or next((b.lstrip("#").strip() for _, b in blocks if b.startswith("#")), None)
    return (title or None), text
