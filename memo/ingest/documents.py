"""The binary documents a file import reads (PDF, Word, EPUB), by extension, and the converter of each: the
one list files.py (what is read) and split.py (split as markdown) ask."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memo.ingest.converted import Converted, Unread
from memo.ingest.docx_text import DOCX_EXTENSIONS, docx_to_markdown
from memo.ingest.epub_text import EPUB_EXTENSIONS, epub_to_markdown
from memo.ingest.pdf_text import PDF_EXTENSIONS, pdf_to_markdown

CONVERTERS: Mapping[str, Callable[[bytes], Converted | Unread]] = {
    **dict.fromkeys(PDF_EXTENSIONS, pdf_to_markdown),
    **dict.fromkeys(DOCX_EXTENSIONS, docx_to_markdown),
    **dict.fromkeys(EPUB_EXTENSIONS, epub_to_markdown),
}
DOCUMENT_EXTENSIONS = frozenset(CONVERTERS)
