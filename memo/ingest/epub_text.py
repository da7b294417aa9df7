"""An e-book (``.epub``) as the markdown memo splits and indexes: its chapters in reading
order, each read as the HTML page it is (``memo.ingest.html_text``: headings as sections,
no navigation, scripts or styles).

An EPUB is a zip: ``META-INF/container.xml`` names the package document, whose ``spine``
lists the chapters in reading order and whose ``metadata`` the title.  A chapter the spine
marks ``linear="no"`` (a footnote page, a cover) and the navigation document are left out.
A DRM-protected book (``META-INF/encryption.xml`` naming encrypted chapters) is refused
with that reason: its chapters are not text.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree as ET

from memo.ingest.converted import Converted, Unread, zip_member
from memo.ingest.html_text import html_to_markdown

EPUB_EXTENSIONS = frozenset({".epub"})

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})
# How an EPUB hides its embedded fonts (not DRM: the text stays readable)
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})


def epub_to_markdown(data: bytes) -> Converted | Unread:
    """The book's text as markdown (module docstring), or why there is none."""
    if not data.strip():
        return Unread("empty file (no text to import)", empty=True)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            if _encrypted(zf, len(data)):
                return Unread("a DRM-protected e-book (its chapters are encrypted): memo can read only books "
                              "without DRM")
            opf_path = _package_path(zf, len(data))
            opf = ET.fromstring(zip_member(zf, opf_path, len(data)))
            base = posixpath.dirname(opf_path)
            items = {it.get("id"): it for it in opf.iter(f"{_OPF}item")}
            chapters: list[str] = []
            for ref in opf.iter(f"{_OPF}itemref"):
                item = items.get(ref.get("idref"))
                if item is None or ref.get("linear") == "no" or item.get("media-type") not in _CHAPTER_TYPES:
                    continue
                if "nav" in (item.get("properties") or "").split():
                    continue
                # hrefs are URLs: "Chapter%201.xhtml" names "Chapter 1.xhtml", "#id" a place in it
                href = posixpath.normpath(posixpath.join(base, unquote((item.get("href") or "").split("#")[0])))
                try:
                    page = zip_member(zf, href, len(data)).decode("utf-8", errors="replace")
                except KeyError:
                    continue                      # a spine entry naming a missing file: the others are read
                _, text = html_to_markdown(page)
                if text.strip():
                    chapters.append(text)
            title_el = opf.find(f"{_OPF}metadata/{_DC}title")
    except (zipfile.BadZipFile, KeyError, ET.ParseError, ValueError, EOFError, OSError) as exc:
        return Unread(f"not a readable EPUB ({' '.join(str(exc).split()) or type(exc).__name__})")
    if not chapters:
        return Unread("e-book without text (its chapters hold none)", empty=True)
    title = " ".join((title_el.text or "").split()) if title_el is not None else ""
    return Converted(title or None, "\n\n".join(chapters), {"converted_from": "epub", "chapters": len(chapters)})


def _package_path(zf: zipfile.ZipFile, size: int) -> str:
    container = ET.fromstring(zip_member(zf, "META-INF/container.xml", size))
    for root in container.iter(f"{_CONTAINER}rootfile"):
        if root.get("full-path"):
            return root.get("full-path") or ""
    raise KeyError("META-INF/container.xml names no package document")


def _encrypted(zf: zipfile.ZipFile, size: int) -> bool:
    """Chapters encrypted by DRM; font obfuscation (the IDPF and Adobe font algorithms, which
    the same file lists) leaves the text readable."""
    try:
        enc = ET.fromstring(zip_member(zf, "META-INF/encryption.xml", size))
    except KeyError:
        return False
    for data in enc.iter(f"{_ENC}EncryptedData"):
        method = data.find(f"{_ENC}EncryptionMethod")
        if (method.get("Algorithm", "") if method is not None else "") not in _FONT_OBFUSCATION:
            return True
    return False
