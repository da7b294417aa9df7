"""Python source as passages, parsed with ``ast``.

* **Definitions**: each function or class outside a function body gets a passage of its
  decorators, signature and docstring, section = qualified name: top-level ones, those
  inside top-level ``if``/``try``/``with``/``for``/``while``/``match`` blocks
  (``if sys.platform == "win32": def ...``, ``except ImportError: def ...``) and classes
  nested in classes (``<module>.Outer.Inner``).  Function bodies are left out on purpose:
  memo indexes what code *says it does*, and bodies would drown the docstrings in BM25.
* **A class** also lists, in source order, its body outside definitions (attributes,
  dataclass fields, enum members, comments) and one line per member: a method's
  decorators and signature with its docstring's first line, a nested class's signature
  (so a member's name finds its class).
* **The module**: its docstring, then its top-level code outside definitions (imports,
  constants, ``__all__``, the ``if __name__ == "__main__":`` block, comments) as written,
  section = module name.  So no top-level line of the file is lost: each is in the module
  passage or in a definition's.

Long parts are cut to the model's window (``memo.ingest.code_passages``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from memo.ingest.code_passages import fit_code
from memo.stored import PassageDraft

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# Python's own line ends (str.splitlines would also split at \f, which stdlib files hold).
_LINE_END = re.compile(r"\r\n|\r|\n")


def _statements(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements directly inside a compound statement (``except``/``case`` bodies too)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
        elif isinstance(child, ast.excepthandler | ast.match_case):
            yield from (s for s in ast.iter_child_nodes(child) if isinstance(s, ast.stmt))


def definitions(body: Iterable[ast.stmt]) -> Iterator[_Def]:
    """The functions and classes of a module's or class's body, with those inside its
    ``if``/``try``/``with``/``for`` blocks (never those inside a function or a class)."""
    for node in body:
        if isinstance(node, _Def):
            yield node
        else:
            yield from definitions(_statements(node))


def _lines_of(node: ast.stmt) -> range:
    """The lines of a statement, its decorators included."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    return range(first, (node.end_lineno or node.lineno) + 1)


def _segment(lines: list[str], node: ast.AST) -> str:
    """``node``'s source as written (``ast.get_source_segment`` splits the whole file again
    on every call); columns are UTF-8 byte offsets."""
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if first is None or last is None:
        return ast.unparse(node)
    rows = [line.encode("utf-8", "surrogatepass") for line in lines[first - 1:last]]
    rows[-1] = rows[-1][:node.end_col_offset]
    rows[0] = rows[0][node.col_offset:]
    return b"\n".join(rows).decode("utf-8", "surrogatepass")


def _signature(lines: list[str], node: _Def) -> str:
    # decorators as written, so a search for what the file says (``@click.option("--name"``) finds them
    decorators = "".join(f"@{_segment(lines, d)}\n" for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
        return f"{decorators}class {node.name}({bases})" if bases else f"{decorators}class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{decorators}{prefix} {node.name}({ast.unparse(node.args)}){ret}"


def _docstring_lines(body: list[ast.stmt]) -> range:
    first = body[0] if body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return _lines_of(first)
    return range(0)


def _tidy(lines: list[str]) -> str:
    """Lines without trailing spaces, runs of blank lines made one."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n")


def _outline(lines: list[str], node: ast.ClassDef) -> str:
    """A class's passage text: decorators, signature, docstring, then its body in source
    order with each member definition as one line (its docstring's first line after it).
    A body on the class's own line (``class Error(Exception): pass``) is that line."""
    members = {_lines_of(d).start: d for d in definitions(node.body)}
    skip = set(_docstring_lines(node.body))
    for d in members.values():
        skip.update(_lines_of(d))
    header_end = max([node.lineno] + [b.end_lineno or b.lineno for b in [*node.bases, *node.keywords]])
    first = min(_lines_of(s).start for s in node.body)
    body: list[str] = []
    for n in range(header_end + 1, (node.end_lineno or header_end) + 1):
        line = lines[n - 1]
        if n in members:
            d = members[n]
            doc = ast.get_docstring(d)
            body.append(_signature(lines, d) + (f": {doc.splitlines()[0]}" if doc else ""))
        elif n not in skip and (n >= first or line.lstrip().startswith("#")):  # not the header's ``):``
            body.append(line)
    doc = ast.get_docstring(node)
    return "\n".join(x for x in (_signature(lines, node), doc, _tidy(body)) if x)


def _definition_passages(lines: list[str], defs: Iterable[_Def], prefix: str) -> list[PassageDraft]:
    """A passage per definition (a class's nested classes too), section ``prefix.name``."""
    out: list[PassageDraft] = []
    for d in defs:
        name = f"{prefix}.{d.name}"
        if isinstance(d, ast.ClassDef):
            out.extend(fit_code(name, _outline(lines, d)))
            nested = [c for c in definitions(d.body) if isinstance(c, ast.ClassDef)]
            out.extend(_definition_passages(lines, nested, name))
        else:
            doc = ast.get_docstring(d)
            out.extend(fit_code(name, "\n".join(x for x in (_signature(lines, d), doc) if x)))
    return out


def split_python(source: str, module: str) -> list[PassageDraft] | None:
    """The passages of a Python file, or None when it does not parse (or is empty)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = _LINE_END.split(source)
    covered = set(_docstring_lines(tree.body))
    for d in definitions(tree.body):
        covered.update(_lines_of(d))
    code = _tidy([line for n, line in enumerate(lines, 1) if n not in covered])
    out = fit_code(module, ast.get_docstring(tree) or "", code)
    out.extend(_definition_passages(lines, definitions(tree.body), module))
    return out or None
