"""The root of the ``memo`` typer app: the group that loads each command's module on demand
(``memo.cli.commands.COMMAND_MODULES``) and the plugin slots (memo/cli/plugins.py).

``memo.cli`` makes it only when a command line needs typer (``memo.cli.main``); ``from
memo.cli import app`` reaches it too.
"""

from __future__ import annotations

from memo.cli import plugins
from memo.cli.commands import COMMAND_MODULES
from memo.cli.common import MemoGroup, memo_typer


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
