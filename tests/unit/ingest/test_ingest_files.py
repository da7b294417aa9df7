import os
from pathlib import Path

from memo.ingest.files import iter_files, list_files
from memo.ingest.jsonl import iter_jsonl
from memo.stored import RecordDraft

T = RecordDraft(body="", namespace="ns", tags=("imp",), author="me")


def _items(root: Path, **kw):
    return {i.rel: i for i in iter_files(root.resolve(), T, **kw)}


def test_walk_kinds_titles_and_ignores(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Alpha\ntext")
    (tmp_path / "b.txt").write_text("plain")
    (tmp_path / "c.py").write_text("def f():\n    'doc'\n")
    (tmp_path / "img.png").write_bytes(b"\x89PNG")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.md").write_text("# no")
    items = _items(tmp_path)
    assert sorted(items) == ["b.txt", "c.py", "docs/a.md", "img.png"]
    assert items["docs/a.md"].draft.title == "Alpha" and items["docs/a.md"].draft.kind == "doc"
    assert items["c.py"].draft.kind == "code" and items["c.py"].draft.import_path == "c.py"
    assert items["b.txt"].draft.title == "b.txt" and items["b.txt"].draft.namespace == "ns"
    assert items["img.png"].ignored


def test_rejects_oversize_binary_undecodable_skips_empty(tmp_path: Path):
    (tmp_path / "big.md").write_text("x" * 100)
    (tmp_path / "bin.txt").write_bytes(b"a\x00b")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "empty.md").write_text("  \n")
    (tmp_path / "ok.md").write_text("fine")
    items = _items(tmp_path, max_bytes=50)
    assert "over the 50-byte cap" in items["big.md"].rejected
    assert "binary" in items["bin.txt"].rejected
    assert items["latin.txt"].draft.body == "caf\xe9"              # detected (issue 15.4)
    assert items["latin.txt"].draft.meta == {"encoding": "cp1252", "encoding_source": "detected"}
    assert items["empty.md"].rejected is None and items["empty.md"].ignored      # skipped (issue 32)
    assert "empty" in items["empty.md"].why_ignored
    assert items["ok.md"].draft is not None


def test_symlinks_leaving_root_are_rejected(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.md").write_text("inside")
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root / "in.md", root / "alias.md")
    os.symlink(root, root / "loop")
    items = _items(root)
    assert items["leak.md"].rejected == "symlink points outside the import root"
    assert items["leakdir"].rejected == "symlink points outside the import root"
    assert items["alias.md"].draft.body == "inside"
    assert items["loop"].ignored
    assert not any("secret" in (i.draft.body if i.draft else "") for i in items.values())


def test_single_file_root(tmp_path: Path):
    f = tmp_path / "n.md"
    f.write_text("# N\nx")
    assert list_files(f) == [(f, "n.md")]


def test_jsonl_lines_fields_and_rejections(tmp_path: Path):
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join([
        '{"text": "one", "kind": "doc", "tags": ["t"], "event_date": "2024-01-02", "trust": 0.5, "id": "e1"}',
        '{"body": "two", "namespace": "other", "tags": "a, b"}',
        'not json',
        '{"text": ""}',
        '{"text": "x", "trust": 2}',
        '{"text": "x", "bogus": 1}',
        '[1]',
        '{"text": "x", "kind": "bad"}',
        '',
    ]))
    items = list(iter_jsonl(f, "r.jsonl", T, max_bytes=1000))
    ok = [i.draft for i in items if i.draft]
    assert ok[0].body == "one" and ok[0].tags == ("imp", "t") and ok[0].trust == 0.5
    assert ok[0].ext_id == "e1" and ok[0].import_path == "r.jsonl" and ok[0].event_at == "2024-01-02"
    assert ok[1].namespace == "other" and ok[1].tags == ("imp", "a", "b") and ok[1].import_path == "r.jsonl:2"
    assert ok[1].author == "me"
    rej = {i.rel: i.rejected for i in items if i.rejected}
    assert set(rej) == {"r.jsonl:3", "r.jsonl:4", "r.jsonl:5", "r.jsonl:6", "r.jsonl:7", "r.jsonl:8"}
    assert "invalid JSON" in rej["r.jsonl:3"] and "unknown field" in rej["r.jsonl:6"]


def test_a_beir_corpus_read_as_jsonl_says_to_use_format_beir(tmp_path: Path):
    """A BEIR corpus.jsonl imported without --format beir was rejected line by line with no hint."""
    f = tmp_path / "corpus.jsonl"
    f.write_text('{"_id": "d1", "title": "T", "text": "one", "metadata": {}}\n'
                 '{"_id": "d2", "body": "two"}\n{"text": "x", "bogus": 1}\n')
    rej = {i.rel: i.rejected for i in iter_jsonl(f, "corpus.jsonl", T, max_bytes=1000)}
    assert rej["corpus.jsonl:1"] == ("unknown field(s) _id, metadata; a BEIR corpus line (_id, text)? "
                                     "import the file with --format beir")
    assert rej["corpus.jsonl:2"] == "unknown field(s) _id"          # no text: not a BEIR line
    assert rej["corpus.jsonl:3"] == "unknown field(s) bogus"


def test_front_matter_title_and_jsonl_bom(tmp_path: Path):
    (tmp_path / "n.md").write_text("---\ntitle: From front matter\n---\n# Heading\ntext\n")
    assert _items(tmp_path)["n.md"].draft.title == "From front matter"
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"text": "with bom"}\n')
    assert [i.draft.body for i in iter_jsonl(f, "bom.jsonl", T, max_bytes=1000)] == ["with bom"]


def test_utf16_and_utf32_text_is_not_binary(tmp_path: Path):
    """UTF-16/32 text holds NUL bytes: with a byte-order mark, or --encoding naming the
    codec, it is decoded first and only a NUL *character* makes a file binary."""
    text = "réunion du comité, 会议\nsecond line"
    (tmp_path / "bom16.txt").write_bytes(text.encode("utf-16"))          # with its BOM
    (tmp_path / "bom32.txt").write_bytes(text.encode("utf-32"))
    (tmp_path / "nul16.txt").write_bytes("a\x00b".encode("utf-16"))      # a NUL character inside
    items = _items(tmp_path)
    assert items["bom16.txt"].draft.body == text == items["bom32.txt"].draft.body
    assert items["bom16.txt"].draft.meta == {"encoding": "utf-16", "encoding_source": "byte-order mark"}
    assert "binary" in items["nul16.txt"].rejected
    (tmp_path / "le.txt").write_bytes(text.encode("utf-16-le"))          # no BOM: only with --encoding
    assert "binary" in _items(tmp_path)["le.txt"].rejected
    named = _items(tmp_path, encoding="utf_16_le")["le.txt"]
    assert named.draft.body == text and named.draft.meta["encoding_source"] == "--encoding"


def test_a_note_of_front_matter_alone_is_ignored_not_rejected(tmp_path: Path):
    """An Obsidian placeholder (title, tags, aliases and no text) was rejected ("empty after
    splitting"), so every import of the vault exited 5; it is ignored as an empty file is."""
    (tmp_path / "placeholder.md").write_text("---\ntitle: Inbox placeholder\ntags: [inbox]\n---\n")
    (tmp_path / "real.md").write_text("---\ntitle: Real\n---\nA real note.\n")
    items = _items(tmp_path)
    held = items["placeholder.md"]
    assert held.ignored and held.empty and held.why_ignored == "only front matter (no text to import)"
    assert items["real.md"].draft.body.endswith("A real note.\n")


def test_a_markdown_note_without_a_heading_is_titled_by_its_name(tmp_path: Path):
    """Obsidian shows "Marta Nowak", not "Marta Nowak.md"; other files keep their extension."""
    (tmp_path / "Marta Nowak.md").write_text("Frontend engineer.\n")
    (tmp_path / "notes.txt").write_text("Plain text.\n")
    (tmp_path / "Headed.md").write_text("# The heading\n\nText.\n")
    items = _items(tmp_path)
    assert items["Marta Nowak.md"].draft.title == "Marta Nowak"
    assert items["notes.txt"].draft.title == "notes.txt"
    assert items["Headed.md"].draft.title == "The heading"
