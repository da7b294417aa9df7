"""The lazy root of ``memo`` (memo/cli/__init__.py, issue 31.2): the command table names
exactly what each module registers, and ``memo --help`` lists them in its order."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import typer.main
from typer.testing import CliRunner

import memo.cli
from memo.cli import COMMAND_MODULES, app, plugins
from memo.cli.common import memo_typer

CLI_DIR = Path(memo.cli.__file__).parent


def test_the_table_names_what_each_module_registers() -> None:
    modules = {p.stem for p in CLI_DIR.glob("*_cmds.py")}
    assert set(COMMAND_MODULES.values()) == modules
    for module in modules:
        sub = memo_typer()
        importlib.import_module(f"memo.cli.{module}").register(sub)
        names = set(typer.main.get_group(sub).commands)
        assert names == {n for n, m in COMMAND_MODULES.items() if m == module}, module
    assert not set(COMMAND_MODULES) & set(plugins.SLOTS)


def test_help_lists_every_command_in_table_order() -> None:
    out = CliRunner().invoke(app, ["--help"], terminal_width=200).stdout
    panel = out[out.index("Commands"):]
    listed = [m.group(1) for line in panel.splitlines() if (m := re.match(r"│ (\S+) ", line))]
    assert listed == [*COMMAND_MODULES, *plugins.SLOTS]
