"""The document splitters over any text: every passage fits the embedding model's window
(section line included, counted with its own tokenizer) and no text is lost (issue 28.5)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.ingest.budget import WINDOW, passage_pieces
from memo.ingest.markdown_parse import parse_markdown
from memo.ingest.split_markdown import list_items, pack_blocks, split_markdown
from memo.ingest.split_text import split_paragraphs

WORD = st.one_of(st.sampled_from(["fix", "commit-graph", "approxidate", "--no-recurse", "`git", "push`", "(merge",
                                  "1234abcd", "jc/topic", "to", "maint).", "a", "the", "learned", "!!!", "é", "x" * 120]),
                 st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=12))
LINE = st.lists(WORD, min_size=1, max_size=30).map(" ".join)


@st.composite
def documents(draw) -> str:
    """Markdown shaped like documentation and release notes: headings (ATX and setext),
    paragraphs, bullet and numbered lists with nested items and continuation lines, code
    fences, quotes, some far longer than a passage."""
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["atx", "setext", "para", "list", "olist", "code", "quote", "long"]))
        if kind == "atx":
            parts.append("#" * draw(st.integers(1, 4)) + " " + draw(LINE))
        elif kind == "setext":
            title = draw(LINE)
            parts.append(f"{title}\n{draw(st.sampled_from('=-')) * max(3, len(title))}")
        elif kind == "para":
            parts.append("\n".join(draw(st.lists(LINE, min_size=1, max_size=6))))
        elif kind in ("list", "olist"):
            items = []
            for k in range(draw(st.integers(1, 25))):
                mark = f"{k + 1}." if kind == "olist" else draw(st.sampled_from("-*+"))
                body = f"{mark} {draw(LINE)}"
                body += "".join(f"\n   {draw(LINE)}" for _ in range(draw(st.integers(0, 3))))
                body += "".join(f"\n   - {draw(LINE)}" for _ in range(draw(st.integers(0, 3))))
                items.append(" " + body if draw(st.booleans()) else body)
            parts.append(("\n\n" if draw(st.booleans()) else "\n").join(items))
        elif kind == "code":
            parts.append("```js\n" + "\n".join(draw(st.lists(LINE, min_size=1, max_size=60))) + "\n```")
        elif kind == "quote":
            parts.append("\n".join("> " + ln for ln in draw(st.lists(LINE, min_size=1, max_size=20))))
        else:
            parts.append(" ".join(draw(st.lists(LINE, min_size=40, max_size=80))))
    return "\n\n".join(parts) + "\n"


def _chars(text: str) -> str:
    return "".join(text.split())


def _kept(src: str, dst: str) -> bool:
    """Every non-space character of ``src`` is in ``dst``, in order (``dst`` may hold more:
    the fence lines re-opened around a cut code block)."""
    it = iter(dst)
    return all(c in it for c in src)


def _check_markdown(text: str, title: str | None) -> None:
    parts = split_markdown(text, title=title)
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in parts)
    blocks = [b for b in parse_markdown(text) if not b.heading]
    if blocks:
        assert _kept(_chars("".join(b.text for b in blocks)), _chars("".join(p.text for p in parts)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents(), st.one_of(st.none(), LINE))
def test_documents_fit_the_window_and_keep_their_text(text, title):
    _check_markdown(text, title)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000), st.one_of(st.none(), st.text(max_size=400)))
def test_any_text_fits_the_window_and_keeps_its_text(text, title):
    _check_markdown(text, title)
    plain = split_paragraphs(text, section=title or "")
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in plain)
    assert _chars("".join(p.text for p in plain)) == _chars(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(40, 250))
def test_no_passage_holds_two_items_of_a_list(text, budget):
    """Every passage of a list holds a part of one item, never two (ITEM_MERGE_TOKENS 0)."""
    for block in parse_markdown(text):
        if block.kind != "list" or "`" in block.text:
            continue
        items = [_chars(it) for it in list_items(block.text)]
        for passage in pack_blocks([block], budget):
            assert any(_chars(passage) in it for it in items), passage
