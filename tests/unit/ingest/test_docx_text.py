"""Word documents imported as the markdown of their text (memo.ingest.docx_text): before,
every ``.docx`` was ignored ("'.docx' files are not imported")."""

from __future__ import annotations

import copy
from pathlib import Path

from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn

from memo import ops
from memo.ingest.converted import Converted, Unread
from memo.ingest.docx_text import docx_to_markdown
from memo.ingest.split import split_record
from memo.stored import RecordDraft
from tests.docx_files import make_docx


def _sections(data: bytes) -> list[tuple[str, str]]:
    got = docx_to_markdown(data)
    assert isinstance(got, Converted), got
    return [(p.section, p.text) for p in split_record(RecordDraft(body=got.markdown, kind="doc", title="t",
                                                                  import_path="a.docx"))]


def test_headings_lists_and_tables_read_as_a_reader_sees_them() -> None:
    def build(doc) -> None:
        doc.add_paragraph("Kestrel DB Runbook", style="Title")
        doc.add_paragraph("How the team runs Kestrel DB.")
        doc.add_heading("Backups", level=1)
        doc.add_paragraph("Backups run every Friday.")
        doc.add_paragraph("snapshots kept 30 days", style="List Bullet")
        doc.add_paragraph("copies in two regions", style="List Number")
        doc.add_heading("Restore steps", level=2)
        table = doc.add_table(rows=2, cols=2)
        table.cell(0, 0).text, table.cell(0, 1).text = "step", "command"
        table.cell(1, 0).text, table.cell(1, 1).text = "stop writes", "kestrel freeze --all"
        doc.add_paragraph("Tab\tseparated, and a line")
        doc.paragraphs[-1].add_run().add_break()
        doc.paragraphs[-1].add_run("break.")

    got = docx_to_markdown(make_docx(build))
    assert isinstance(got, Converted)
    assert (got.title, got.meta) == ("Kestrel DB Runbook", {"converted_from": "docx"})
    assert _sections(make_docx(build)) == [
        ("Kestrel DB Runbook", "How the team runs Kestrel DB."),
        ("Backups", "Backups run every Friday."),          # a passage per paragraph, as for markdown
        ("Backups", "- snapshots kept 30 days"),
        ("Backups", "- copies in two regions"),
        ("Backups > Restore steps", "step | command\nstop writes | kestrel freeze --all\n\nTab separated, and a line\nbreak."),
    ]


def test_the_document_properties_title_wins_and_a_style_based_on_a_heading_is_one() -> None:
    def build(doc) -> None:
        mine = doc.styles.add_style("Team Heading", WD_STYLE_TYPE.PARAGRAPH)
        mine.base_style = doc.styles["Heading 2"]
        doc.add_heading("Operations", level=1)
        doc.add_paragraph("Failover", style="Team Heading")
        doc.add_paragraph("A standby is promoted after three missed heartbeats.")

    got = docx_to_markdown(make_docx(build, title="Kestrel DB Operations"))
    assert got.title == "Kestrel DB Operations"
    assert _sections(make_docx(build)) == [
        ("Operations > Failover", "A standby is promoted after three missed heartbeats.")]


def test_a_localised_words_heading_styles_are_found_by_their_names() -> None:
    """German Word writes style ids "berschrift1"; the style's name stays "heading 1"."""
    def build(doc) -> None:
        doc.add_heading("Sicherung", level=1)
        doc.add_paragraph("Jeden Freitag.")
        styles = doc.styles.element
        for st in styles.findall(qn("w:style")):
            if st.get(qn("w:styleId")) == "Heading1":
                st.set(qn("w:styleId"), "berschrift1")
                ppr = st.find(qn("w:pPr"))
                if ppr is not None and ppr.find(qn("w:outlineLvl")) is not None:
                    ppr.remove(ppr.find(qn("w:outlineLvl")))
        for p in doc.paragraphs:
            ps = p._p.pPr.find(qn("w:pStyle")) if p._p.pPr is not None else None
            if ps is not None and ps.get(qn("w:val")) == "Heading1":
                ps.set(qn("w:val"), "berschrift1")

    assert _sections(make_docx(build)) == [("Sicherung", "Jeden Freitag.")]


def test_deleted_text_of_tracked_changes_and_markup_characters() -> None:
    def build(doc) -> None:
        p = doc.add_paragraph("Keep this, ")
        run = copy.deepcopy(p.runs[0]._r)
        run.find(qn("w:t")).tag = qn("w:delText")
        deleted = p._p.makeelement(qn("w:del"), {})
        deleted.append(run)
        p._p.append(deleted)
        p.add_run("#include <stdio.h> and *.txt or __init__")

    md = docx_to_markdown(make_docx(build)).markdown
    assert "Keep this," in md and md.count("Keep this") == 1
    assert _sections(make_docx(build)) == [("t", "Keep this, #include <stdio.h> and *.txt or __init__")]


def test_what_cannot_be_read_says_why() -> None:
    ole = docx_to_markdown(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    assert isinstance(ole, Unread) and not ole.empty and "password-protected" in ole.reason
    cut = docx_to_markdown(make_docx(lambda d: d.add_paragraph("x"))[:300])
    assert isinstance(cut, Unread) and cut.reason.startswith("not a readable Word document")
    empty = docx_to_markdown(make_docx(lambda d: d.add_paragraph("   ")))
    assert isinstance(empty, Unread) and empty.empty


def test_a_docx_file_is_imported_as_a_document(fresh_db, tmp_path: Path) -> None:
    folder = tmp_path / "office"
    folder.mkdir()

    def build(doc) -> None:
        doc.add_heading("Replication", level=1)
        doc.add_paragraph("Every write goes to two standbys.")

    (folder / "ops.docx").write_bytes(make_docx(build, title="Kestrel DB Operations"))
    (folder / "blank.docx").write_bytes(make_docx(lambda d: None))
    rep = ops.import_path(fresh_db, folder)
    assert rep.added == 1
    assert [(i.path, i.reason) for i in rep.ignored_files] == [("blank.docx", "Word document without text")]
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert (rec.kind, rec.title, rec.meta["converted_from"]) == ("doc", "Kestrel DB Operations", "docx")
    assert [(p.section, p.text) for p in rec.passages] == [("Replication", "Every write goes to two standbys.")]
