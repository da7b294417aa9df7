"""Code documents: one passage per symbol, section = qualified symbol name.

Python is parsed with ``ast`` (``memo.ingest.python_parse``): a passage of the module's
docstring and top-level code outside definitions (section = module name), then each
function or class outside a function body, top-level or inside a top-level ``if``/``try``
block or nested in a class, gets its decorators, signature and docstring (a class also
lists its attributes and its members' signatures, so a method name finds its class).
Bodies are left out on purpose: memo indexes what code *says it does*, and bodies would
drown the docstrings in BM25.  JavaScript, TypeScript, Go and Rust are parsed with their
tree-sitter grammars (``memo.ingest.code_parse``): one passage per top-level definition,
its source with the comments above it, section = qualified name, and the file's other
top-level code (imports, ``require``s, statements) gathered in the module's passage.
Other languages (or a file that does not parse into any definition) fall back to a line
scan for top-level definitions; a file without any becomes windows of its text.  Every
passage fits the embedding model's window (``memo.ingest.code_passages``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from memo.ingest.code_parse import LANGUAGES, split_tree_sitter
from memo.ingest.code_passages import fit_code
from memo.ingest.python_parse import split_python
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
        return fit_code(module, source)
    out = fit_code(module, "\n".join(lines[:starts[0][0]]))
    for k, (start, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        out.extend(fit_code(f"{module}.{name}", "\n".join(lines[start:end])))
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
