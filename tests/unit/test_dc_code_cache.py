"""memo/dc_code_cache.py: dataclasses' methods compiled once, then read from a cache file.

The classes it helps make must be the ones ``dataclasses`` makes (same code, same
behaviour), and the cache must never be worse than no cache: a torn, foreign or
unwritable file, ``-B`` and ``MEMO_NO_DC_CACHE=1`` all fall back to compiling."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memo import dc_code_cache as dcc

REPO = Path(__file__).resolve().parents[2]

needs_patch = pytest.mark.skipif(sys.version_info[:2] not in ((3, 11), (3, 12)),
                                 reason="the cache copies the 3.11/3.12 dataclasses._create_fn")


def _classes() -> list[type]:
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int
        b: str = "x"
        c: tuple[int, ...] = ()
        d: list[int] = dataclasses.field(default_factory=list, compare=False)

    @dataclasses.dataclass(order=True, slots=True)
    class Ordered:
        x: float
        y: float = 0.0

    @dataclasses.dataclass(kw_only=True)
    class KwOnly:
        p: int
        q: dict[str, int] = dataclasses.field(default_factory=dict)

        def __post_init__(self) -> None:
            self.p += 1

    @dataclasses.dataclass(eq=False)
    class Plain:
        n: int
        _: dataclasses.KW_ONLY
        m: int = 2

    return [Frozen, Ordered, KwOnly, Plain]


def _code(fn: object) -> tuple:
    code = fn.__code__  # type: ignore[attr-defined]
    return code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_freevars


@needs_patch
def test_the_copy_builds_what_dataclasses_builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every method of every kind of class: the same bytecode from the copy as from the
    stdlib's own _create_fn, and the classes behave the same."""
    stock = dcc._original()
    monkeypatch.setattr(dataclasses, "_create_fn", stock)
    before = _classes()
    monkeypatch.setattr(dcc, "_codes", {})
    monkeypatch.setitem(dcc._state, "path", tmp_path / "c.bin")
    monkeypatch.setitem(dcc._state, "loaded", True)
    monkeypatch.setattr(dataclasses, "_create_fn", dcc._create_fn)
    after = _classes()
    assert dcc._codes, "the copy compiled nothing through the cache"
    for old, new in zip(before, after, strict=True):
        names = [n for n, v in vars(old).items() if callable(v) and hasattr(v, "__code__")
                 and v.__code__.co_filename == "<string>"]
        assert names and names == [n for n, v in vars(new).items() if callable(v) and hasattr(v, "__code__")
                                   and v.__code__.co_filename == "<string>"]
        for name in names:
            a, b = getattr(old, name), getattr(new, name)
            assert _code(a) == _code(b), (old.__name__, name)
            assert a.__annotations__.keys() == b.__annotations__.keys(), (old.__name__, name)
    f_old, f_new = before[0](1, d=[1]), after[0](1, d=[2])
    assert repr(f_old).split("(", 1)[1] == repr(f_new).split("(", 1)[1].replace("[2]", "[1]")
    assert hash(after[0](1)) == hash(after[0](1)) and after[0](1) == after[0](1, d=[5])
    with pytest.raises(dataclasses.FrozenInstanceError):
        f_new.a = 2  # type: ignore[misc]
    assert after[1](1.0) < after[1](2.0) and after[2](p=1).p == 2 and after[3](1) != after[3](1)


@needs_patch
def test_second_process_reads_the_file(tmp_path: Path) -> None:
    """A fresh interpreter compiles on a miss and writes the file at exit; the next one
    compiles nothing.  Runs on a copy of memo's cache module in a folder of its own, so the
    checkout's cache file is not touched."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "dcc.py").write_bytes((REPO / "memo" / "dc_code_cache.py").read_bytes())
    script = (f"import sys, json, dataclasses; sys.path.insert(0, {str(pkg)!r}); import dcc; dcc.install()\n"
              "@dataclasses.dataclass(frozen=True)\nclass A:\n    a: int\n    b: str = 'x'\n"
              "print(json.dumps({'misses': dcc._state['misses'], 'path': str(dcc._state['path']), 'a': repr(A(1))}))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MEMO_NO_DC_CACHE")}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                      check=True).stdout) for _ in range(2)]
    cache = Path(runs[0]["path"])
    assert cache.parent == pkg / "__pycache__" and cache.is_file()
    assert runs[0]["a"] == runs[1]["a"] == "A(a=1, b='x')"
    # The first run found no file and compiled each method; the second compiled none.
    assert runs[0]["misses"] >= 4 and runs[1]["misses"] == 0, runs
    # -B (or PYTHONDONTWRITEBYTECODE): read, never written.
    cache.unlink()
    subprocess.run([sys.executable, "-B", "-c", script], env=env, check=True, capture_output=True)
    assert not cache.exists()


@needs_patch
@pytest.mark.parametrize("content", [b"", b"garbage", dcc._FORMAT + b"3.0\n" + b"x", None])
def test_a_bad_file_is_ignored_then_rewritten(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                              content: bytes | None) -> None:
    path = tmp_path / "__pycache__" / "c.bin"
    path.parent.mkdir()
    if content is None:         # the right header, a torn body
        content = dcc._FORMAT + dcc._magic() + b"\xe3\x00"
    path.write_bytes(content)
    monkeypatch.setattr(dcc, "_codes", {})
    monkeypatch.setattr(dcc, "_state", {"path": path, "loaded": False, "dirty": False, "misses": 0})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    code = dcc._compiled("def __create_fn__():\n def f(self):\n  return 1\n return f")
    assert code.co_filename == "<string>" and len(dcc._codes) == 1
    dcc._save()
    monkeypatch.setattr(dcc, "_codes", {})
    dcc._state["loaded"] = False
    dcc._load()
    assert list(dcc._codes) == ["def __create_fn__():\n def f(self):\n  return 1\n return f"]


@needs_patch
def test_an_unwritable_folder_is_not_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setattr(dcc, "_codes", {"t": compile("1", "<string>", "exec")})
    monkeypatch.setattr(dcc, "_state", {"path": blocked / "__pycache__" / "c.bin", "loaded": True, "dirty": True, "misses": 0})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dcc._save()                                     # no exception, nothing written
    assert blocked.read_text() == "not a folder"


@needs_patch
def test_a_grown_file_keeps_this_process_texts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "c.bin"
    code = compile("1", "<string>", "exec")
    monkeypatch.setattr(dcc, "_codes", {str(i): code for i in range(dcc.MAX_ENTRIES + 1)})
    monkeypatch.setattr(dcc, "_used", {"7", "12"})
    monkeypatch.setattr(dcc, "_state", {"path": path, "loaded": True, "dirty": True, "misses": 0})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dcc._save()
    monkeypatch.setattr(dcc, "_codes", {})
    dcc._state["loaded"] = False
    dcc._load()
    assert sorted(dcc._codes) == ["12", "7"]


def test_opt_out_and_other_interpreters(monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMO_NO_DC_CACHE=1 installs nothing; a process that imported memo has it installed
    exactly when its interpreter is one the copy was written for."""
    installed = dataclasses._create_fn is dcc._create_fn
    assert installed == (sys.version_info[:2] in ((3, 11), (3, 12)) and os.environ.get("MEMO_NO_DC_CACHE") != "1")
    env = dict(os.environ, MEMO_NO_DC_CACHE="1")
    out = subprocess.run([sys.executable, "-c", "import dataclasses, memo; "
                          "print(dataclasses._create_fn.__module__)"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "dataclasses"


@needs_patch
def test_a_process_decodes_only_the_texts_it_asks_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The file holds every text any process compiled; a process reads them all but turns
    into code only those it asks for, and writes the others back as they were."""
    path = tmp_path / "c.bin"
    texts = [f"def __create_fn__():\n def f(self):\n  return {i}\n return f" for i in range(50)]
    monkeypatch.setattr(dcc, "_codes", {t: compile(t, "<string>", "exec") for t in texts})
    monkeypatch.setattr(dcc, "_used", set())
    monkeypatch.setattr(dcc, "_state", {"path": path, "loaded": True, "dirty": True, "misses": 0})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dcc._save()
    monkeypatch.setattr(dcc, "_codes", {})
    dcc._state["loaded"] = False
    code = dcc._compiled(texts[7])
    assert dcc._state["misses"] == 0
    ns: dict = {}
    exec(code, {}, ns)
    assert ns["__create_fn__"]()(None) == 7
    assert [t for t, c in dcc._codes.items() if not isinstance(c, bytes)] == [texts[7]]
    dcc._save()                                      # the undecoded ones go back as they came
    monkeypatch.setattr(dcc, "_codes", {})
    dcc._state["loaded"] = False
    dcc._load()
    assert sorted(dcc._codes) == sorted(texts)
    for i in (0, 49):
        exec(dcc._compiled(texts[i]), {}, ns)
        assert ns["__create_fn__"]()(None) == i
    # A damaged entry is compiled again, not an error.
    dcc._codes[texts[3]] = b"\x00garbage"
    exec(dcc._compiled(texts[3]), {}, ns)
    assert ns["__create_fn__"]()(None) == 3 and dcc._state["misses"] == 1
