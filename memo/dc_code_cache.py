"""Compiled code for the methods ``dataclasses`` writes, cached on disk (issue 31.2).

Python 3.11 and 3.12 build each method of a dataclass (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` / ``__delattr__``) by
compiling a few lines of source text with ``exec``.  A cold ``memo search`` creates ~50
dataclasses (memo's pipeline types), and compiling their ~300 methods is
about 70% of that work: ~10-15 ms of a ~125 ms process whose goal is 5x a bare
``import sqlite3``.  The compiled code depends on the source text alone (the globals and
defaults are bound when the function is made, not compiled in), so it is cached the way
Python caches a module's bytecode: one marshal file per interpreter version in memo's own
``__pycache__``, keyed by the exact text, written only where bytecode would be written
(not under ``PYTHONDONTWRITEBYTECODE`` / ``-B``, not in a read-only install: a miss then
compiles as ``dataclasses`` always did).  The classes made are the same, method for method.

``install()`` replaces ``dataclasses._create_fn`` with a function of the same contract
that looks the text up first; it does nothing on an interpreter whose ``dataclasses``
differs from the 3.11/3.12 one it was written against (3.13 builds one ``exec`` per class),
or when ``MEMO_NO_DC_CACHE=1``.  Called once, from ``memo/__init__.py``, before any memo
module (or typer) defines a dataclass.
"""

from __future__ import annotations

import atexit
import dataclasses
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

# The cache file's header: a file of another layout or interpreter is ignored, then rewritten.
_FORMAT = b"memo-dc-code-2\n"
# A file grown past this many texts (edits leave stale ones behind) is rewritten with the
# texts of the process that writes it only.
MAX_ENTRIES = 5000

# The stdlib's own, kept for the differential test (tests/unit/test_dc_code_cache.py).
_STOCK = dataclasses._create_fn if hasattr(dataclasses, "_create_fn") else None
# text -> its code, or the code's marshal bytes as read from the file: a process decodes only
# the texts it asks for (the file holds every text any memo process compiled, the harness's
# and the servers' too, many times what a search needs).
_codes: dict[str, CodeType | bytes] = {}
_used: set[str] = set()               # the texts this process asked for
_state: dict[str, Any] = {"path": None, "loaded": False, "dirty": False, "misses": 0}


def cache_path() -> Path:
    """Where this interpreter's cache lives: beside memo's own bytecode."""
    tag = sys.implementation.cache_tag or "python"
    return Path(__file__).resolve().parent / "__pycache__" / f"dataclass-code.{tag}.bin"


def _load() -> None:
    _state["loaded"] = True
    path = _state["path"]
    try:
        raw = path.read_bytes()
    except OSError:
        return
    magic = _FORMAT + _magic()
    if not raw.startswith(magic):
        return
    try:
        table = marshal.loads(raw[len(magic):])
    except (EOFError, ValueError, TypeError):
        return                          # a torn or foreign file: compile, then rewrite it
    if isinstance(table, dict):
        _codes.update((k, v) for k, v in table.items() if isinstance(k, str) and isinstance(v, bytes))


def _magic() -> bytes:
    # marshal's format is the interpreter's: the file names its version tag, the header
    # the exact build (a file of 3.11.7 is not read by 3.11.9).
    return f"{sys.version}\n".encode()


def _save() -> None:
    """Write the table whole, atomically (a reader never sees half a file); any failure
    (read-only install, full disk) is left alone: the next process compiles again."""
    _state["dirty"] = False
    if sys.dont_write_bytecode:
        return
    keep = _codes if len(_codes) <= MAX_ENTRIES else {t: _codes[t] for t in _used if t in _codes}
    table = {t: c if isinstance(c, bytes) else marshal.dumps(c) for t, c in keep.items()}
    path: Path = _state["path"]
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(exist_ok=True)
        tmp.write_bytes(_FORMAT + _magic() + marshal.dumps(table))
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def _compiled(txt: str) -> CodeType:
    if not _state["loaded"]:
        _load()
    code = _codes.get(txt)
    _used.add(txt)
    if isinstance(code, bytes):
        try:
            code = _codes[txt] = marshal.loads(code)
        except (EOFError, ValueError, TypeError):
            code = None                 # a damaged entry: compile it again
        if not isinstance(code, CodeType):
            code = None
    if code is None:
        code = compile(txt, "<string>", "exec")
        _codes[txt] = code
        _state["misses"] += 1
        if not _state["dirty"]:
            # Written once, when the process ends (``memo search``'s quick exit runs the
            # atexit handlers too): a first run compiles ~300 texts and writes one file.
            _state["dirty"] = True
            atexit.register(_save)
    return code


def _create_fn(name, args, body, *, globals=None, locals=None, return_type=dataclasses.MISSING):  # noqa: A002
    # dataclasses._create_fn of CPython 3.11 / 3.12, the text built the same way, with the
    # text's compiled code taken from the cache.
    if locals is None:
        locals = {}
    return_annotation = ""
    if return_type is not dataclasses.MISSING:
        locals["_return_type"] = return_type
        return_annotation = "->_return_type"
    args = ",".join(args)
    body = "\n".join(f"  {b}" for b in body)
    txt = f" def {name}({args}){return_annotation}:\n{body}"
    local_vars = ", ".join(locals.keys())
    txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
    ns: dict[str, Any] = {}
    exec(_compiled(txt), globals, ns)
    return ns["__create_fn__"](**locals)


def _original() -> Any:
    """``dataclasses._create_fn`` as the stdlib defines it."""
    return _STOCK


def _compatible() -> bool:
    """Only the interpreters whose ``_create_fn`` this one copies (3.11, 3.12)."""
    import inspect

    fn = getattr(dataclasses, "_create_fn", None)
    if fn is None or sys.version_info[:2] not in ((3, 11), (3, 12)):
        return False
    params = inspect.signature(fn).parameters
    return list(params) == ["name", "args", "body", "globals", "locals", "return_type"]


def install() -> bool:
    """Route ``dataclasses``' method compiling through the cache; True if it did."""
    if os.environ.get("MEMO_NO_DC_CACHE") == "1":
        return False
    if dataclasses._create_fn is _create_fn:
        return True
    if not _compatible():
        return False
    _state["path"] = cache_path()
    dataclasses._create_fn = _create_fn
    return True
