"""HTML pages imported as the markdown of their text (memo.ingest.html_text): before, every
``.html`` file was ignored, so saved pages and generated docs (Node's API pages, Sphinx)
could not be searched at all."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memo import ops
from memo.ingest.html_text import html_to_markdown
from tests.fast_examples import examples

PAGE = """<!DOCTYPE html><html><head><title>File system | Docs</title>
<style>h2 { color: red }</style><script>var toc = "Promise example";</script></head>
<body><nav><ul><li><a href="#x">Table of contents entry</a></li></ul></nav>
<details role="navigation" id="toc"><summary>Contents</summary><ul><li>Promise example</li></ul></details>
<div role="main">
<h2>File system<span><a class="mark" href="#file-system">#</a></span></h2>
<p>The <code>node:fs</code> module enables interacting with the file system &amp; more.</p>
<pre><code class="mjs">import * as fs from 'node:fs';</code><code class="cjs">const fs = require('node:fs');</code></pre>
<h3><code>fs.readFile(path[, options], callback)</code><a class="headerlink" href="#r">¶</a></h3>
<ul><li><code>path</code> &lt;string&gt; filename
  <ul><li><code>encoding</code> Default: <code>null</code></li></ul></li>
<li><code>callback</code> &lt;Function&gt;</li></ul>
<table><tr><th>Version</th><th>Changes</th></tr><tr><td>v18.0.0</td><td>Throws <code>ERR_INVALID_ARG_TYPE</code>.</td></tr></table>
<button>Copy</button><span aria-hidden="true">hidden words</span>
</div><footer>Outside the main content</footer></body></html>"""


def test_a_page_reads_as_its_markdown() -> None:
    title, md = html_to_markdown(PAGE)
    assert title == "File system | Docs"
    assert md.splitlines() == [
        "## File system", "",
        "The `node:fs` module enables interacting with the file system & more.", "",
        "```", "import * as fs from 'node:fs';", "const fs = require('node:fs');", "```", "",
        "### `fs.readFile(path[, options], callback)`", "",
        "- `path` \\<string> filename", "",
        "  - `encoding` Default: `null`", "",
        "- `callback` \\<Function>", "",
        "Version | Changes", "",
        "v18.0.0 | Throws `ERR_INVALID_ARG_TYPE`."]


def test_without_a_main_element_the_body_is_read_and_the_first_heading_titles_it() -> None:
    title, md = html_to_markdown("<body><h1>Release notes</h1><p>Fixed <b>two</b> bugs.<br>More later.</p>"
                                 "<script>alert(1)</script></body>")
    assert title == "Release notes"
    assert md == "# Release notes\n\nFixed two bugs.\n\nMore later."


def test_broken_markup_is_read_as_a_browser_would() -> None:
    title, md = html_to_markdown("<p>one <b>two</p></div><p>three<li>four")
    assert title is None and md == "one two\n\nthree\n\n- four"


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/=\"' abchpre1234&;#!-\n")), max_size=200))
def test_any_text_converts_without_an_error(html: str) -> None:
    title, md = html_to_markdown(html)
    assert isinstance(md, str) and (title is None or isinstance(title, str))


def test_an_html_file_is_imported_as_a_document(fresh_db, tmp_path: Path) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "fs.html").write_text(PAGE)
    (folder / "empty.html").write_text("<html><head><script>x()</script></head><body><nav>menu</nav></body></html>")
    rep = ops.import_path(fresh_db, folder)
    assert (rep.added, rep.rejected) == (1, ())
    assert [(i.path, i.reason) for i in rep.ignored_files] == [
        ("empty.html", "HTML page without text (only markup, scripts or navigation)")]
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert (rec.kind, rec.title, rec.meta["converted_from"]) == ("doc", "File system | Docs", "html")
    assert {p.section for p in rec.passages} == {"File system", "File system > fs.readFile(path[, options], callback)"}
    assert all("Table of contents entry" not in p.text and "hidden words" not in p.text for p in rec.passages)


def test_escaped_markup_in_a_page_stays_text(fresh_db, tmp_path: Path) -> None:
    """``&lt;div&gt;`` is a word the page shows: the markdown splitter read it as markup and
    dropped it, with headings or without."""
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_text("<h1>Tags</h1><p>Wrap it in a &lt;div&gt; element, or <code>&lt;T&gt;</code>.</p>")
    (folder / "b.html").write_text("<p>No heading: the &lt;span&gt; element.</p>")
    rep = ops.import_path(fresh_db, folder)
    texts = sorted(p.text for rid in rep.record_ids for p in ops.get(fresh_db, rid).passages)
    assert texts == ["No heading: the <span> element.", "Wrap it in a <div> element, or <T>."]
