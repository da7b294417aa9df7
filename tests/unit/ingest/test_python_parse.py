"""Python files as passages: nothing a reader would look up is lost (memo.ingest.python_parse)."""

from memo.ingest.budget import WINDOW, passage_pieces
from memo.ingest.split_code import split_code

TERM = '''"""Terminal helpers."""
import sys
from functools import lru_cache

RETRY_LIMIT = 5


def main():
    """Run it."""
    print(RETRY_LIMIT)


if sys.platform == "win32":
    def get_terminal_width_windows():
        """Width of a Windows console."""
        return 80
else:
    @lru_cache(maxsize=None)
    def get_terminal_width_posix():
        """Width of a POSIX tty."""
        return 80

try:
    from fastjson import loads_fast
except ImportError:
    def loads_fast(s):
        """Pure-Python fallback."""
        return s

if __name__ == "__main__":
    class Cli:
        """Command line."""
    main()
'''

NESTED = '''class Outer:
    """The outer class."""

    class Inner:
        """Inner class."""

        def documented(self):
            """A documented inner method.

            More words."""

        class Deepest:
            """Deepest class."""
            def leaf(self): ...
'''


def _passages(src: str, path: str = "pkg/term.py") -> dict[str, str]:
    out: dict[str, str] = {}
    for p in split_code(src, path, None):
        out[p.section] = f"{out[p.section]}\n{p.text}" if p.section in out else p.text
    return out


def test_definitions_inside_top_level_blocks_get_passages():
    """Definitions in ``if``/``else``/``try``/``except`` blocks were dropped whenever the
    file also had an ordinary top-level definition (os.fwalk, ftplib.FTP_TLS...)."""
    parts = _passages(TERM)
    assert list(parts) == ["pkg.term", "pkg.term.main", "pkg.term.get_terminal_width_windows",
                           "pkg.term.get_terminal_width_posix", "pkg.term.loads_fast", "pkg.term.Cli"]
    assert parts["pkg.term.get_terminal_width_windows"] == "def get_terminal_width_windows()\nWidth of a Windows console."
    assert parts["pkg.term.loads_fast"] == "def loads_fast(s)\nPure-Python fallback."
    assert parts["pkg.term.Cli"] == "class Cli\nCommand line."


def test_module_code_outside_definitions_is_a_passage():
    """Constants, imports and the ``if __name__ == "__main__":`` block vanished:
    ``memo search RETRY_LIMIT --mode exact`` found nothing.  Bodies still stay out."""
    module = _passages(TERM)["pkg.term"]
    assert module == ('Terminal helpers.\n\nimport sys\nfrom functools import lru_cache\n\nRETRY_LIMIT = 5\n\n'
                      'if sys.platform == "win32":\nelse:\n\ntry:\n    from fastjson import loads_fast\n'
                      'except ImportError:\n\nif __name__ == "__main__":\n    main()')
    assert "return 80" not in "\n".join(_passages(TERM).values())


def test_a_file_without_definitions_keeps_its_code():
    """A docstring and statements only: the docstring was the file's only passage."""
    src = '"""Build the site."""\nimport shutil\nshutil.rmtree("site")\n'
    assert _passages(src, "build.py") == {"build": 'Build the site.\n\nimport shutil\nshutil.rmtree("site")'}


def test_nested_classes_get_qualified_passages():
    parts = _passages(NESTED, "m.py")
    assert list(parts) == ["m.Outer", "m.Outer.Inner", "m.Outer.Inner.Deepest"]
    assert parts["m.Outer"] == "class Outer\nThe outer class.\nclass Inner: Inner class."
    assert parts["m.Outer.Inner"] == ("class Inner\nInner class.\ndef documented(self): A documented inner method."
                                      "\n\nclass Deepest: Deepest class.")
    assert parts["m.Outer.Inner.Deepest"] == "class Deepest\nDeepest class.\ndef leaf(self)"


def test_decorators_stay_on_the_signatures_they_decorate():
    """``@lru_cache`` / ``@click.option(`` were cut off: a search for them could not reach
    the function.  They are kept as written (the quotes too)."""
    src = '''import click


@click.command()
@click.option("--name", default="world")
def hello(name: str) -> None:
    """Greet someone."""


@dataclass(frozen=True)
class Point:
    """A point."""

    x: int = 0  # across
    y: int = 0

    @property
    def norm(self) -> float:
        """Its length."""
'''
    parts = _passages(src, "cli.py")
    assert parts["cli.hello"] == ('@click.command()\n@click.option("--name", default="world")\n'
                                  "def hello(name: str) -> None\nGreet someone.")
    assert parts["cli.Point"] == ("@dataclass(frozen=True)\nclass Point\nA point.\n"
                                  "    x: int = 0  # across\n    y: int = 0\n\n"
                                  "@property\ndef norm(self) -> float: Its length.")
    assert parts["cli"] == "import click"


def test_class_body_keeps_attributes_and_comments_in_order():
    src = '''class Color(
    Enum,
    metaclass=Meta,
):
    # primary colours
    RED = 1
    if BLUE_OK:
        BLUE = 2
        def blue(self): ...
    GREEN = 3
'''
    assert _passages(src, "c.py")["c.Color"] == ("class Color(Enum, metaclass=Meta)\n    # primary colours\n"
                                                "    RED = 1\n    if BLUE_OK:\n        BLUE = 2\n"
                                                "def blue(self)\n    GREEN = 3")


def test_lines_are_counted_as_python_counts_them():
    """A form feed (the stdlib's page breaks) is no line end to Python: counting it as
    one (str.splitlines) shifts every line after it, so code and definitions mix up."""
    src = "import os\n\x0c\nLIMIT = 1\n\ndef f():\n    return os.sep\n"
    assert _passages(src, "m.py") == {"m": "import os\n\nLIMIT = 1", "m.f": "def f()"}


def test_long_module_code_is_cut_to_the_window_between_lines():
    constants = [f"SETTING_{i} = compute({i}, 'label {i}')" for i in range(150)]
    src = '"""Settings."""\n' + "\n".join(constants) + "\n\ndef f():\n    pass\n"
    parts = [p for p in split_code(src, "s.py", None) if p.section == "s"]
    assert len(parts) > 1
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in parts)
    assert [line for p in parts for line in p.text.splitlines() if line] == ["Settings.", *constants]

