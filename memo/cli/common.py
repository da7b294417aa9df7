"""Shared plumbing for CLI commands: the --db / --json options, error mapping, output.

Commands only parse, call the library and print.  Every command takes ``--json`` and then
prints exactly one JSON document on stdout (schemas: docs/cli-json.md).  Errors become a
one-line message on stderr (or a JSON error document with --json) and the error's exit code.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from memo.errors import MemoError
from memo.serialize import to_jsonable

DbOption = Annotated[Path | None, typer.Option("--db", help="Database file (default: $MEMO_DB, else the user data dir).",
                                               envvar="MEMO_DB", show_envvar=True)]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document (schema in docs/cli-json.md).")]

F = TypeVar("F", bound=Callable[..., Any])


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(doc), ensure_ascii=False, indent=2) + "\n")


def handle_errors(func: F) -> F:
    """Map MemoError to its exit code and a one-line message (JSON with --json)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemoError as err:
            if kwargs.get("as_json"):
                print_json(err.to_dict())
            else:
                typer.echo(f"error: {err.one_line()}", err=True)
            raise typer.Exit(err.exit_code) from None

    return wrapper  # type: ignore[return-value]
