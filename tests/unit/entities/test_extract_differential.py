"""The extraction speed-up of issues 29.5 / 31.3 changes no answer: memo.text.entities
against its frozen copy of 05fec91 (frozen_extract_05fec91.py), on every public entry
point the store and the arms use (``extract``, ``extract_seed``, ``extract_record`` with
titles, headings, speakers and explicit names, ``record_context``, ``entity_key``,
``aliases``, ``title_name`` / ``title_key``), over real corpora (the SciFact sample and
SciFact abstracts, the standard library's docstrings, LoCoMo and chat-export turns, the
markdown samples) and hypothesis-drawn text made of the characters and words each rule
looks at.  The store's wrappers (``memo.store.mentions.record_mentions``,
``passage_mentions``) are compared too."""

from __future__ import annotations

import ast
import gzip
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.store import mentions as store_mentions
from memo.text import entities as fast
from tests.fast_examples import examples

from . import frozen_extract_05fec91 as frozen

DATASETS = Path(__file__).resolve().parents[3] / "datasets"

_PIECES = [*"aAbBzZ019 _-./:@#+'’\n\t.,;:!?\"“”()[]{}<>&ÉéßİıǅΣσς日本\u0301\u00a0\u2028ﬁⅫ", "[[", "]]", "|",
           "The ", "the ", "of ", "Of ", "de ", "van ", "and ", "a ", "My ", "New York ", "March ", "Monday ", "I ",
           "I'm ", "i’d ", "John's ", "Moreau’s ", "Alice Moreau ", "Moreau ", "Dr. ", "St. ", "U.S. ", "e.g. ",
           "ERR_X ", "net/http ", "@al ", "@a.b- ", "#py ", "&#x; ", "IL-6 ", "p53 ", "setTimeout ", "McDonald ",
           "well-being ", "Self-care ", "Bank of America and Wells Fargo. ", "Lord of the Rings ", "When ",
           "Yesterday ", "Thanks ", "Unrelated ", "Paris ", "in Paris ", "X ", "ÉCOLE ", "Ǆemal ", "ΣΊΣΥΦΟΣ ",
           "[[Project X|the project]] ", "[[a#b]] ", "x" * 130, "Aa" * 70 + " ", " > ", "\ud800", "--", "'s", "-'",
           "of-", "the’", "oF ", "mRNA ", "naïve ", "and/or ", "0.99-1.15 ", "1_000 ", "DCs ", "ABcD ", "MRI ",
           "stream.Readable ", "os.path.join ", "airport.The ", "key.buffer ", "Node.js ", "Ph.D "]


def _tuples(mentions) -> list[tuple]:  # noqa: ANN001
    return [(m.key, m.name, m.kind, m.count) for m in mentions]


def _record(x):  # noqa: ANN001, ANN202
    return [_tuples(ms) for ms in x]


def _texts() -> list[str]:
    """Real text: SciFact (the bundled sample and the first abstracts of the full corpus),
    standard-library docstrings, LoCoMo and chat-export turns, markdown samples."""
    out: list[str] = []
    for line in (DATASETS / "sample" / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            out.append(doc.get("title", "") + "\n" + doc.get("text", ""))
    with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for k, line in enumerate(fh):
            if k >= 600:
                break
            doc = json.loads(line)
            out.append(doc["text"])
    lib = Path(json.__file__).resolve().parents[1]
    for name in ("json/__init__.py", "pathlib.py", "argparse.py", "textwrap.py", "functools.py", "inspect.py",
                 "collections/__init__.py", "email/message.py", "http/client.py", "unittest/case.py"):
        try:
            tree = ast.parse((lib / name).read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    out.append(doc)
    for sample in json.loads((DATASETS / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[:3]:
        for turns in sample["conversation"].values():
            if isinstance(turns, list):
                out.extend(t.get("text", "") for t in turns if isinstance(t, dict))
    chats = DATASETS / "chats" / "chats.json"
    if chats.exists():
        _strings(json.loads(chats.read_text(encoding="utf-8")), out, 3000)
    out.extend(p.read_text(encoding="utf-8", errors="replace") for p in sorted(DATASETS.rglob("*.md"))[:80])
    return out


def _strings(value, out: list[str], limit: int) -> None:  # noqa: ANN001
    """The longer strings of a JSON value (chat messages), at most ``limit`` of them."""
    stack = [value]
    start = len(out)
    while stack and len(out) - start < limit:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) > 20:
                out.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _texts()


def test_the_corpora_are_there_and_name_things(texts):
    assert len(texts) > 3000
    assert sum(len(frozen.extract(t)) for t in texts[:500]) > 2000


# Edges of the scans: a text's first word after a gap, runs broken or continued by each
# kind of gap, tokens continued by connectors and apostrophes, non-ASCII capitals.
EDGES = [" Paris is nice. In Paris too.", "Paris is nice.", "  Alice met Bob.", "\tAlice", "\nAlice Moreau",
         ". Alice", "x Alice", "3Alice", "a3Alice Bob", "x-Alice", "-Alice", "'Alice", "’Alice Moreau’s",
         "Alice  Moreau", "Alice , Moreau", "Alice\nMoreau", "Alice (Moreau)", "Lord of the Rings", "Bank of of America",
         "Bank of the de Paris", "The Beatles", "the Beatles", "When Alice Moreau came", "I met Émile Zola", "émile Zola",
         "ÉCOLE Normale", "Ǆemal Bijedić", "Straße Berlin", "the DNA of IL-6 in p53.", "well. being", "well.being",
         "a.b.", "..a..b..", "ab-", "AB-CD", "e.g. U.S. A.B.C", "x1 X1 1x", "Ⅻ Olympiad", "a_b_c", "__init__",
         "net/http.", "@alice and @bob.", "#python!", "[[Project X|the project]] and [[Y]]", "March Madness", "May",
         "Monday Night Football", "US", "USA", "NASA's", "McDonald's", "O'Neil", "d'Artagnan", "", " ", ".", "A", "A.",
         # issue 29.5's scans: where a run surely ends (a joiner with a tail is still a joiner),
         # the ASCII stretches' edges (a lowercase word going on with a capital, a digit or a
         # non-ASCII letter; a gap with a non-ASCII character), tokens skipped whole or not.
         "Alice of- Bob", "Alice the’ Beatles", "Bank of' America", "Bank oF America", "Alice ofx Bob", "Alice dam Bob",
         "Alice of, Bob", "Alice 3bob Carol", "Alice bob3 Carol", "the mRNA of Alice", "naïve Alice", "x3Alice Bob",
         "Alice\u00a0Moreau", "“Alice” Moreau", "Alice-’s Bob", "Alice élan Bob", "MRI was", "DCs and ABcD and AbC",
         "S100A9 and/or CD33", "0.99-1.15 and 1_000 a1", "well-being.Self-care e.g. U.S.A", "a--b c.-d x-.y", "Ⅻb iPhone"]


def test_edges_same_as_frozen():
    for t in EDGES:
        for text in (t, t + " " + t, "x " + t, t.upper(), t.lower()):
            assert _tuples(fast.extract(text)) == _tuples(frozen.extract(text)), text
            assert _tuples(fast.extract_seed(text)) == _tuples(frozen.extract_seed(text)), text
            assert fast._names(text) == frozen._names(text), text
            got, want = fast._Bag(), frozen._Bag()
            assert fast._identifiers(text, got) == frozen._identifiers(text, want), text
            assert _tuples(got.result()) == _tuples(want.result()), text


def test_extract_and_seed_same_as_frozen(texts):
    for t in texts:
        assert _tuples(fast.extract(t)) == _tuples(frozen.extract(t)), t[:300]
        assert _tuples(fast.extract_seed(t)) == _tuples(frozen.extract_seed(t)), t[:300]


def test_records_same_as_frozen(texts):
    """Consecutive texts as the passages of one record, with a title, headings, speakers
    and explicit names (as memo.store.mentions.record_mentions calls it)."""
    titles = ["Benton Fraser", "Carry On (franchise)", "Extracellular vesicles for drug delivery.", None,
              "The Flower of Hawaii", "SV St. Georg", "memo-operations", "Alice Moreau"]
    for k in range(0, len(texts) - 4, 3):
        passages = texts[k:k + 1 + k % 4]
        title = titles[k % len(titles)]
        heads = [f"Install > {title or 'Linux'} > Step {i}" if (k + i) % 2 else "" for i in range(len(passages))]
        speakers = [("Caroline", None, "Melanie Smith")[(k + i) % 3] for i in range(len(passages))]
        explicit = ("Acme Corp", "Lighthouse") if k % 5 == 0 else ()
        got = fast.extract_record(passages, speakers=speakers, title=title, headings=heads, explicit=explicit)
        want = frozen.extract_record(passages, speakers=speakers, title=title, headings=heads, explicit=explicit)
        assert _record(got) == _record(want), (title, passages[0][:200])
        got = fast.extract_record(passages)
        assert _record(got) == _record(frozen.extract_record(passages)), passages[0][:200]
        kind = ("doc", "note", "code", "chat")[k % 4]
        rows = [(p, s, h) for p, s, h in zip(passages, speakers, heads, strict=True)]
        assert _record(store_mentions.record_mentions(kind, title, rows, explicit)) == _record(
            frozen.extract_record(passages, speakers=speakers, title=title,
                                  headings=heads if kind in store_mentions.HEADED_KINDS else None, explicit=explicit))


def test_context_keys_aliases_titles_same_as_frozen(texts):
    for t in texts[:1500]:
        runs = frozen._scan(t, frozen._Bag())
        assert fast._scan(t, fast._Bag()) == runs
        got, want = fast.record_context([runs], title="Alice Moreau"), frozen.record_context([runs], title="Alice Moreau")
        assert set(got.surnames.items()) == set(want.surnames.items())
        assert all(w in got.capitalised for w in want.capitalised)
        for m in frozen.extract(t):
            assert fast.entity_key(m.name) == frozen.entity_key(m.name) == m.key
            assert fast.aliases(m.key) == frozen.aliases(m.key)
        first = t.split("\n", 1)[0][:200]
        assert fast.title_name(first) == frozen.title_name(first)
        assert fast.title_key(first) == frozen.title_key(first)


_TEXT = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    st.tuples(st.sampled_from([" ", "\t", "", "\n", ". ", "3", "-"]), st.lists(st.sampled_from(_PIECES), max_size=20))
    .map(lambda x: x[0] + "".join(x[1])),
    st.text(max_size=200),
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=30).map("".join))


@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, speaker=st.one_of(st.none(), st.sampled_from(["Caroline", " ", "Melanie Smith", "@al"]), st.text(max_size=8)),
       explicit=st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=10)), max_size=3))
def test_extract_same_as_frozen_on_drawn_text(text, speaker, explicit):
    assert _tuples(fast.extract(text, speaker=speaker, explicit=explicit, fact_terms=explicit[:1])) == _tuples(
        frozen.extract(text, speaker=speaker, explicit=explicit, fact_terms=explicit[:1]))
    assert _tuples(fast.extract_seed(text, speaker=speaker)) == _tuples(frozen.extract_seed(text, speaker=speaker))
    assert fast.entity_key(text) == frozen.entity_key(text)
    assert fast.aliases(frozen.entity_key(text)) == frozen.aliases(frozen.entity_key(text))
    assert fast.title_name(text) == frozen.title_name(text)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(passages=st.lists(_TEXT, min_size=1, max_size=4), title=st.one_of(st.none(), _TEXT),
       heads=st.lists(_TEXT, min_size=4, max_size=4), speakers=st.lists(st.one_of(st.none(), _TEXT), min_size=4, max_size=4),
       explicit=st.lists(_TEXT, max_size=2))
def test_extract_record_same_as_frozen_on_drawn_text(passages, title, heads, speakers, explicit):
    n = len(passages)
    got = fast.extract_record(passages, speakers=speakers[:n], title=title, headings=heads[:n], explicit=explicit)
    want = frozen.extract_record(passages, speakers=speakers[:n], title=title, headings=heads[:n], explicit=explicit)
    assert _record(got) == _record(want)


def test_frozen_copy_is_not_memo():
    assert "memo" not in frozen.__name__.split(".")[0]
    assert frozen.__file__ != fast.__file__ and "tests" in Path(frozen.__file__).parts
    assert sys.modules[fast.__name__] is fast
