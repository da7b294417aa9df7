"""Markdown through markdown-it-py (issue 15.1)."""

from pathlib import Path

import pytest

from memo.ingest.markdown_parse import front_matter, parse_markdown
from memo.ingest.split_markdown import split_markdown

NODE_LIKE = """# Errors

<!--introduced_in=v4.0.0-->

Some intro with a [link][EOF character] and `code`.

<a id="ERR_A"></a>

### `ERR_A`

First error, see [`fs.read()`][].

<!-- YAML
added: v1.0.0
-->

<a id="ERR_B"></a>

### `ERR_B`

Second error.

```js
// # not a heading
const x = 1;
```

[EOF character]: https://en.wikipedia.org/wiki/End-of-file
[`fs.read()`]: fs.md#fsreadfd-buffer-offset-length-position-callback
"""


def test_comments_anchors_and_link_definitions_are_not_text():
    parts = split_markdown(NODE_LIKE, title="errors.md")
    text = "\n".join(p.text for p in parts)
    assert "<!--" not in text and "<a id" not in text and "YAML" not in text
    assert "https://" not in text and "wikipedia" not in text
    assert [p.section for p in parts] == ["Errors", "Errors > ERR_A", "Errors > ERR_B"]
    a = next(p for p in parts if p.section.endswith("ERR_A"))
    assert "ERR_B" not in a.text          # the anchor of the next error is not in this section
    assert "link" in parts[0].text and "code" in parts[0].text


def test_fenced_code_keeps_language_and_is_not_structure():
    b = split_markdown(NODE_LIKE)[-1]
    assert "```js\n// # not a heading\nconst x = 1;\n```" in b.text


def test_setext_lists_tables_and_quotes():
    md = "Title\n=====\n\n> Stability: 2\n\n- one\n- two\n  1. sub\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nPart\n----\ntext\n"
    parts = split_markdown(md)
    assert [p.section for p in parts] == ["Title"] * 4 + ["Title > Part"]
    assert [p.text for p in parts[:4]] == ["> Stability: 2", "- one", "- two\n  1. sub", "a | b\n1 | 2"]


def test_heading_only_note_is_content():
    for note in ("## Decision: we use WAL mode", "# TODO rotate the API keys", "### only\n"):
        parts = split_markdown(note)
        assert len(parts) == 1 and parts[0].text == parts[0].section == note.strip().lstrip("#").strip()


def test_front_matter_fields():
    meta, body = front_matter("---\ntitle: 'T'\ntags:\n  - adr\n  - db\ndate: 2024-05-01\n---\n# H\n")
    assert meta == {"title": "T", "tags": ["adr", "db"], "date": "2024-05-01"} and body == "# H\n"
    assert parse_markdown(body)[0].text == "H"


def test_split_is_stable():
    assert split_markdown(NODE_LIKE, title="x") == split_markdown(NODE_LIKE, title="x")


def test_add_heading_only_note_and_jsonl_heading_line(tmp_path: Path):
    from memo.ops import ImportOptions, add_record, get, import_path
    from memo.store.db import open_db
    from memo.stored import RecordDraft
    conn = open_db(tmp_path / "m.db")
    rep = add_record(conn, RecordDraft(body="## Decision: we use WAL mode", kind="note"))
    assert get(conn, rep.record_id).passages[0].text == "Decision: we use WAL mode"
    f = tmp_path / "r.jsonl"
    f.write_text('{"text": "### Heading only line", "kind": "doc"}\n')
    out = import_path(conn, f, ImportOptions())
    assert out.added == 1 and not out.rejected


@pytest.mark.parametrize("name", ["errors.md", "fs.md", "packages.md"])
def test_node_docs_if_present(name: str):
    path = Path("/usr/share/doc/nodejs/api") / name
    if not path.exists():
        pytest.skip("Node.js API docs not installed")
    parts = split_markdown(path.read_text())
    assert parts and not any("<!--" in p.text or "<a id=" in p.text or "]: http" in p.text for p in parts)


def test_sibling_heading_with_no_body_opens_the_next_section():
    md = "# Util\n\n## `f(a)`\n## `f(a, b)`\n\nDoes f.\n\n## Parent\n\n### Child\n\ntext\n"
    parts = split_markdown(md)
    assert [(p.section, p.text) for p in parts] == [("Util > f(a, b)", "f(a)\n\nDoes f."),
                                                    ("Util > Parent > Child", "text")]


def test_a_word_in_angle_brackets_that_is_not_html_stays_text():
    """CommonMark calls any ``<word>`` raw HTML: the passages lost ``<Buffer>`` of
    ``Promise<Buffer>``, a placeholder ``<type>`` and a custom element, so no search by the
    words the author wrote could find them.  HTML's own tags still go."""
    md = ("# Notes\n\nReturns a Promise<Buffer> or List<T>; the <my-widget> tag; "
          "<kbd>Ctrl</kbd>+<KBD>C</KBD>, <!-- hidden --> <b>bold</b>, Box<B>.\n\n"
          "<Buffer>\n\n"
          "<div class=\"x\">Some <em>text</em> &lt;here&gt; in /srv/<type>/docs</div>\n\n"
          "<details><Summary>Landing steps</Summary></details>\n")
    texts = [b.text for b in parse_markdown(md) if not b.heading]
    assert texts[0] == ("Returns a Promise<Buffer> or List<T>; the <my-widget> tag; Ctrl+C,  bold, Box<B>.")
    assert texts[1] == "<Buffer>"
    assert texts[2] == "Some text <here> in /srv/<type>/docs"
    assert texts[3] == "Landing steps"


def test_html_markup_is_recognised_in_any_case_but_a_lone_capital():
    from memo.ingest.html_tags import is_markup
    assert is_markup("<a id=\"x\">") and is_markup("</Div>") and is_markup("<BR/>") and is_markup("<!-- c -->")
    assert is_markup("<!DOCTYPE html>") and is_markup("<?xml version=\"1.0\"?>")
    assert not any(is_markup(t) for t in ("<T>", "<B>", "<Buffer>", "<my-widget>", "<path>", "</Foo>",
                                          "<![CDATA[x]]>"))
