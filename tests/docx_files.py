"""Small real Word documents for the tests, written with python-docx (Word's own package
layout: styles, numbering, core properties)."""

from __future__ import annotations

import io
from collections.abc import Callable

from docx import Document


def make_docx(build: Callable[[object], None], *, title: str | None = None) -> bytes:
    """A .docx that ``build(document)`` fills (python-docx's ``Document``)."""
    doc = Document()
    if title is not None:
        doc.core_properties.title = title
    build(doc)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()
