import re

from memo.ingest.budget import WINDOW, passage_pieces
from memo.ingest.split import split_record
from memo.ingest.split_code import module_name
from memo.ingest.split_markdown import MAX_TOKENS, MIN_TOKENS, split_markdown
from memo.ingest.split_text import split_conversation, split_paragraphs
from memo.ingest.windows import MAX_WORDS, split_words
from memo.stored import PassageDraft, RecordDraft
from memo.text.tokens import count_tokens

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
    words = [f"word{i}." for i in range(3 * MAX_WORDS)]
    parts = split_markdown("# Top\n## Long\n\n" + " ".join(words))
    assert len(parts) > 1
    assert all(p.section == "Top > Long" for p in parts)
    assert all(count_tokens(f"{p.section}\n{p.text}") <= MAX_TOKENS + MIN_TOKENS for p in parts)
    assert " ".join(p.text for p in parts).split() == words


def test_markdown_passages_fit_the_model_window_in_tokens():
    """Code holds several tokens per word: a section of 150 words of code is longer than
    the 256 tokens the embedding model reads, so it is cut (words alone would not)."""
    code = "\n".join(f"fs.writeFileSync(path.join(dir, `f${i}.json`), JSON.stringify({{ i: {i} }}));"
                     for i in range(25))
    parts = split_markdown(f"# Api\n\n## Example\n\n```js\n{code}\n```\n")
    assert len(code.split()) < MAX_WORDS and len(parts) > 1
    assert all(count_tokens(f"{p.section}\n{p.text}") <= MAX_TOKENS + MIN_TOKENS for p in parts)


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


def _options(n: int) -> str:
    return "\n".join(f"* `opt{i}` {{string}} What option {i} does, in a few more words here." for i in range(n))


def test_long_list_gives_one_passage_per_item_with_its_lead_in():
    """Each list item is a passage of its own (issue 28.5: packed items blur into one
    vector); the lead-in line before the list opens the first item's passage."""
    md = "# Api\n\n## `f(options)`\n\nThe following options are accepted:\n\n" + _options(60) + "\n"
    parts = split_markdown(md)
    assert len(parts) == 60 and all(p.section == "Api > f(options)" for p in parts)
    assert parts[0].text == "The following options are accepted:\n\n- opt0 {string} What option 0 does, in a few more words here."
    assert [p.text.split("\n")[-1] for p in parts] == [f"- opt{i} {{string}} What option {i} does, in a few more words here."
                                                       for i in range(60)]


def test_long_code_fence_is_cut_between_lines_and_reopened():
    code = "\n".join(f"const value{i} = compute({i}, 'some', 'words', 'here');" for i in range(120))
    md = f"# Guide\n\n## Example\n\nRun this:\n\n```js\n{code}\n```\n\nDone.\n"
    parts = split_markdown(md)
    assert len(parts) > 1
    for p in parts:
        assert p.text.count("```") % 2 == 0
        assert "\n```js\n" in "\n" + p.text + "\n"
    lines = [ln for p in parts for ln in p.text.split("\n") if ln.startswith("const ")]
    assert lines == code.split("\n")


def test_overload_heading_stays_with_the_long_body():
    """``## f(a)`` directly above ``## f(a, b)``: the first signature opens the section; a
    long body must not leave it as a passage of its own."""
    md = "# Util\n\n## `f(a)`\n## `f(a, b)`\n\n" + _options(60) + "\n"
    parts = split_markdown(md)
    assert parts[0].text.startswith("f(a)\n\n- opt0")
    assert len(parts) == 60 and all(p.text.count("- opt") == 1 for p in parts)


def test_short_tail_of_a_long_section_joins_the_passage_before():
    body = " ".join(f"Sentence number {i} says something." for i in range(45))   # 225 words
    parts = split_markdown(f"# Top\n\n## Long\n\n{body}\n\nA short closing line.\n")
    assert all(len(p.text.split()) >= 40 for p in parts)
    assert parts[-1].text.endswith("A short closing line.")


def test_long_section_keeps_every_word_in_order_across_kinds():
    """Nested list with code inside an item, a long table, a block quote and a paragraph,
    each longer than a passage, CRLF line ends: every word is kept, in order, and every
    code fence a passage opens it closes."""
    items = "\n".join(f"* item{i} {{string}} text of item {i}.\n  * sub{i} more words here {i}." for i in range(40))
    code_item = "* coded\n\n  ```js\n" + "\n".join(f"  call{i}(a, b, c);" for i in range(80)) + "\n  ```\n"
    table = "| name | value |\n|---|---|\n" + "\n".join(f"| row{i} | some value {i} words |" for i in range(80))
    quote = "\n".join(f"> quoted line {i} with several words." for i in range(80))
    para = " ".join(f"Sentence {i} has a few words." for i in range(80))
    md = f"# Doc\n\n## Part\n\n{items}\n{code_item}\n{table}\n\n{quote}\n\n{para}\n".replace("\n", "\r\n")
    parts = split_markdown(md)
    assert len(parts) > 5 and all(p.section == "Doc > Part" for p in parts)
    got = [w for p in parts for w in p.text.split() if not w.startswith("```")]
    for word in ("item0", "sub39", "call0(a,", "call79(a,", "row0", "row79", "line", "Sentence"):
        assert word in got
    order = [w for w in got if re.fullmatch(r"(item|sub|call|row)\d+\S*", w)]
    expect = ([w for i in range(40) for w in (f"item{i}", f"sub{i}")] + [f"call{i}(a," for i in range(80)]
              + [f"row{i}" for i in range(80)])
    assert order == expect
    assert all(p.text.count("```") % 2 == 0 for p in parts)


def test_list_items_are_never_packed_and_every_passage_fits_the_window():
    for n in (1, 2, 20, 79):
        md = "# Api\n\n## f\n\n" + "\n".join(f"* opt{i} {{string}} What option {i} does here." for i in range(n)) + "\n"
        parts = split_markdown(md)
        assert [p.text for p in parts] == [f"- opt{i} {{string}} What option {i} does here." for i in range(n)]
        assert all(passage_pieces(p.section, p.text) <= WINDOW for p in parts)


RELNOTES = """Git v2.39 Release Notes
=======================

UI, Workflows & Features
------------------------

 * "git grep" learned to expand the sparse-index more lazily and on
   demand in a sparse checkout.

 * By default, use of fsmonitor on a repository on networked
   filesystem is disabled. Add knobs to make it workable on macOS.

 * "git shortlog" learned to group by the "format" string.

Fixes since v2.38
-----------------

 * The approxidate parser learns to parse "yesterday noon".
   (merge 1234abcd jc/approxidate later to maint).

 * "git merge-tree" crashed when given a nonexistent commit:
   - it now reports the bad object name;
   - and exits with status 128.

 * Other code cleanup, docfix, build fix, etc.
"""


def test_release_notes_give_one_passage_per_entry_under_its_heading():
    parts = split_markdown(RELNOTES, title="2.39.0.txt")
    feats = "Git v2.39 Release Notes > UI, Workflows & Features"
    fixes = "Git v2.39 Release Notes > Fixes since v2.38"
    assert [p.section for p in parts] == [feats] * 3 + [fixes] * 3
    assert [p.text.split("\n")[0] for p in parts] == [
        '- "git grep" learned to expand the sparse-index more lazily and on',
        "- By default, use of fsmonitor on a repository on networked",
        '- "git shortlog" learned to group by the "format" string.',
        '- The approxidate parser learns to parse "yesterday noon".',
        '- "git merge-tree" crashed when given a nonexistent commit:',
        "- Other code cleanup, docfix, build fix, etc."]
    assert parts[4].text.endswith("- and exits with status 128.")     # sub-items stay with their entry


def test_plain_text_changelog_gives_one_passage_per_entry():
    text = ("gzip (1.12-1) unstable; urgency=high\n\n"
            "  * new upstream release\n"
            "    - zgrep: fix arbitrary-file-write vulnerability\n"
            "    - report correct length of 4 GiB and larger files\n"
            "  * update Standards-Version\n"
            "  * drop patch applied upstream\n\n"
            " -- Milan Kupcevic <milan@debian.org>  Sat, 09 Apr 2022 20:43:31 -0400\n\n"
            "Changes in 1.11:\n"
            "- faster\n"
            "- smaller\n")
    parts = split_paragraphs(text, section="changelog.Debian")
    assert [p.text for p in parts] == [
        "gzip (1.12-1) unstable; urgency=high",
        "* new upstream release\n    - zgrep: fix arbitrary-file-write vulnerability\n"
        "    - report correct length of 4 GiB and larger files",
        "* update Standards-Version",
        "* drop patch applied upstream",
        "-- Milan Kupcevic <milan@debian.org>  Sat, 09 Apr 2022 20:43:31 -0400",
        "Changes in 1.11:\n\n- faster",
        "- smaller"]
    assert {p.section for p in parts} == {"changelog.Debian"}


def test_a_long_item_and_a_long_plain_paragraph_are_cut_to_the_window():
    long_item = "* " + " ".join(f"approxidate{i}" for i in range(400))
    md = "# Notes\n\n" + long_item + "\n* short item\n"
    parts = split_markdown(md)
    assert len(parts) > 2 and parts[-1].text == "- short item"
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in parts)
    prose = " ".join(f"Sentence {i} names approxidate and commit-graph." for i in range(200))
    plain = split_paragraphs(prose + "\n\n" + "!" * 3000, section="NEWS")
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in plain)
    assert "".join("".join(p.text.split()) for p in plain) == "".join(prose.split()) + "!" * 3000


def test_a_run_of_empty_headings_opens_the_last_section_once():
    """Three sibling headings and one body: each signature is in the last section, once (the
    first was also a passage of its own under the second heading: a note's empty "Agenda"
    and "Outcome" headings gave "Agenda" twice)."""
    parts = split_markdown("# Util\n\n## `f(a)`\n## `f(a, b)`\n## `f(a, b, c)`\n\nThe body.\n")
    assert [(p.section, p.text) for p in parts] == [("Util > f(a, b, c)", "f(a)\n\nf(a, b)\n\nThe body.")]
    note = split_markdown("# Meeting\n\n## Agenda\n\n## Outcome\n\n## Action items\n\nCall Bruno.\n")
    assert " ".join(p.text for p in note).split().count("Agenda") == 1
