"""PDF documents imported as the markdown of their text layer (memo.ingest.pdf_text): before,
every ``.pdf`` was ignored ("'.pdf' files are not imported"), so papers, manuals and reports
could not be searched at all."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memo import ops
from memo.ingest.converted import Converted, Unread
from memo.ingest.pdf_text import _line, pdf_to_markdown
from memo.ingest.split import split_record
from memo.ops.importer import ImportOptions
from memo.stored import RecordDraft
from tests.fast_examples import examples
from tests.pdf_files import make_pdf

FULL = "This line of body text runs as wide as the page allows, as a full justified line."


def _md(pdf: bytes) -> str:
    got = pdf_to_markdown(pdf)
    assert isinstance(got, Converted), got
    return got.markdown


def _sections(pdf: bytes, name: str = "manual.pdf") -> list[tuple[str, str]]:
    draft = RecordDraft(body=_md(pdf), kind="doc", title="manual", import_path=name)
    return [(p.section, p.text) for p in split_record(draft)]


def test_the_outline_gives_nested_headings_where_the_pages_print_them() -> None:
    pdf = make_pdf([
        ["A Manual", "1 Introduction", "What the library does.", "1.1 Scope", "Only small things."],
        ["2 Usage", "Call it twice.", "2.1 Options in", "depth", "Set the flags."],
    ], outline=[(1, "Introduction", 0), (2, "Scope", 0), (1, "Usage", 1), (2, "Options in depth", 1)])
    assert _sections(pdf) == [
        ("manual", "A Manual"),
        ("Introduction", "What the library does."),
        ("Introduction > Scope", "Only small things."),
        ("Usage", "Call it twice."),
        ("Usage > Options in depth", "Set the flags."),     # a title wrapped over two lines
    ]
    got = pdf_to_markdown(pdf)
    assert isinstance(got, Converted) and got.meta == {"converted_from": "pdf", "pages": 2}


def test_a_heading_the_page_does_not_print_opens_its_page() -> None:
    pdf = make_pdf([["First page text."], ["Second page text."]], outline=[(1, "Appendix", 1)])
    assert _sections(pdf) == [("manual", "First page text."), ("Appendix", "Second page text.")]


def test_running_headers_footers_and_page_numbers_are_dropped() -> None:
    pages = [[f"Chapter 2: Naming {n + 5}", f"Text of page {n}.", f"- {n + 5} -"] for n in range(4)]
    pages.append(["Twice at the top", "Fifth page.", "v"])
    pages.append(["Twice at the top", "Sixth page.", "Page 11 of 12"])
    md = _md(make_pdf(pages))
    assert "Chapter" not in md and "- 5 -" not in md and "Page 11" not in md and "\nv\n" not in md
    assert md.count("Twice at the top") == 2          # on two pages only: text, not furniture
    assert all(f"Text of page {n}." in md for n in range(4))


def test_contents_and_index_lines_are_dropped() -> None:
    md = _md(make_pdf([["Contents", "1 Introduction . . . . . . . . . 3", "Naming ........ 12",
                        "The body says 3.5 . . . and more."]]))
    assert "Introduction" not in md and "Naming" not in md
    assert "The body says 3.5" in md


def test_lines_join_into_paragraphs_and_hyphenated_words_into_words() -> None:
    md = _md(make_pdf([
        [FULL, "This management of infor-", "mation is a day-to-", "day task.", "Short end.",
         "• first item,", "• second item.", FULL, "and a sentence cut by the page"],
        ["break goes on here."],
    ]))
    assert md.split("\n\n") == [
        f"{FULL} This management of information is a day-to-day task.",   # a short line ends a sentence
        "Short end.",
        "- first item,", "- second item.",
        f"{FULL} and a sentence cut by the page break goes on here.",
    ]


def test_a_compound_broken_at_its_hyphen_keeps_it() -> None:
    """Joining every line-end hyphen made "commaseparated" and valgrind's "--show-leakkinds"."""
    md = _md(make_pdf([[FULL, "Values are comma-", "separated; a comma-separated list.", FULL,
                        "Use --show-leak-", "kinds=all, a man-", "agement task and a tweaked", FULL,
                        "codebook, or a tweaked-", "codebook."]]))
    assert "comma-separated; a comma-separated" in md and "--show-leak-kinds=all" in md
    assert "management task" in md and "tweaked-codebook." in md


def test_markdown_characters_in_the_text_stay_text() -> None:
    lines = ["# define BUF 64", "#include <stdio.h> and *.txt or *.md files", "[1]: a reference",
             "===", "a | b", "Use __init__ and `ticks` & more."]
    assert [t for _, t in _sections(make_pdf([lines]), "x.pdf")] == [" ".join(lines)]


def test_ligatures_and_soft_hyphens_are_letters() -> None:
    assert _md(make_pdf([["co\u00adoperation"]])) == "cooperation"
    assert _line("ef\ufb01cient  o\ufb00ice\x00") == "efficient office"     # Helvetica's encoding has no ligatures


def test_the_title_is_the_documents_own_unless_a_generators_default() -> None:
    assert pdf_to_markdown(make_pdf([["x"]], title="Kestrel DB Operations Guide")).title == "Kestrel DB Operations Guide"
    for junk in ("", "Microsoft Word - draft3.docx", "untitled"):
        assert pdf_to_markdown(make_pdf([["x"]], title=junk)).title is None


def test_what_cannot_be_read_says_why_and_what_to_do() -> None:
    locked = pdf_to_markdown(make_pdf([["secret"]], password="pw"))
    assert isinstance(locked, Unread) and not locked.empty and "needs a password" in locked.reason
    assert "qpdf" in locked.reason
    assert _md(make_pdf([["permissions only"]], empty_password=True)) == "permissions only"
    broken = pdf_to_markdown(b"%PDF-1.4\n1 0 obj <<")
    assert isinstance(broken, Unread) and broken.reason.startswith("not a readable PDF")
    scanned = pdf_to_markdown(make_pdf([[], []]))
    assert isinstance(scanned, Unread) and scanned.empty and "OCR" in scanned.reason


def test_a_damaged_file_prints_no_warnings(capfd) -> None:
    """pypdf logs each oddity; with logging unconfigured Python printed them on stderr."""
    pdf_to_markdown(make_pdf([["fine text"]])[:-40])       # the cross-reference table cut off
    pdf_to_markdown(b"%PDF-1.4\n1 0 obj <<")
    assert capfd.readouterr().err == ""


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.lists(st.text(alphabet=st.sampled_from(list("ab1.-•# <>*_()\\ ")), max_size=30), max_size=6),
                min_size=1, max_size=4))
def test_any_pages_convert_and_split_without_an_error(pages: list[list[str]]) -> None:
    got = pdf_to_markdown(make_pdf(pages, outline=[(1, "a", 0)]))
    if isinstance(got, Converted):
        split_record(RecordDraft(body=got.markdown, kind="doc", import_path="x.pdf")) if got.markdown.strip(" -#\\") else None


def test_a_pdf_file_is_imported_as_a_document(fresh_db, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "guide.pdf").write_bytes(make_pdf(
        [["1 Replication", "Kestrel DB replicates every write to two standbys."]],
        outline=[(1, "Replication", 0)], title="Kestrel DB Operations Guide"))
    (folder / "scan.pdf").write_bytes(make_pdf([[]]))
    (folder / "locked.pdf").write_bytes(make_pdf([["secret"]], password="pw"))
    rep = ops.import_path(fresh_db, folder)
    assert rep.added == 1
    assert [(i.path, i.reason.split(":")[0]) for i in rep.ignored_files] == [
        ("scan.pdf", "PDF without a text layer (scanned pages or images of text)")]
    assert [(r.path, r.reason.split(":")[0]) for r in rep.rejected] == [
        ("locked.pdf", "encrypted PDF that needs a password")]
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert (rec.kind, rec.title, rec.meta["converted_from"], rec.meta["pages"]) == (
        "doc", "Kestrel DB Operations Guide", "pdf", 1)
    assert [(p.section, p.text) for p in rec.passages] == [
        ("Replication", "Kestrel DB replicates every write to two standbys.")]


def test_max_bytes_caps_a_pdfs_text_not_its_fonts(fresh_db, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf = make_pdf([[FULL] * 40])
    (folder / "long.pdf").write_bytes(pdf)
    assert len(pdf) > 1500
    rep = ops.import_path(fresh_db, folder, ImportOptions(max_bytes=1500))   # the file is larger, its text too
    assert [r.reason.split(",")[0] for r in rep.rejected] == ["the document's text is 3279 bytes"]   # 40 lines of 81 characters, joined
    rep = ops.import_path(fresh_db, folder, ImportOptions(max_bytes=4000))
    assert rep.added == 1


def test_without_an_outline_the_printed_contents_give_the_headings() -> None:
    """bzip2's and zlib's CRC manuals have no outline but print their contents: their entries
    become headings where the body prints them; an index at the end is not contents."""
    pdf = make_pdf([
        ["Contents", "1 Introduction 2", "1.1 Scope . . . . . . . . . 2", "2 Usage . . . . . . . . 3",
         "2.1 Options in depth . . . . . . . . 3"],
        ["1 Introduction", "What the tool does.", "1.1 Scope", "Small files only."],
        ["2 Usage", "Run it twice.", "2.1 Options in", "depth", "Flags go first.", "threads"],
        ["Index", "threads . . . . . . . . 3", "Usage . . . . . . . 3", "scope . . . . . . . 2"],
    ])
    assert _sections(pdf) == [
        ("1 Introduction", "What the tool does."),
        ("1 Introduction > 1.1 Scope", "Small files only."),
        ("2 Usage", "Run it twice."),
        ("2 Usage > 2.1 Options in depth", "Flags go first. threads Index"),
    ]


def test_a_few_dot_leader_lines_are_not_contents() -> None:
    pdf = make_pdf([["Totals . . . . . . . 12", "Body text that says Totals."], ["Totals", "More text."]])
    assert [s for s, _ in _sections(pdf)] == ["manual"] * len(_sections(pdf))


def test_untitled_documents_are_known_by_their_file_name(fresh_db, tmp_path: Path) -> None:
    """Not by their first heading: "1. Introduction" titled bzip2's manual and nettle's."""
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "bzip2-manual.pdf").write_bytes(make_pdf(
        [["Title page text.", "1. Introduction", "bzip2 compresses files."]], outline=[(1, "1. Introduction", 0)]))
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pdf").write_text("a text file saved under the wrong name\n")
    rep = ops.import_path(fresh_db, folder)
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert rec.title == "bzip2-manual.pdf"
    assert [(p.section, p.text) for p in rec.passages][0] == ("bzip2-manual.pdf", "Title page text.")
    assert [(i.path, i.reason) for i in rep.ignored_files] == [("empty.pdf", "empty file (no text to import)")]
    assert [(r.path, r.reason.split(":")[0]) for r in rep.rejected] == [
        ("notes.pdf", "not a PDF (it does not start with %PDF-)")]


def test_a_page_that_cannot_be_read_is_named_and_the_rest_kept(monkeypatch) -> None:
    from pypdf import PageObject

    real = PageObject.extract_text
    calls = {"n": 0}

    def second_page_breaks(self, *a, **k):
        calls["n"] += 1
        if calls["n"] % 3 == 2:
            raise ValueError("damaged content stream")
        return real(self, *a, **k)

    monkeypatch.setattr(PageObject, "extract_text", second_page_breaks)
    got = pdf_to_markdown(make_pdf([["First page."], ["Second page."], ["Third page."]]))
    assert isinstance(got, Converted) and got.markdown == "First page. Third page."
    assert got.notices == ("1 of 3 pages could not be read and were left out (pages 2)",)
    monkeypatch.setattr(PageObject, "extract_text", lambda self, *a, **k: (_ for _ in ()).throw(ValueError("x")))
    none = pdf_to_markdown(make_pdf([["a"], ["b"]]))
    assert isinstance(none, Unread) and none.reason == "not a readable PDF (none of its 2 pages could be read)"
