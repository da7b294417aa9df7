"""What a document converter gives (``memo.ingest.documents``): a binary document (PDF, Word)
read as the markdown memo splits and indexes, or why it gives no text."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass

# A document's bytes are mostly fonts, images and packaging: a 300-page PDF manual is ~1.5
# MB, a paper with figures 5-20 MB for 60 KB of text.  --max-bytes caps the text a document
# gives; the file itself may be this many times larger before it is refused unread.
DOCUMENT_BYTES_PER_TEXT_BYTE = 20

_MARKDOWN_CHARS = re.compile(r"([\\`*_\[\]<>#&!|~])")
_RULE = re.compile(r"^[-=+_*\s]{3,}$")


@dataclass(frozen=True, slots=True)
class Converted:
    """A document's text as markdown: ``title`` its own (None: the file's name), ``meta``
    what the record's meta keeps of it (``converted_from``, ``pages``), ``notices`` what was
    left out and why."""

    title: str | None
    markdown: str
    meta: Mapping[str, object]
    notices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unread:
    """Why a document gives no text: ``empty`` when it has none to give (scanned pages, an
    empty document), which an import skips as an empty file, else it is refused (damaged,
    needs a password)."""

    reason: str
    empty: bool = False


def escape_markdown(text: str) -> str:
    """``text`` as markdown that reads back as ``text``: a "# define", "<stdio.h>", "*.txt" or
    a line of "===" in a document is its text, not markup."""
    if _RULE.match(text):
        return "\\" + text
    return _MARKDOWN_CHARS.sub(r"\\\1", text)


def zip_member(zf: zipfile.ZipFile, name: str, size: int) -> bytes:
    """A member of a document's archive (Word, EPUB) of ``size`` bytes; its unpacked size is
    bounded (a zip bomb is refused: ValueError).  KeyError when the archive lacks it."""
    info = zf.getinfo(name)
    if info.file_size > size * DOCUMENT_BYTES_PER_TEXT_BYTE * 10 + (1 << 20):
        raise ValueError(f"{name} unpacks to {info.file_size} bytes")
    return zf.read(name)
