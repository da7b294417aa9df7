"""Code documents: one passage per symbol, section = qualified symbol name.

Python is parsed with ``ast``: the module docstring is one passage (section = module
name), then each top-level function or class gets its signature and docstring (a class
also lists its methods' signatures, so a method name finds its class).  Bodies are left
out on purpose: memo indexes what code *says it does*, and bodies would drown the
docstrings in BM25.  JavaScript, TypeScript, Go and Rust are parsed with their tree-sitter
grammars (``memo.ingest.code_parse``): one passage per top-level definition, its source
with the comments above it, section = qualified name (``<module>.<Receiver>.<Method>`` for
Go methods, ``<module>.<Type>`` for a Rust ``impl``).  Other languages (or a file that
does not parse into any definition) fall back to a line scan for top-level definitions;
a file without any becomes windows of its text.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from memo.ingest.code_parse import LANGUAGES, split_tree_sitter
from memo.ingest.windows import windowed
from memo.stored import PassageDraft

CODE_EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "typescript", ".jsx": "javascript", ".go": "go", ".rs": "rust", ".java": "java",
    ".kt": "kotlin", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".rb": "ruby",
    ".sh": "shell", ".bash": "shell", ".sql": "sql", ".swift": "swift", ".scala": "scala",
    ".php": "php", ".cs": "csharp", ".lua": "lua",
}

# Top-level definition lines of common languages (no indentation = top level).
_DEF_LINE = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:public\s+|private\s+|static\s+|async\s+|final\s+|abstract\s+)*"
    r"(?:function\*?|class|interface|type|struct|enum|trait|impl|fn|func|def|module|object|const|let|var)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")


def module_name(import_path: str | None, title: str | None) -> str:
    name = import_path or title or "module"
    p = PurePosixPath(name.replace("\\", "/"))
    parts = list(p.with_suffix("").parts) if p.suffix else list(p.parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(x for x in parts if x not in ("", ".", "..")) or "module"


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){ret}"


def split_python(source: str, module: str) -> list[PassageDraft] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out: list[PassageDraft] = []
    doc = ast.get_docstring(tree)
    if doc:
        out.append(PassageDraft(text=doc, section=module))
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        parts = [_signature(node)]
        if (d := ast.get_docstring(node)):
            parts.append(d)
        if isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
            for m in methods:
                md = ast.get_docstring(m)
                first = f": {md.splitlines()[0]}" if md else ""
                parts.append(f"{_signature(m)}{first}")
        out.extend(windowed(PassageDraft(text="\n".join(parts), section=f"{module}.{node.name}")))
    if not out:
        return None
    return out


def split_generic(source: str, module: str) -> list[PassageDraft]:
    """Cut at top-level definition lines; the comment block above a definition stays with it."""
    lines = source.splitlines()
    starts: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        m = _DEF_LINE.match(line)
        if m:
            j = i
            while j > 0 and lines[j - 1].lstrip().startswith(("//", "#", "/*", "*", "--")):
                j -= 1
            if not starts or j > starts[-1][0]:
                starts.append((j, m.group(1)))
    if not starts:
        return windowed(PassageDraft(text=source.strip(), section=module)) if source.strip() else []
    out: list[PassageDraft] = []
    head = "\n".join(lines[:starts[0][0]]).strip()
    if head:
        out.extend(windowed(PassageDraft(text=head, section=module)))
    for k, (start, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        block = "\n".join(lines[start:end]).strip()
        if block:
            out.extend(windowed(PassageDraft(text=block, section=f"{module}.{name}")))
    return out


def split_code(source: str, import_path: str | None, title: str | None,
               language: str | None = None) -> list[PassageDraft]:
    module = module_name(import_path, title)
    suffix = PurePosixPath(import_path or title or "").suffix.lower()
    lang = language or CODE_EXTENSIONS.get(suffix)
    if lang == "python":
        parsed = split_python(source, module)
        if parsed:
            return parsed
    elif lang in LANGUAGES:
        parsed = split_tree_sitter(source, module, lang, tsx=suffix == ".tsx")
        if parsed:
            return parsed
    return split_generic(source, module)
