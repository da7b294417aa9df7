"""Small real PDF files for the tests: pages of text in a standard font, an outline, an
information dictionary, encryption, written with pypdf (the reader memo uses is pypdf too,
so each test also states what a PDF's text layer gives)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def _literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: Sequence[Sequence[str]], *, outline: Sequence[tuple[int, str, int]] = (),
             title: str | None = None, password: str | None = None, empty_password: bool = False) -> bytes:
    """A PDF whose page ``n`` prints ``pages[n]``'s lines top down (Helvetica 11 pt, a line
    each); ``outline``: (level from 1, title, page index) entries in order; ``password``: the
    user password it needs to open (``empty_password``: encrypted, opening with "")."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"), NameObject("/Encoding"): NameObject("/WinAnsiEncoding")}))
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
        ops += [f"({_literal(line)}) Tj T*" for line in lines]
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    parents: list[object] = []
    for level, heading, index in outline:
        parent = parents[level - 2] if level > 1 else None
        item = writer.add_outline_item(title=heading, page_number=index, parent=parent)
        parents = [*parents[: level - 1], item]
    if title is not None:
        writer.add_metadata({"/Title": title})
    if password is not None or empty_password:
        writer.encrypt(user_password=password or "", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
