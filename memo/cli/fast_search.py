"""``memo search`` read without typer: the command lines people and agents type (issue 31.2).

A cold ``memo search`` spent a fifth of a keyword search's process importing typer and
building its command before the search began (docs/scale.md, "Cold CLI, session 25").  ``run(args)`` reads ``args`` (what
follows ``search``) with the options' own table, ``memo.cli.options.SEARCH_OPTIONS``, and
runs ``memo.cli.search_core.run_search`` as the typer command does: the same ``--json``
stdout, text checks, error mapping and exit codes (``memo.cli.plumbing``).

It reads only what it reads exactly as typer would: one query, flags and options each as
its own word (``--mode keyword``, ``-n work``), repeatable options repeated, whole numbers
in digits, ``--min-trust`` in plain decimals, the environment's ``MEMO_PROFILE`` when
``--profile`` is absent (an empty value is absent, as click reads it; ``MEMO_DB`` is read
by memo.store.db itself).  Anything else returns None and typer parses the line as always: ``--help``, an
unknown or misspelt option, ``--opt=value``, ``--``, a word starting with ``-`` where a
query or value belongs, an option given twice, a number in another form, no query or a
second one; typer then prints its help or its usage error.  ``MEMO_CLI_TYPER=1`` sends every
line to typer (the tests compare the two).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from memo.cli.options import JSON, QUERY_PARAM, SEARCH_OPTIONS, CliOption
from memo.cli.plumbing import check_text, closed_stdout, json_stdout, report_error, unexpected_error
from memo.cli.search_core import run_search
from memo.errors import MemoError

FORCE_TYPER_ENV = "MEMO_CLI_TYPER"

_BY_FLAG: dict[str, CliOption] = {flag: o for o in SEARCH_OPTIONS for flag in o.flags}
_INT = re.compile(r"[0-9]+\Z")
_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")


def _value(opt: CliOption, text: str) -> Any:
    """``text`` as ``opt``'s type, or None when typer might read it otherwise."""
    if opt.type is str:
        return text
    if opt.type is int:
        return int(text) if _INT.match(text) else None
    if opt.type is float:
        return float(text) if _DECIMAL.match(text) else None
    return None


def parse(args: Sequence[str]) -> dict[str, Any] | None:
    """The search command's keyword arguments as typer passes them, or None: typer's line."""
    out: dict[str, Any] = {}
    query: str | None = None
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-"):
            opt = _BY_FLAG.get(word)
            if opt is None:
                return None
            if opt.type is bool:
                out[opt.param] = True
                i += 1
                continue
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            value = _value(opt, args[i + 1])
            if value is None:
                return None
            if opt.multiple:
                out.setdefault(opt.param, []).append(value)
            elif opt.param in out:
                return None
            else:
                out[opt.param] = value
            i += 2
            continue
        if query is not None:
            return None
        query = word
        i += 1
    if query is None:
        return None
    for opt in SEARCH_OPTIONS:
        if opt.param not in out:
            env = os.environ.get(opt.envvar) if opt.envvar else None
            out[opt.param] = env if env else opt.default
    return {QUERY_PARAM: query, **out}


def run(args: Sequence[str]) -> int | None:
    """Run ``memo search ARGS`` and return its exit code; None: typer's to parse."""
    if os.environ.get(FORCE_TYPER_ENV):
        return None
    kwargs = parse(args)
    if kwargs is None:
        return None
    as_json = bool(kwargs.get(JSON.param))
    with json_stdout(as_json):
        return _call(kwargs, as_json)


_LABELS = {QUERY_PARAM: f"argument {QUERY_PARAM.upper()}", **{o.param: o.flags[0] for o in SEARCH_OPTIONS}}


def _call(kwargs: dict[str, Any], as_json: bool) -> int:
    """``memo.cli.common.handle_errors`` around ``run_search``, without typer."""
    try:
        check_text(kwargs, _LABELS.__getitem__)
        run_search(**kwargs)
        return 0
    except MemoError as err:
        report_error(err, as_json)
        return err.exit_code
    except BrokenPipeError:
        closed_stdout()
        return 0
    except Exception as exc:   # never a traceback (MEMO_DEBUG=1 prints it)
        err = unexpected_error(exc, f"{program_name()} search")
        report_error(err, as_json)
        return err.exit_code


def program_name() -> str:
    """The program's name as click's ``_detect_program_name`` gives it to typer (what an
    unexpected error names): the script's file name, or ``python -m memo``."""
    main = sys.modules.get("__main__")
    path = sys.argv[0] if sys.argv else ""
    package = getattr(main, "__package__", None)
    if package in (None, ""):
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"
