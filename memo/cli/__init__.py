"""The ``memo`` command line: a thin typer skin over the library.

Each command group lives in its own module with a ``register(app)`` function; the modules
only parse options, call memo's library and print (``--json``: one JSON document).
``memo eval`` is the evaluation harness's (the memo-kb-eval distribution, ``memo_eval.cli``),
mounted through an entry point when installed: memo/cli/plugins.py.

The root imports no command module: ``COMMAND_MODULES`` says which module registers each
command, and ``MemoGroup`` imports a module when the command line names one of its commands
(``memo --help`` imports them all to list their help).  A fresh ``memo search`` process thus
imports the search skin only, not the writers, importers and servers (issue 31.2: a cold
keyword search within 5x ``python -c "import sqlite3"``).  The usual ``memo search`` lines do
not import typer at all: ``memo.cli.fast_search`` reads them from the same option table
(``memo.cli.options``) and the typer app (``memo.cli.root``) is made only for the others.
"""

from __future__ import annotations

import sys
from typing import Any

from memo.cli.commands import COMMAND_MODULES
from memo.cli.plumbing import exit_now, teardown_skipped

__all__ = ["COMMAND_MODULES", "app", "main"]


def main() -> None:
    """The ``memo`` console script.  ``memo search`` in its usual forms is read without
    typer (``memo.cli.fast_search``); every other line goes to the typer app.  A command
    that asked for it (``plumbing.skip_teardown``: ``memo search``) ends the process without
    the interpreter's teardown."""
    argv = sys.argv[1:]
    if argv[:1] == ["search"]:
        from memo.cli import fast_search

        code = fast_search.run(argv[1:])
        if code is not None:
            if teardown_skipped():
                exit_now(code)
            sys.exit(code)
    from memo.cli.root import app

    try:
        app()
    except SystemExit as exc:
        if teardown_skipped():
            exit_now(exc.code)
        raise


def __getattr__(name: str) -> Any:
    """``memo.cli.app``: the typer app, made on first use (memo.cli.root) so that a line
    the fast path reads never imports typer."""
    if name == "app":
        from memo.cli.root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
