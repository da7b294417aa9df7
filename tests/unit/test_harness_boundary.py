"""memo and its evaluation harness (issue 27.7): the library never imports the harness, and
``memo eval`` is mounted through an entry point (memo/cli/plugins.py).

* No module under memo/ imports ``memo_eval`` (the harness's package, folder eval/) or a
  top-level ``eval``: not at module level, not inside a function, not through
  ``importlib.import_module`` / ``__import__`` with a literal name.
* Without the harness's entry point, ``memo eval`` with any arguments (``--help`` too)
  prints one line naming ``pip install "memo-kb[eval]"`` and exits 11 (``ExtraMissing``);
  ``--json`` gives the error document.
* With an entry point, ``memo eval ...`` runs the group it names; a provider that does not
  import is one line and exit 11 as well.
* Only ``memo eval`` reads the entry points: ``memo --help`` and the other commands do not.
"""

from __future__ import annotations

import ast
import json
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memo.cli import app, plugins

ROOT = Path(__file__).resolve().parents[2]
HARNESS_ROOTS = {"memo_eval", "eval"}
HINT = 'pip install "memo-kb[eval]"'


def _harness_imports(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__", "find_spec"):
                names = [node.args[0].value]
        found += [f"{path.relative_to(root)}:{node.lineno}: {name}" for name in names
                  if name.split(".")[0] in HARNESS_ROOTS]
    return found


def test_memo_never_imports_the_harness() -> None:
    sources = sorted((ROOT / "memo").rglob("*.py"))
    assert len(sources) > 50, sources            # the real tree
    bad = [hit for path in sources for hit in _harness_imports(path)]
    assert not bad, "memo/ imports the harness:\n" + "\n".join(bad)


def test_the_scan_sees_every_form(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("import memo_eval.run\nfrom eval import grid\n"
                   "def f():\n    from memo_eval.cli import app\n    import importlib\n"
                   "    importlib.import_module('memo_eval.tune')\n    __import__('eval.regress')\n"
                   "import memo.types\nfrom memo import errors\n", encoding="utf-8")
    hits = _harness_imports(src, tmp_path)
    assert [h.split(": ")[1] for h in hits] == ["memo_eval.run", "eval", "memo_eval.cli", "memo_eval.tune",
                                                "eval.regress"]


# --- memo eval without the harness ------------------------------------------------------------
@pytest.fixture
def no_harness(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Entry-point discovery finds nothing (the harness not installed); records the lookups."""
    calls: list[str] = []

    def entry_points(**kw: Any) -> list[EntryPoint]:
        calls.append(kw.get("name", ""))
        return []

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    return calls


@pytest.mark.parametrize("args", [["eval", "run", "-d", "sample", "--quiet"], ["eval"], ["eval", "--help"],
                                  ["eval", "regress", "--fast"], ["eval", "cache", "--no-such-option", "x"]])
def test_memo_eval_without_the_harness_says_how_to_add_it(no_harness: list[str], args: list[str]) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 11, (res.exit_code, res.stdout, res.stderr)
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and HINT in res.stderr and res.stderr.startswith("error: memo eval "), \
        res.stderr
    assert "Traceback" not in res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert no_harness == ["eval"]


def test_memo_eval_json_without_the_harness(no_harness: list[str]) -> None:
    res = CliRunner().invoke(app, ["eval", "list", "--json"])
    assert res.exit_code == 11
    doc = json.loads(res.stdout)
    assert doc["error"] == "ExtraMissing" and doc["exit_code"] == 11 and doc["hint"] == HINT, doc
    assert "memo-kb-eval" in doc["message"], doc


def test_other_commands_never_read_the_entry_points(no_harness: list[str]) -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"], terminal_width=200)
    assert top.exit_code == 0 and " eval " in top.stdout and "Evaluate search quality" in top.stdout
    assert runner.invoke(app, ["search", "--help"]).exit_code == 0
    runner.invoke(app, ["profiles", "show", "--json"])     # a command that runs (its outcome is not the point)
    assert no_harness == []


# --- memo eval with a plugin ----------------------------------------------------------------------
hello = typer.Typer(name="eval", no_args_is_help=True)


@hello.command("hello")
def _hello(name: str = "world") -> None:
    typer.echo(f"hello {name}")


@hello.command("other")
def _other() -> None:
    typer.echo("other")


def _fake_entry_point(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    ep = EntryPoint(name="eval", value=value, group=plugins.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "entry_points",
                        lambda **kw: [ep] if kw == {"group": plugins.ENTRY_POINT_GROUP, "name": "eval"} else [])


def test_memo_eval_runs_the_installed_group(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_point(monkeypatch, f"{__name__}:hello")
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "hello", "--name", "memo"])
    assert res.exit_code == 0 and res.stdout == "hello memo\n", (res.stdout, res.stderr)
    listing = runner.invoke(app, ["eval", "--help"], terminal_width=200)
    assert listing.exit_code == 0 and " hello " in listing.stdout and " other " in listing.stdout
    assert "memo eval" in listing.stdout                  # its usage line names the command path
    bad = runner.invoke(app, ["eval", "nope"])
    assert bad.exit_code == 2                             # a usage error, as for any memo group


def test_a_provider_that_does_not_import_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_point(monkeypatch, "memo_no_such_harness.cli:app")
    res = CliRunner().invoke(app, ["eval", "run", "-d", "sample"])
    assert res.exit_code == 11 and res.stderr.count("\n") == 1 and HINT in res.stderr, res.stderr
    assert "memo_no_such_harness" in res.stderr
