"""The import graph of memo/ and eval/ (the package ``memo_eval``) has no cycle and every
arrow points down.

Every ``import`` counts, at module level or inside a function: an import deferred into a
function body still ties the two modules together, so deferring one to dodge a cycle does
not pass this test.  Importing ``a.b.c`` also runs ``a/b/__init__.py``, so a module
depends on the packages above its target too (except the two root packages, ``memo`` and
``memo_eval``, whose ``__init__`` is the public facade / a docstring).

Layers, lowest first (a module may import its own layer or a lower one):

    0  memo.types, memo.stored, memo.errors, memo.text, memo.profile (+ _keys, _docs), memo.serialize, memo.metrics,
       memo.download, memo.deferred, memo.dc_code_cache, memo.dc_pickle, memo.spawn, memo.version, memo.progress
                                                 values, vocabulary, pure functions
    1  memo.store, memo.ingest, memo.embed       storage, splitters, vectors
    2  memo.graph                                graphs over the store
    3  memo.retrieve                             the search pipeline
    4  memo.ops                                  library operations
    5  memo.search_api                           ``memo.search``
    6  memo_eval                                 the harness (above ops: builds indexes, replays)
    7  memo.serve, memo.cli, memo, memo.__main__ skins and the facade
    8  memo_eval.cli                             ``memo eval``: the harness's command group,
                                                 mounted by memo's CLI through an entry point

memo never imports the harness (layer 6 and 8, the memo-kb-eval distribution): memo's CLI
finds ``memo eval`` through ``importlib.metadata`` entry points (memo/cli/plugins.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# import package -> its folder (the harness's folder is eval/, its package memo_eval)
PACKAGES = {"memo": "memo", "memo_eval": "eval"}
ROOTS = set(PACKAGES)

LAYERS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (0, ("memo.types", "memo.stored", "memo.errors", "memo.text", "memo.profile", "memo.profile_keys", "memo.profile_docs",
         "memo.serialize", "memo.metrics",
         "memo.download", "memo.deferred", "memo.dc_code_cache", "memo.dc_pickle", "memo.spawn", "memo.version", "memo.progress")),
    (1, ("memo.store", "memo.ingest", "memo.embed", "memo.models")),
    (2, ("memo.graph",)),
    (3, ("memo.retrieve",)),
    (4, ("memo.ops",)),
    (5, ("memo.search_api",)),
    (6, ("memo_eval",)),
    (7, ("memo.serve", "memo.cli", "memo.__main__", "memo")),
    (8, ("memo_eval.cli",)),
)


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None        # (prefix length, layer): the longest prefix wins
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
    if best is None:
        raise AssertionError(f"{module}: no layer (add its package to LAYERS in {__file__})")
    return best[1]


def modules(root: Path = ROOT) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, folder in PACKAGES.items():
        for path in (root / folder).rglob("*.py"):
            if "build" in path.relative_to(root / folder).parts[:1]:
                continue        # eval/build/: setuptools' copy when the harness's wheel is built in place
            parts = [pkg, *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imported_names(module: str, path: Path) -> Iterator[tuple[str, int]]:
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                yield f"{name}.{alias.name}", node.lineno   # a submodule, or a name in `name`


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported module (ours only) -> first line}."""
    mods = modules(root)
    graph: dict[str, dict[str, int]] = {}
    for module, path in mods.items():
        deps: dict[str, int] = {}
        for name, line in _imported_names(module, path):
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if not name:
                continue
            if name != module:
                deps.setdefault(name, line)
            # importing a.b.c runs the __init__ of a.b as well (not the roots: see the
            # docstring), unless a.b is a package this module sits in (already running)
            parts = name.split(".")
            for i in range(len(parts) - 1, 0, -1):
                target = ".".join(parts[:i])
                if target in ROOTS or module.startswith(target + "."):
                    break
                deps.setdefault(target, line)
        graph[module] = deps
    return graph


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    graph = import_graph()
    cycles = find_cycles(graph)
    detail = []
    for comp in cycles:
        members = set(comp)
        edges = [f"{a}:{graph[a][b]} -> {b}" for a in comp for b in graph[a] if b in members]
        detail.append("cycle: " + ", ".join(comp) + "\n    " + "\n    ".join(sorted(edges)))
    assert not cycles, "\n".join(detail)


def test_every_arrow_points_down() -> None:
    bad = [f"{a}:{line} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
           for a, deps in sorted(import_graph().items()) for b, line in sorted(deps.items())
           if layer_of(b) > layer_of(a)]
    assert not bad, "a lower layer imports a higher one:\n" + "\n".join(bad)


def test_the_checker_sees_deferred_imports_and_package_inits(tmp_path: Path) -> None:
    """The walker itself, on a small package tree: a function-level import is an edge,
    importing a.b.c adds the package a.b, relative imports resolve, and a cycle made only
    of deferred imports is found."""
    files = {
        "memo/__init__.py": "",
        "memo/low/__init__.py": "",
        "memo/low/leaf.py": "def f():\n    import memo.high.top  # deferred: still an edge\n",
        "memo/high/__init__.py": "",
        "memo/high/top.py": "from ..low import leaf\n",
        "memo/other.py": "import memo.low.leaf\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert "memo.high.top" in graph["memo.low.leaf"]                 # deferred import
    assert "memo.high" in graph["memo.low.leaf"]                     # its package's __init__
    assert "memo.low.leaf" in graph["memo.high.top"]                 # relative import
    assert set(graph["memo.other"]) == {"memo.low.leaf", "memo.low"}  # not the root package
    assert [sorted(c) for c in find_cycles(graph)] == [["memo.high.top", "memo.low.leaf"]]
    # and on the real tree: the pipeline's snapshot import is seen
    assert "memo.store.connect" in import_graph()["memo.retrieve.pipeline"]
    assert find_cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]