"""The ``memo`` command line: a thin typer skin over the library.

Each command group lives in its own module with a ``register(app)`` function.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(name="memo", help="memo: a local-first memory and knowledge base for AI agents.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

# Command modules, each owning its commands.  Missing ones are skipped only while the
# project is being assembled; tests assert the full command list (tests/integration).
_COMMAND_MODULES = ("store_cmds", "search_cmds", "embed_cmds", "eval_cmds")

for _name in _COMMAND_MODULES:
    try:
        _mod = importlib.import_module(f"memo.cli.{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name != f"memo.cli.{_name}":
            raise
        continue
    _mod.register(app)


def main() -> None:
    app()
