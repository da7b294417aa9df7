"""A Word document (``.docx``) as the markdown memo splits and indexes: its paragraphs,
headings, lists and tables, read with the standard library (a ``.docx`` is a zip of XML).

* **Headings** are the paragraphs whose style has an outline level (Word's "Heading 1" to
  "Heading 9", and any style a user based on them) or is named "heading N"; "Title" is a
  level-1 heading and the record's title when the document's properties name none.  Style
  names are read from the document's own styles, so a Word set to another language (whose
  style ids are "berschrift1", "Titre1") reads the same.  A passage's section is then its
  heading path, as for a markdown file.
* **Lists** are ``- `` items; **tables** one line per row, cells joined by `` | ``;
  a tab is a space and a line break inside a paragraph a line break.
* **Left out**: deleted text of tracked changes (inserted text is kept), field codes, the
  fallback copy Word writes of a drawing's text, comments, headers and footers.
* The title is the document's own (``docProps/core.xml``), else its first Title paragraph,
  else none (the file's name).

A password-protected Word file is not a zip but an encrypted container: refused with what
to do, as is an old binary ``.doc`` renamed and a damaged archive.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from xml.etree import ElementTree as ET

from memo.ingest.converted import Converted, Unread, escape_markdown, zip_member

DOCX_EXTENSIONS = frozenset({".docx"})

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"          # an encrypted Office file, or an old .doc
_HEADING_NAME = re.compile(r"heading\s*(\d)$", re.I)
_SKIP = frozenset({f"{_W}del", f"{_W}instrText", f"{_W}delText", f"{_W}txbxContent", f"{_MC}Fallback",
                   f"{_W}commentReference", f"{_W}footnoteReference", f"{_W}endnoteReference"})
_SPACES = re.compile(r"[ \t]+")


def docx_to_markdown(data: bytes) -> Converted | Unread:
    """The document's text as markdown (module docstring), or why there is none."""
    if not data.strip():
        return Unread("empty file (no text to import)", empty=True)
    if data.startswith(_OLE):
        return Unread("a password-protected Word document, or an old binary .doc renamed .docx: save an "
                      "unprotected copy as .docx (File > Save As) and import that")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            body = _xml(zf, "word/document.xml", len(data))
            styles = _styles(_xml(zf, "word/styles.xml", len(data), required=False))
            title = _core_title(_xml(zf, "docProps/core.xml", len(data), required=False))
    except (zipfile.BadZipFile, KeyError, ET.ParseError, ValueError, EOFError, OSError) as exc:
        return Unread(f"not a readable Word document ({' '.join(str(exc).split()) or type(exc).__name__})")
    blocks: list[str] = []
    for level, text in _blocks(body, styles):
        if level == -1 and title is None:
            title = text
        blocks.append(("#" * min(max(level, 1), 6) + " " + escape_markdown(text)) if level else text)
    markdown = "\n\n".join(b for b in blocks if b.strip())
    if not markdown.strip():
        return Unread("Word document without text", empty=True)
    return Converted(title, markdown, {"converted_from": "docx"})


def _xml(zf: zipfile.ZipFile, name: str, size: int, *, required: bool = True) -> ET.Element | None:
    """A part of the archive, parsed (``zip_member``: bounded); None for a missing optional one."""
    try:
        return ET.fromstring(zip_member(zf, name, size))
    except KeyError:
        if required:
            raise KeyError(f"no {name} in the archive") from None
        return None


_LIST = 10          # a style that numbers or bullets its paragraphs ("List Bullet"): not a heading


def _styles(root: ET.Element | None) -> dict[str, int]:
    """style id -> heading level (1-9; -1 for Title; ``_LIST`` for a list style), for the
    styles that are headings or lists, following ``basedOn`` (a user's "My Heading" based on
    Heading 2 is a heading 2)."""
    if root is None:
        return {}
    own: dict[str, int] = {}
    based: dict[str, str] = {}
    for st in root.iter(f"{_W}style"):
        sid = st.get(f"{_W}styleId")
        if not sid:
            continue
        name_el = st.find(f"{_W}name")
        name = (name_el.get(f"{_W}val") or "") if name_el is not None else ""
        lvl = st.find(f"{_W}pPr/{_W}outlineLvl")
        if lvl is not None and (lvl.get(f"{_W}val") or "").isdigit() and int(lvl.get(f"{_W}val") or 9) < 9:
            own[sid] = int(lvl.get(f"{_W}val") or 0) + 1
        elif (m := _HEADING_NAME.match(name.strip())) is not None:
            own[sid] = int(m.group(1))
        elif name.strip().lower() == "title":
            own[sid] = -1
        elif st.find(f"{_W}pPr/{_W}numPr") is not None:
            own[sid] = _LIST
        parent = st.find(f"{_W}basedOn")
        if parent is not None and parent.get(f"{_W}val"):
            based[sid] = parent.get(f"{_W}val") or ""
    out = dict(own)
    for sid in based:
        seen = {sid}
        cur = sid
        while cur not in out and cur in based and based[cur] not in seen:
            cur = based[cur]
            seen.add(cur)
        if cur in out:
            out.setdefault(sid, out[cur])
    return out


def _core_title(root: ET.Element | None) -> str | None:
    if root is None:
        return None
    el = root.find(f"{_DC}title")
    title = " ".join((el.text or "").split()) if el is not None else ""
    return title or None


def _text(el: ET.Element) -> str:
    """A paragraph's text: its runs' text, tabs as spaces, breaks as line breaks, without
    what ``_SKIP`` names (deleted text, field codes, text boxes' and drawings' copies)."""
    out: list[str] = []

    def walk(node: ET.Element) -> None:
        for child in node:
            tag = child.tag
            if tag in _SKIP:
                continue
            if tag == f"{_W}t":
                out.append(child.text or "")
            elif tag in (f"{_W}tab", f"{_W}ptab"):
                out.append(" ")
            elif tag in (f"{_W}br", f"{_W}cr"):
                out.append("\n")
            elif tag == f"{_W}noBreakHyphen":
                out.append("-")
            else:
                walk(child)

    walk(el)
    lines = (_SPACES.sub(" ", ln).strip() for ln in "".join(out).split("\n"))
    return "\n".join(ln for ln in lines if ln)


def _blocks(body: ET.Element, styles: dict[str, int]) -> Iterator[tuple[int, str]]:
    """(heading level or 0, text) per paragraph and table row, in document order; the
    text is markdown already (escaped, list items and rows marked)."""
    for el in _block_elements(body):
        if el.tag == f"{_W}tbl":          # one block: a row a line
            rows = []
            for row in el.iter(f"{_W}tr"):
                cells = [" ".join(_text(p) for p in tc.iter(f"{_W}p")).replace("\n", " ").strip()
                         for tc in row.findall(f"{_W}tc")]
                if any(cells):
                    rows.append(" | ".join(escape_markdown(c) for c in cells))
            if rows:
                yield 0, "\n".join(rows)
            continue
        text = _text(el)
        if not text:
            continue
        ppr = el.find(f"{_W}pPr")
        level = 0
        if ppr is not None:
            style = ppr.find(f"{_W}pStyle")
            level = styles.get(style.get(f"{_W}val") or "", 0) if style is not None else 0
            own = ppr.find(f"{_W}outlineLvl")
            if own is not None and (own.get(f"{_W}val") or "").isdigit() and int(own.get(f"{_W}val") or 9) < 9:
                level = int(own.get(f"{_W}val") or 0) + 1
        if level and level != _LIST:
            yield level, " ".join(text.split())
        elif level == _LIST or (ppr is not None and ppr.find(f"{_W}numPr") is not None):
            yield 0, "- " + escape_markdown(" ".join(text.split()))
        else:
            yield 0, "\n".join(escape_markdown(ln) for ln in text.split("\n"))


def _block_elements(node: ET.Element) -> Iterator[ET.Element]:
    """The body's paragraphs and tables in order, inside content controls (``w:sdt``) too."""
    for child in node:
        if child.tag in (f"{_W}p", f"{_W}tbl"):
            yield child
        elif child.tag in (f"{_W}body", f"{_W}sdt", f"{_W}sdtContent", f"{_W}customXml"):
            yield from _block_elements(child)
