"""E-books imported as the markdown of their chapters in reading order (memo.ingest.epub_text):
before, every ``.epub`` was ignored."""

from __future__ import annotations

from pathlib import Path

from memo import ops
from memo.ingest.converted import Converted, Unread
from memo.ingest.epub_text import epub_to_markdown
from tests.epub_files import make_epub

BOOK = [
    ("c1.xhtml", "<h1>Chapter One</h1><p>The lighthouse keeper kept a log of every ship.</p>"),
    ("notes.xhtml", "<p>A footnote page read out of the flow.</p>"),
    ("chapter 2.xhtml", "<h1>Chapter Two</h1><h2>The storm</h2><p>The storm broke the &lt;lamp&gt; at midnight.</p>"),
]


def test_chapters_in_reading_order_without_navigation_or_non_linear_pages() -> None:
    got = epub_to_markdown(make_epub(BOOK, title="The Keeper", linear_no=["notes.xhtml"]))
    assert isinstance(got, Converted)
    assert (got.title, got.meta) == ("The Keeper", {"converted_from": "epub", "chapters": 2})
    assert got.markdown.split("\n\n") == [
        "# Chapter One", "The lighthouse keeper kept a log of every ship.",
        "# Chapter Two", "## The storm", "The storm broke the \\<lamp> at midnight."]


def test_drm_is_refused_and_font_obfuscation_is_not_drm() -> None:
    drm = epub_to_markdown(make_epub(BOOK, encryption="http://www.w3.org/2001/04/xmlenc#aes128-cbc"))
    assert isinstance(drm, Unread) and "DRM" in drm.reason and not drm.empty
    fonts = epub_to_markdown(make_epub(BOOK, encryption="http://www.idpf.org/2008/embedding"))
    assert isinstance(fonts, Converted)


def test_damaged_and_empty_books() -> None:
    cut = epub_to_markdown(make_epub(BOOK)[:200])
    assert isinstance(cut, Unread) and cut.reason.startswith("not a readable EPUB")
    empty = epub_to_markdown(make_epub([("c1.xhtml", "<p>  </p>")]))
    assert isinstance(empty, Unread) and empty.empty


def test_an_epub_is_imported_with_its_chapters_as_sections(fresh_db, tmp_path: Path) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "keeper.epub").write_bytes(make_epub(BOOK, title="The Keeper", linear_no=["notes.xhtml"]))
    rep = ops.import_path(fresh_db, folder)
    assert rep.added == 1
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert (rec.title, rec.meta["converted_from"], rec.meta["chapters"]) == ("The Keeper", "epub", 2)
    assert [(p.section, p.text) for p in rec.passages] == [
        ("Chapter One", "The lighthouse keeper kept a log of every ship."),
        ("Chapter Two > The storm", "The storm broke the <lamp> at midnight."),
    ]
