"""Which module of memo.cli defines each ``memo`` command (the root loads it on demand)."""

from __future__ import annotations

# Command name -> the module of memo.cli whose register(app) defines it (name, help, options:
# there and only there; tests/unit/cli/test_lazy_cli.py checks this table against the modules).
# The order is `memo --help`'s: typer lists commands, then groups; the plugin slots come last.
# Lazy for start-up cost only (the modules import each other freely; no cycle is hidden here).
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("add", "import", "export", "get", "list", "supersede", "forget", "purge", "stats", "reindex",
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
