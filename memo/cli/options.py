"""CLI options as data: ``--db``, ``--json`` and ``memo search``'s whole command line.

Defined once, here, without typer: ``memo.cli.common`` turns ``DB`` and ``JSON`` into the
typer options every command takes, ``memo.cli.search_cmds`` builds ``memo search``'s typer
command (and its ``--help``) from ``SEARCH_OPTIONS``, and ``memo.cli.fast_search`` parses
the usual ``memo search`` command lines from the same table without importing typer
(issue 31.2: typer's import and its command building, docs/scale.md).  The
search fields themselves are ``memo.types.SEARCH_FIELDS``, shared with MCP and the web API.
"""

from __future__ import annotations

from dataclasses import dataclass

from memo.types import MODE_HELP, PROFILE_ENV, SEARCH_FIELDS, SearchField


@dataclass(frozen=True, slots=True)
class CliOption:
    param: str                  # the command function's parameter (and a JSON error's field name)
    flags: tuple[str, ...]      # long first: "--namespace", "-n"
    type: type                  # str, int or float (each item's, when multiple); bool: a flag
    help: str
    default: object = None
    multiple: bool = False      # repeat the flag for a list
    envvar: str | None = None   # read when the option is not given (an empty value is not given)


# str, not Path: a PostgreSQL URL (postgresql://user@host/db) must reach memo.store.db
# unchanged (Path would fold its "//").  No envvar: memo.store.db.named_db reads $MEMO_DB
# itself (one reader), so that a refused value is named by where it came from (--db or
# $MEMO_DB) and an empty --db is told apart from an absent one.
DB = CliOption("db", ("--db",), str, "Database file, or a PostgreSQL URL postgresql://user@host/dbname "
               "(default: $MEMO_DB, else the user data dir).")
JSON = CliOption("as_json", ("--json",), bool, "Print one JSON document (schema in docs/cli-json.md).",
                 default=False)

QUERY_PARAM = "query"
QUERY_HELP = "What to look for (plain words; memo quotes operators itself)."


def _field_option(f: SearchField) -> CliOption:
    return CliOption(f.cli_param, f.cli, f.type, f.help + (" (repeatable)" if f.multiple else ""),
                     multiple=f.multiple)


# ``memo search QUERY``'s options in --help's order: the search fields, then the command's own.
SEARCH_OPTIONS: tuple[CliOption, ...] = (
    *(_field_option(f) for f in SEARCH_FIELDS),
    CliOption("mode", ("--mode",), str, MODE_HELP, default="auto"),
    CliOption("profile", ("--profile",), str, "Profile name or .toml path (default: $MEMO_PROFILE, else zscore).",
              envvar=PROFILE_ENV),
    CliOption("limit", ("--limit",), int,
              "Results to return (default: the profile's, 10; at most its limit.max, 100)."),
    CliOption("max_tokens", ("--max-tokens",), int, "Token budget for all results together."),
    CliOption("explain", ("--explain", "--why"), bool, "Show why each result ranks where it does.", default=False),
    DB,
    JSON,
)
