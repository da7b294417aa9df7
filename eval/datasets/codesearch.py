"""``codesearch``: a vocabulary-mismatch set read from the running Python's standard library.

Each query is the first sentence of a function's (or method's) docstring; the one relevant
item is that function, indexed **without its docstring** (its source from the first
decorator to the last line, the docstring's lines cut out, dedented): the words of the
question are the documentation's, the words of the item the code's.

The corpus is never copied into the repository: ``iter_functions`` reads it from
``sys.base_prefix/lib/python3.X`` each time an index is built, and the loader checks that
the machine's corpus is the one the committed labels were built from
(``datasets/codesearch/manifest.json``).  ``scripts/build_codesearch.py`` writes the labels
(``codesearch.jsonl.gz``: memo's own JSONL label format, docs/eval.md) and the manifest.

Rules (docs/eval.md, datasets/codesearch/SOURCE.md; ``RULES_VERSION`` changes with them):

Files (``stdlib_files``): every ``*.py`` under the stdlib folder except
  * folders ``test``, ``tests``, ``idlelib``, ``lib2to3``, ``turtledemo``, ``site-packages``,
    ``__pycache__`` and ``config-*`` (the build's ``python-config.py``), and files named
    ``test_*.py``;
  * private modules and packages: any path part starting with ``_`` (``_pydecimal.py``,
    ``__main__.py``, ``__phello__``), except ``__init__.py`` (the package itself).
Functions (``module_functions``): functions defined directly in a module's body and methods
defined directly in a class body (classes nested in classes included; nothing defined inside
a function, nor under a module-level ``if`` / ``try``); a qualified name is
``<module>.<Class>.<name>``; **private** names are skipped (any part starting with ``_``,
dunder methods included); a qualified name seen twice in a module (a property's setter, a
redefinition) keeps its first definition only.
Corpus items (``Function.code``): the source with the docstring's lines removed; skipped when
  * the docstring shares a line with other code (``def f(): "doc"``);
  * nothing but the docstring is left, or only ``pass`` / ``...`` / ``raise NotImplementedError``
    (stubs and abstract methods: nothing to find);
  * the stripped source is identical to another item's (``encodings`` codecs and the like:
    memo de-duplicates identical records, and the label would be ambiguous): every copy goes.
Queries (``first_sentence`` / ``query_problem``): the docstring's first paragraph with its
whitespace collapsed, cut after the first ``.``, ``?`` or ``!`` that is followed by white
space (not after ``e.g.``, ``i.e.``, ``etc.``, ``vs.``, ``cf.``); skipped when
  * it holds fewer than ``MIN_WORDS`` = 5 words (runs of letters or digits);
  * it contains the function's own name verbatim (case-sensitive, as a whole identifier:
    ``split`` in "split the string", not in "splitting" or "Split");
  * the same sentence (case and white space folded) is the query of another function: every
    copy goes (ambiguous).
Split: by module, so a module's functions stay together: ``test`` when the first byte of
sha256(module name) is below 128, else ``train``.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from memo.errors import DatasetError
from memo.stored import PassageDraft, RecordDraft
from memo_eval.datasets.base import EvalSet

RULES_VERSION = 1
MIN_WORDS = 5
LABELS = "codesearch.jsonl.gz"
MANIFEST = "manifest.json"
SKIP_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "__pycache__"})
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")
_WORD = re.compile(r"[A-Za-z0-9]+")
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)")


def stdlib_dir() -> Path:
    """The running interpreter's standard library: ``sys.base_prefix/lib/python3.X``."""
    return Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


def skip_file(rel: Path) -> bool:
    parts = rel.parts
    if any(p in SKIP_DIRS or p.startswith("config-") for p in parts[:-1]):
        return True
    name = parts[-1]
    if name.startswith("test_"):
        return True
    return any(p.startswith("_") for p in parts[:-1]) or (name.startswith("_") and name != "__init__.py")


def stdlib_files(root: Path) -> list[Path]:
    """The corpus files, sorted by their path relative to ``root``."""
    return sorted((p for p in root.rglob("*.py") if not skip_file(p.relative_to(root))),
                  key=lambda p: p.relative_to(root).as_posix())


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def file_list_sha256(root: Path, files: list[Path]) -> str:
    """sha256 over (relative path, content) of every corpus file, in order."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


# --- queries ----------------------------------------------------------------------------------
def first_sentence(doc: str) -> str:
    """The docstring's first paragraph, white space collapsed, up to its first sentence end."""
    para = " ".join(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0].split())
    for m in _SENTENCE_END.finditer(para):
        head = para[:m.end()]
        if any(head.endswith(" " + a) or head == a for a in ABBREVIATIONS):
            continue
        return head
    return para


def query_problem(sentence: str, name: str) -> str | None:
    """Why a first sentence is not a query (None: it is one)."""
    if len(_WORD.findall(sentence)) < MIN_WORDS:
        return "short"
    if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", sentence):
        return "names_itself"
    return None


def norm_query(sentence: str) -> str:
    return " ".join(sentence.split()).casefold()


# --- functions ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Function:
    qualname: str            # <module>.<Class>.<name>
    module: str
    name: str
    method: bool
    docstring: str | None
    code: str | None         # source without its docstring; None = not a corpus item
    problem: str | None      # why ``code`` is None


def _is_stub(body: list[ast.stmt]) -> bool:
    if len(body) != 1:
        return False
    s = body[0]
    if isinstance(s, ast.Pass):
        return True
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis:
        return True
    if isinstance(s, ast.Raise) and s.exc is not None:
        exc = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def strip_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> tuple[str | None, str | None]:
    """(source without the docstring, None) or (None, reason).  ``lines`` = the file's lines."""
    body = node.body
    has_doc = ast.get_docstring(node, clean=False) is not None
    rest = body[1:] if has_doc else body
    if not rest:
        return None, "docstring_only"
    if _is_stub(rest):
        return None, "stub"
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    end = node.end_lineno or node.lineno
    cut: set[int] = set()
    if has_doc:
        ds = body[0]
        first = lines[ds.lineno - 1].encode()
        last = lines[(ds.end_lineno or ds.lineno) - 1].encode()
        if first[:ds.col_offset].strip() or last[ds.end_col_offset or 0:].strip():
            return None, "docstring_inline"
        cut = set(range(ds.lineno, (ds.end_lineno or ds.lineno) + 1))
    kept = [lines[i - 1] for i in range(start, end + 1) if i not in cut]
    code = textwrap.dedent("\n".join(kept)).strip("\n")
    return code, None


def module_functions(source: str, module: str) -> list[Function]:
    """Every public module-level function and method of ``source`` (rules in the module doc)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out: list[Function] = []
    seen: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                if not node.name.startswith("_"):
                    visit(node.body, f"{prefix}.{node.name}", True)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("_"):
                    continue
                qual = f"{prefix}.{node.name}"
                if qual in seen:
                    continue
                seen.add(qual)
                code, problem = strip_docstring(node, lines)
                out.append(Function(qual, module, node.name, in_class, ast.get_docstring(node, clean=True),
                                    code, problem))

    visit(tree.body, module, False)
    return out


def iter_functions(root: Path | None = None) -> Iterator[Function]:
    """Every public function and method of the corpus files, in file order."""
    root = root or stdlib_dir()
    for f in stdlib_files(root):
        rel = f.relative_to(root)
        try:
            source = f.read_text(encoding="utf-8")
            funcs = module_functions(source, module_name(rel))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue   # not Python 3.11 (none in 3.11.7 once the skipped folders are out)
        yield from funcs


@dataclass(frozen=True)
class Built:
    items: list[Function]                  # corpus items (unique code), file order
    labels: list[dict[str, object]]        # memo JSONL label lines
    counts: dict[str, int]


def build(root: Path | None = None) -> Built:
    """Apply every rule: the corpus items and the label lines."""
    funcs = list(iter_functions(root))
    counts: Counter[str] = Counter(functions=len(funcs))
    with_code = [f for f in funcs if f.code is not None]
    for f in funcs:
        if f.problem:
            counts[f"skipped_{f.problem}"] += 1
    code_n = Counter(f.code for f in with_code)
    items = [f for f in with_code if code_n[f.code] == 1]
    counts["skipped_duplicate_code"] = len(with_code) - len(items)
    counts["corpus_items"] = len(items)
    candidates: list[tuple[Function, str]] = []
    for f in items:
        if not f.docstring:
            counts["no_docstring"] += 1
            continue
        sentence = first_sentence(f.docstring)
        problem = query_problem(sentence, f.name)
        if problem:
            counts[f"query_{problem}"] += 1
            continue
        candidates.append((f, sentence))
    q_n = Counter(norm_query(s) for _, s in candidates)
    labels = []
    for f, sentence in candidates:
        if q_n[norm_query(sentence)] > 1:
            counts["query_duplicate"] += 1
            continue
        labels.append({"id": f.qualname, "query": sentence, "relevant": [f.qualname],
                       "category": "method" if f.method else "function", "split": split_of(f.module)})
    counts["queries"] = len(labels)
    for s in ("test", "train"):
        counts[f"queries_{s}"] = sum(1 for lb in labels if lb["split"] == s)
        counts[f"modules_{s}"] = len({f.module for f, _ in candidates if split_of(f.module) == s})
    return Built(items, labels, dict(sorted(counts.items())))


def split_of(module: str) -> str:
    return "test" if hashlib.sha256(module.encode()).digest()[0] < 128 else "train"


def draft_of(f: Function) -> RecordDraft:
    """One ``code`` record per function: the qualified name as title and section, the
    stripped source as body and passage (``ext_id`` = the qualified name)."""
    assert f.code is not None
    return RecordDraft(body=f.code, kind="code", title=f.qualname, ext_id=f.qualname,
                       meta={"language": "python"},
                       passages=(PassageDraft(text=f.code, section=f.qualname, ext_id=f.qualname),))


def corpus_sha256(items: list[Function]) -> str:
    h = hashlib.sha256(f"codesearch-rules={RULES_VERSION}".encode())
    for f in items:
        h.update(f"\x1e{f.qualname}\x1f{f.code}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def iter_drafts(root: str | None = None) -> Iterator[RecordDraft]:
    for f in build(Path(root) if root else None).items:
        yield draft_of(f)


def manifest(built: Built, root: Path | None = None) -> dict[str, object]:
    root = root or stdlib_dir()
    files = stdlib_files(root)
    return {"python": sys.version.split()[0], "stdlib": str(root), "rules_version": RULES_VERSION,
            "files": len(files), "file_list_sha256": file_list_sha256(root, files),
            "corpus_sha256": corpus_sha256(built.items), "counts": built.counts}


def write_labels(built: Built, out: Path, root: Path | None = None) -> dict[str, object]:
    """``codesearch.jsonl.gz`` (deterministic bytes: gzip mtime 0) and ``manifest.json``."""
    out.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(lb, ensure_ascii=False, sort_keys=True) + "\n" for lb in built.labels)
    with (out / LABELS).open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())
    man = manifest(built, root)
    man["labels_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (out / MANIFEST).write_text(json.dumps(man, indent=1) + "\n")
    return man


def load_codesearch(folder: Path, split: str = "test", *, root: Path | None = None) -> EvalSet:
    """The labels of ``folder`` over the corpus read from this machine's stdlib."""
    from memo_eval.datasets.custom import parse_line

    man = json.loads((folder / MANIFEST).read_text())
    built = build(root)
    got = corpus_sha256(built.items)
    if got != man["corpus_sha256"]:
        raise DatasetError(f"codesearch: this machine's standard library ({sys.version.split()[0]}, {stdlib_dir()}) "
                           f"gives another corpus than the labels' (Python {man['python']})",
                           hint="rebuild the labels for this Python with scripts/build_codesearch.py --out DIR "
                                "and run -d DIR")
    rows = []
    with gzip.open(folder / LABELS, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            rows.append(parse_line(json.loads(line), f"{folder / LABELS}:{lineno}"))
    if split != "all":
        rows = [r for r in rows if r[2] == split]
        if not rows:
            raise DatasetError(f"codesearch: no split {split!r}", hint="splits: test, train, all")
    queries = tuple(q for q, _, _ in rows)
    qrels = {q.qid: labels for q, labels, _ in rows}
    return EvalSet(name=folder.name, split=split, corpus_hash=got, unit="record", queries=queries, qrels=qrels,
                   corpus=partial(iter_drafts, str(root) if root else None), source=str(folder),
                   notes={"python": man["python"], "corpus_items": man["counts"]["corpus_items"]})

