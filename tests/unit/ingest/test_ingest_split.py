from memo.ingest.split import split_record
from memo.ingest.split_code import module_name
from memo.ingest.split_markdown import split_markdown
from memo.ingest.split_text import split_conversation, split_paragraphs
from memo.ingest.windows import MAX_WORDS, split_words
from memo.types import PassageDraft, RecordDraft

MD = """Preamble line.

# Guide

Intro.

## Install

General steps.

### Linux

apt-get install memo

```sh
# not a heading
make
```

## Usage
Run it.

Setext Title
------------
Under setext.
"""


def test_markdown_sections_are_heading_paths():
    got = [(p.section, p.text) for p in split_markdown(MD, title="Doc")]
    assert got[0] == ("Doc", "Preamble line.")
    sections = [s for s, _ in got]
    assert sections == ["Doc", "Guide", "Guide > Install", "Guide > Install > Linux", "Guide > Usage",
                        "Guide > Setext Title"]
    linux = dict(got)["Guide > Install > Linux"]
    assert "# not a heading" in linux and "make" in linux


def test_markdown_long_section_windows_keep_header():
    body = "# Top\n## Long\n\n" + " ".join(f"word{i}." for i in range(3 * MAX_WORDS))
    parts = split_markdown(body)
    assert len(parts) == 3
    assert all(p.section == "Top > Long" for p in parts)
    assert all(len(p.text.split()) <= MAX_WORDS + 40 for p in parts)


def test_split_words_short_and_long():
    assert split_words("a b c") == ["a b c"]
    assert split_words("   ") == []
    long_sentence = " ".join(["w"] * 450)  # no sentence ends: cut by words
    chunks = split_words(long_sentence)
    assert [len(c.split()) for c in chunks] == [200, 200, 50]
    assert sum(len(c.split()) for c in chunks) == 450


def test_split_words_folds_short_tail():
    text = " ".join(f"s{i}." for i in range(210))  # 200 + a tail of 10 words
    assert [len(c.split()) for c in split_words(text)] == [210]


def test_python_code_by_symbol():
    src = '''"""Module doc."""
import os

def connect(path: str, *, readonly: bool = False) -> "Conn":
    """Open a connection."""
    return None

class Store(Base):
    """A store."""
    def put(self, key): """Put a key."""
    async def get(self, key): return 1

_private = 1
'''
    parts = split_record(RecordDraft(body=src, kind="code", import_path="memo/store/conn.py"))
    assert [p.section for p in parts] == ["memo.store.conn", "memo.store.conn.connect", "memo.store.conn.Store"]
    assert parts[1].text.startswith("def connect(path: str, *, readonly: bool=False) -> 'Conn'")
    assert "Open a connection." in parts[1].text
    assert "def put(self, key): Put a key." in parts[2].text and "async def get(self, key)" in parts[2].text
    assert "return None" not in parts[1].text


def test_python_syntax_error_falls_back():
    parts = split_record(RecordDraft(body="def broken(:\n  pass\n", kind="code", import_path="x.py"))
    assert parts and parts[0].section.startswith("x")


def test_generic_code_by_definition_lines():
    src = "// helper doc\nfunction foo(a) {\n  return 1;\n}\n\nexport class Bar {}\nfunc Baz() {}\n"
    parts = split_record(RecordDraft(body=src, kind="code", import_path="web/app.kt"))  # no grammar: line scan
    assert [p.section for p in parts] == ["web.app.foo", "web.app.Bar", "web.app.Baz"]
    assert parts[0].text.startswith("// helper doc")


def test_code_without_definitions_is_windowed():
    parts = split_record(RecordDraft(body="SELECT 1;\nSELECT 2;", kind="code", import_path="q.sql"))
    assert [(p.section, p.text) for p in parts] == [("q", "SELECT 1;\nSELECT 2;")]


def test_module_name():
    assert module_name("pkg/__init__.py", None) == "pkg"
    assert module_name(None, "Title") == "Title"
    assert module_name(None, None) == "module"


def test_conversation_turns_carry_speaker_and_date():
    text = "## 2023-05-08 14:00\nAlice: hi there\nBob: hello\nand more\n[2023-05-09] Alice: later"
    parts = split_conversation(text)
    assert [(p.speaker, p.event_at, p.text) for p in parts] == [
        ("Alice", "2023-05-08T14:00", "hi there"), ("Bob", "2023-05-08T14:00", "hello\nand more"),
        ("Alice", "2023-05-09", "later")]
    assert parts[0].section == "Alice @ 2023-05-08T14:00"


def test_conversation_default_date_from_record():
    parts = split_record(RecordDraft(body="Ann: x y", kind="conversation", event_at="2024-01-02"))
    assert parts[0].event_at == "2024-01-02" and parts[0].speaker == "Ann"


def test_plain_text_by_paragraphs_with_title_section():
    parts = split_paragraphs("one\ntwo\n\n\nthree", section="T")
    assert [(p.section, p.text) for p in parts] == [("T", "one\ntwo"), ("T", "three")]


def test_note_with_headings_uses_markdown():
    parts = split_record(RecordDraft(body="# A\nx\n# B\ny", kind="note"))
    assert [p.section for p in parts] == ["A", "B"]


def test_supplied_passages_are_kept():
    given = (PassageDraft(text="t1", section="s", speaker="Al", event_at="2020-01-01", ext_id="D1:1"),)
    assert split_record(RecordDraft(body="x", kind="conversation", passages=given)) == given


def test_empty_after_split_is_rejected():
    import pytest

    from memo.errors import ValidationError
    with pytest.raises(ValidationError):
        split_record(RecordDraft(body="\n\n", kind="note"))


def test_front_matter_is_not_indexed_and_gives_no_heading():
    from memo.ingest.split_markdown import front_matter
    text = "---\ntitle: \"My note\"\ntags: [a, b]\n---\nBody line.\n\n## Part\nMore.\n"
    meta, body = front_matter(text)
    assert meta == {"title": "My note", "tags": ["a", "b"]} and body.startswith("Body line.")
    parts = split_markdown(text, title="My note")
    assert [(p.section, p.text) for p in parts] == [("My note", "Body line."), ("Part", "More.")]
    assert front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")
