"""The ``memo`` command line: a thin typer skin over the library.

Each command group lives in its own module with a ``register(app)`` function; the modules
only parse options, call memo's library and print (``--json``: one JSON document).
``memo eval`` is the evaluation harness's (the memo-kb-eval distribution, ``memo_eval.cli``),
mounted through an entry point when installed: memo/cli/plugins.py.
"""

from __future__ import annotations

import typer

from memo.cli import (
    doctor_cmds,
    embed_cmds,
    entity_cmds,
    fact_cmds,
    plugins,
    search_cmds,
    store_cmds,
    web_cmds,
)
from memo.cli.common import MemoGroup

app = typer.Typer(name="memo", help="memo: a local-first memory and knowledge base for AI agents.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  cls=MemoGroup)

for _module in (store_cmds, fact_cmds, entity_cmds, search_cmds, embed_cmds, plugins, web_cmds, doctor_cmds):
    _module.register(app)


def main() -> None:
    app()
