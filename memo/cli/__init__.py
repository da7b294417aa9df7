"""The ``memo`` command line: a thin typer skin over the library.

Each command group lives in its own module with a ``register(app)`` function; the modules
only parse options, call memo's library and print (``--json``: one JSON document).
``memo eval`` is the evaluation harness's (the memo-kb-eval distribution, ``memo_eval.cli``),
mounted through an entry point when installed: memo/cli/plugins.py.

The root imports no command module: ``COMMAND_MODULES`` says which module registers each
command, and ``MemoGroup`` imports a module when the command line names one of its commands
(``memo --help`` imports them all to list their help).  A fresh ``memo search`` process thus
imports the search skin only, not the writers, importers and servers (issue 31.2: a cold
keyword search within 5x ``python -c "import sqlite3"``).
"""

from __future__ import annotations

from memo.cli import common, plugins
from memo.cli.common import MemoGroup, memo_typer

# Command name -> the module of memo.cli whose register(app) defines it (name, help, options:
# there and only there; tests/unit/cli/test_lazy_cli.py checks this table against the modules).
# The order is `memo --help`'s: typer lists commands, then groups; the plugin slots come last.
# Lazy for start-up cost only (the modules import each other freely; no cycle is hidden here).
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("add", "import", "get", "list", "supersede", "forget", "purge", "stats", "reindex",
                     "backup", "restore"), "store_cmds"),
    "search": "search_cmds",
    "backfill": "embed_cmds",
    "web": "web_cmds",
    "doctor": "doctor_cmds",
    "fact": "fact_cmds",
    "entities": "entity_cmds",
    "profiles": "search_cmds",
    "models": "embed_cmds",
}


class RootGroup(MemoGroup):
    command_modules = COMMAND_MODULES


app = memo_typer(name="memo", help="memo: a local-first memory and knowledge base for AI agents.",
                 no_args_is_help=True, cls=RootGroup)
plugins.register(app)


@app.callback()
def _root() -> None:
    # No options of its own.  A callback keeps the root a group in typer's eyes: its only
    # registered command is the plugin slot; the others are added by RootGroup on demand.
    pass


def main() -> None:
    """The ``memo`` console script.  A command that asked for it (``common.skip_teardown``:
    ``memo search``) ends the process without the interpreter's teardown."""
    try:
        app()
    except SystemExit as exc:
        if common.teardown_skipped():
            common.exit_now(exc.code)
        raise
