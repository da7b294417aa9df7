"""codesearch: the rules that turn a stdlib folder into code items and docstring queries,
the split, docstring removal, the loader's corpus check, and the off-domain mix."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from memo.errors import DatasetError
from memo_eval.datasets import codesearch as cs
from memo_eval.datasets import load_eval_set
from memo_eval.datasets.base import EvalQuery, EvalSet
from memo_eval.datasets.offdomain import mix, parse

MOD = '''
import os


def parse_config(path, strict=False):
    """Read a settings file and return its values as a mapping.

    More text here that is not part of the query.
    """
    # keep this comment
    with open(path) as fh:
        return dict(line.split("=", 1) for line in fh)


@decorated
def split(text):
    """split the text into words on white space."""
    return text.split()


def tiny(x):
    """Too short to ask."""
    return x


def stub(x):
    """Subclasses must implement this method properly please."""
    raise NotImplementedError


def _private(x):
    """A private helper that nobody should search for today."""
    return x


def inline(): "An inline docstring shares the definition line here."; return 1


def nodoc(a, b):
    return a + b


class Store:
    """A class docstring is never a query."""

    def fetch(self, key, default=None):
        """Look up a key, e.g. a user name, and give back what is stored."""
        return self.data.get(key, default)

    def __repr__(self):
        """Dunder methods are private names."""
        return "Store()"

    @property
    def size(self):
        """How many entries the store currently holds in memory."""
        return len(self.data)

    @size.setter
    def size(self, value):
        raise AttributeError(value)

    class Inner:
        def touch(self):
            """Mark the inner object as recently used by someone."""
            self.used = True


def twin_a(x):
    """Add one to the number and hand the result back to the caller."""
    return x + 1000


def twin_b(x):
    """Add one to the number and hand the result back to the caller."""
    return x + 2000


class CodecA:
    def encode(self, x):
        """First copy of a method that appears twice in the corpus folder."""
        return x * 7


class CodecB:
    def encode(self, x):
        """Second copy of a method that appears twice in the corpus folder."""
        return x * 7
'''


@pytest.fixture()
def stdlib(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    (root / "pkg").mkdir(parents=True)
    (root / "mod.py").write_text(MOD)
    (root / "pkg" / "__init__.py").write_text('def hello(name):\n    """Greet somebody by the name they gave us."""\n'
                                              '    print("hi", name)\n')
    (root / "pkg" / "sub.py").write_text("def other(a):\n    \"\"\"Compute another value from the argument given here.\"\"\"\n"
                                         "    return a\n")
    for skipped in ("test/helper.py", "idlelib/x.py", "lib2to3/y.py", "turtledemo/z.py", "_private_mod.py",
                    "_pkg/m.py", "pkg/__main__.py", "test_things.py", "config-3.11-x86_64-linux-gnu/python-config.py",
                    "site-packages/thing.py"):
        p = root / skipped
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text('def visible(a):\n    """This function should never be read at all."""\n    return a\n')
    return root


def test_files_and_module_names(stdlib: Path):
    rels = [f.relative_to(stdlib).as_posix() for f in cs.stdlib_files(stdlib)]
    assert rels == ["mod.py", "pkg/__init__.py", "pkg/sub.py"]
    assert cs.module_name(Path("pkg/__init__.py")) == "pkg"
    assert cs.module_name(Path("email/mime/text.py")) == "email.mime.text"


def test_functions_rules(stdlib: Path):
    funcs = {f.qualname: f for f in cs.iter_functions(stdlib)}
    assert "mod._private" not in funcs and "mod.Store.__repr__" not in funcs
    assert funcs["mod.stub"].problem == "stub" and funcs["mod.stub"].code is None
    assert funcs["mod.inline"].problem == "docstring_inline"
    assert funcs["mod.Store.Inner.touch"].method
    # a property's setter has the getter's qualified name: the first definition is kept
    assert "return len(self.data)" in funcs["mod.Store.size"].code
    assert funcs["pkg.hello"].module == "pkg"

    built = cs.build(stdlib)
    ids = {lb["id"] for lb in built.labels}
    items = {f.qualname for f in built.items}
    assert "mod.CodecA.encode" not in items and "mod.CodecB.encode" not in items  # identical code
    assert "mod.nodoc" in items and "mod.nodoc" not in ids                     # distractor, no query
    assert "mod.tiny" in items and "mod.tiny" not in ids                       # < 5 words
    assert "mod.split" in items and "mod.split" not in ids                     # names itself
    assert "mod.twin_a" not in ids and "mod.twin_b" not in ids                 # same sentence twice
    assert ids == {"mod.parse_config", "mod.Store.fetch", "mod.Store.size", "mod.Store.Inner.touch",
                   "pkg.hello", "pkg.sub.other"}
    assert built.counts["query_names_itself"] == 1 and built.counts["query_duplicate"] == 2
    fetch = next(lb for lb in built.labels if lb["id"] == "mod.Store.fetch")
    assert fetch["query"] == "Look up a key, e.g. a user name, and give back what is stored."
    assert fetch["relevant"] == ["mod.Store.fetch"] and fetch["category"] == "method"


def test_docstring_removed_signature_and_body_kept(stdlib: Path):
    funcs = {f.qualname: f for f in cs.iter_functions(stdlib)}
    code = funcs["mod.parse_config"].code
    assert code.startswith("def parse_config(path, strict=False):")
    assert "settings file" not in code and "More text" not in code and '"""' not in code
    assert "# keep this comment" in code and "return dict(" in code
    ast.parse(code)                                                    # still valid Python
    method = funcs["mod.Store.fetch"].code
    assert method.startswith("def fetch(self, key, default=None):")   # dedented
    assert "Look up" not in method
    dec = funcs["mod.split"].code
    assert dec.startswith("@decorated\ndef split(text):") and "white space" not in dec
    draft = cs.draft_of(funcs["mod.Store.fetch"])
    assert draft.kind == "code" and draft.ext_id == draft.title == "mod.Store.fetch"
    assert draft.passages[0].section == "mod.Store.fetch" and draft.passages[0].text == method


def test_first_sentence():
    assert cs.first_sentence("Return the sum.  More words.") == "Return the sum."
    assert cs.first_sentence("Open os.path files, i.e. local ones. Then close") == "Open os.path files, i.e. local ones."
    assert cs.first_sentence("No full stop\nacross lines\n\nSecond paragraph.") == "No full stop across lines"
    assert cs.query_problem("Split a thing into many parts here", "split") is None     # case-sensitive
    assert cs.query_problem("Call split on many parts here", "split") == "names_itself"
    assert cs.query_problem("Do the splitting of many parts here", "split") is None    # whole identifier
    assert cs.query_problem("Too few words", "x") == "short"


def test_split_by_module_is_deterministic(stdlib: Path):
    a, b = cs.build(stdlib), cs.build(stdlib)
    assert a.labels == b.labels and cs.corpus_sha256(a.items) == cs.corpus_sha256(b.items)
    by_module: dict[str, set[str]] = {}
    for lb in a.labels:
        by_module.setdefault(str(lb["id"]).rsplit(".", 1)[0].split(".Store")[0], set()).add(str(lb["split"]))
    assert all(len(s) == 1 for s in by_module.values())            # a module's functions stay together
    assert cs.split_of("json.decoder") == cs.split_of("json.decoder")
    splits = {cs.split_of(f"m{i}") for i in range(40)}
    assert splits == {"test", "train"}


def test_write_and_load(stdlib: Path, tmp_path: Path):
    built = cs.build(stdlib)
    out = tmp_path / "labels"
    cs.write_labels(built, out, stdlib)
    first = (out / cs.LABELS).read_bytes()
    cs.write_labels(built, out, stdlib)
    assert (out / cs.LABELS).read_bytes() == first                  # byte-identical rebuild
    lines = [json.loads(x) for x in gzip.decompress(first).decode().splitlines()]
    assert len(lines) == len(built.labels)
    es = cs.load_codesearch(out, "all", root=stdlib)
    assert es.unit == "record" and len(es.queries) == len(built.labels)
    drafts = list(es.corpus())
    assert {d.ext_id for d in drafts} == {f.qualname for f in built.items}
    assert all(q.qid in {k for k in es.qrels[q.qid]} for q in es.queries)
    # another stdlib (an edited file) is refused, not silently mislabelled
    (stdlib / "pkg" / "sub.py").write_text("def other(a):\n    \"\"\"Changed.\"\"\"\n    return a + 1\n")
    with pytest.raises(DatasetError, match="another corpus"):
        cs.load_codesearch(out, "all", root=stdlib)


def test_committed_labels_match_this_python():
    folder = Path(__file__).resolve().parents[3] / "datasets" / "codesearch"
    man = json.loads((folder / cs.MANIFEST).read_text())
    if man["python"] != __import__("sys").version.split()[0]:
        pytest.skip("labels built with another Python")
    es = load_eval_set("codesearch", "test")
    assert len(es.queries) == man["counts"]["queries_test"] and es.name == "codesearch"
    assert man["counts"]["queries"] >= 2000


def _set(name, queries, qrels):
    return EvalSet(name=name, split="test", corpus_hash="h", unit="record", queries=tuple(queries),
                   qrels=qrels, corpus=lambda: iter(()))


def test_offdomain_mix():
    assert parse("scifact-on-locomo-obs") == ("scifact", "locomo-obs")
    with pytest.raises(DatasetError):
        parse("scifact")
    base = _set("locomo-obs", [EvalQuery("a", "q a", namespace="locomo/c2", now="2023-01-02"),
                               EvalQuery("b", "q b", namespace="locomo/c1", now="2023-01-01")],
                {"a": {"x": 1}, "b": {"y": 1}})
    other = _set("scifact", [EvalQuery(str(i), f"claim {i}") for i in range(3)], {str(i): {"d": 1} for i in range(3)})
    es = mix(base, other, "scifact")
    assert es.name == "locomo-obs" and es.split == "test-offdomain-scifact" and es.corpus is base.corpus
    extra = es.queries[2:]
    assert [q.qid for q in extra] == ["off-scifact:0", "off-scifact:1", "off-scifact:2"]
    assert all(not q.answerable and q.category == "offdomain-scifact" for q in extra)
    assert [q.namespace for q in extra] == ["locomo/c1", "locomo/c2", "locomo/c1"]
    assert [q.now for q in extra] == ["2023-01-01", "2023-01-02", "2023-01-01"]
    assert es.qrels == base.qrels                                    # off-domain queries have no qrels
    flat = mix(other, base, "locomo")
    assert all(q.namespace is None for q in flat.queries)
