"""Shared plumbing for CLI commands: the --db / --json options, error mapping, output.

Commands only parse, call the library and print.  Every command takes ``--json`` and then
prints exactly one JSON document on stdout (schemas: docs/cli-json.md).  Errors become a
one-line message on stderr (or a JSON error document with --json) and the error's exit code.

Nothing else may come out (issue 9):

* ``handle_errors`` maps every exception a command raises to a ``MemoError`` and its exit
  code: memo's own errors as they are, an argument that is not valid UTF-8 (argv bytes
  decode to lone surrogates) to ``ValidationError``, anything unexpected to ``MemoError``
  (exit 1) with the exception's type in the message; ``MEMO_DEBUG=1`` adds the traceback
  on stderr.  No traceback is ever printed otherwise.
* ``MemoGroup`` (the root command) prints usage errors (missing argument, bad option
  value, unknown option) as a ``ValidationError`` document under ``--json``, and resolves
  the command groups other distributions add (``memo eval``: memo/cli/plugins.py).
* Under ``--json`` fd 1 points at stderr while the command runs and the document is
  written to a private duplicate of the real stdout (``memo.cli.plumbing``, where the
  output, the error mapping and the end of a one-shot process live without typer).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Annotated, Any, ClassVar, TypeVar, get_args, get_origin

import typer
from typer._click.exceptions import ClickException, UsageError
from typer.core import TyperGroup

from memo.cli import options, plugins
from memo.cli.options import CliOption
from memo.cli.plumbing import (  # noqa: F401  (re-exported: the command modules import them from here)
    USAGE_HINT,
    check_text,
    closed_stdout,
    echo,
    echo_err,
    encodable,
    exit_now,
    json_stdout,
    print_json,
    report_error,
    skip_teardown,
    states_of,
    teardown_skipped,
    unexpected_error,
    visible,
    wants_json,
)
from memo.errors import MemoError, ValidationError
from memo.serialize import to_jsonable  # noqa: F401  (re-exported)


def typer_annotation(opt: CliOption) -> Any:
    """``opt`` (memo.cli.options: where options are defined) as a typer option annotation."""
    info = typer.Option(*opt.flags, help=opt.help, envvar=opt.envvar, show_envvar=opt.envvar is not None)
    if opt.type is bool:
        return Annotated[bool, info]
    if opt.multiple:
        return Annotated[list[opt.type] | None, info]  # type: ignore[name-defined]
    return Annotated[opt.type if opt.default is not None else opt.type | None, info]  # type: ignore[operator]


DbOption = typer_annotation(options.DB)
JsonOption = typer_annotation(options.JSON)

F = TypeVar("F", bound=Callable[..., Any])


def _param_label(name: str) -> str:
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    for param in (ctx.command.params if ctx is not None else ()):
        if param.name == name:
            return param.opts[0] if param.param_type_name == "option" else f"argument {name.upper()}"
    return name


def check_text_params(kwargs: dict[str, Any]) -> None:
    """``plumbing.check_text``, parameters named as click names them."""
    check_text(kwargs, _param_label)


def _command_path() -> str:
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return ctx.command_path if ctx is not None else "memo"


def handle_errors(func: F) -> F:
    """Map every exception to a ``MemoError``, its exit code and a one-line message (a JSON
    error document with --json)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            check_text_params(kwargs)
            return func(*args, **kwargs)
        except MemoError as err:
            report_error(err, as_json)
            raise typer.Exit(err.exit_code) from None
        except (typer.Exit, typer.Abort, ClickException):
            raise
        except BrokenPipeError:
            closed_stdout()
            raise typer.Exit(0) from None
        except Exception as exc:   # RecursionError, OSError, ValueError...: never a traceback
            err = unexpected_error(exc, _command_path())
            report_error(err, as_json)
            raise typer.Exit(err.exit_code) from None

    return wrapper  # type: ignore[return-value]


# --- the root command -----------------------------------------------------------------------
def memo_typer(**settings: Any) -> typer.Typer:
    """A typer app with memo's settings: the root, and the app each command module registers
    its commands on when the root loads it (``MemoGroup.get_command``)."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, **settings)


def _metavar(param: Any) -> str | None:
    """What ``--help`` shows after an option or for an argument: words a user reads (TEXT,
    N, PATH, the choices), not the Python type typer would print (``<str>``,
    ``<list[str]>``)."""
    if getattr(param, "param_type_name", "") == "argument":
        return param.name.upper() + ("..." if param.nargs == -1 else "")
    desc = getattr(param, "type_descriptor", None)
    if desc is None or _says_itself(param) or getattr(param, "count", False):
        return None
    if desc.is_choice and desc.choices:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if desc.is_path:
        return "PATH"
    base = _bare(desc.annotation)
    if base is int:
        return "N"
    if base is float:
        return "NUMBER"
    if base is Path or (isinstance(base, type) and issubclass(base, PurePath)):
        return "PATH"
    return "TEXT"


def _says_itself(param: Any) -> bool:
    """An argument (its metavar is its name) or a flag (it takes no value)."""
    if getattr(param, "param_type_name", "") == "argument" or getattr(param, "is_flag", False):
        return True
    desc = getattr(param, "type_descriptor", None)
    return desc is not None and _bare(desc.annotation) is bool


def _bare(annotation: Any) -> Any:
    """``X | None`` -> X; ``list[X]`` -> X."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is list or (args and len(args) == 1):
        return _bare(args[0])
    return annotation


try:    # typer >= 0.2x coerces values with pydantic (typer._coercion); older typer does not
    from typer._coercion import RuntimeParam as _RuntimeParam
    from typer._coercion import build_runtime_param as _build_runtime_param
except ImportError:  # pragma: no cover - another typer: its own coercion, nothing to defer
    _RuntimeParam = None  # type: ignore[assignment,misc]


if _RuntimeParam is not None:
    @dataclasses.dataclass(frozen=True)
    class _TextFirst(_RuntimeParam):  # type: ignore[misc,valid-type]
        """typer's coercion of a parameter, its pydantic ``TypeAdapter`` built only when needed.
        typer builds one for every parameter of the command, given or not: a cold ``memo
        search`` paid ~80 ms importing pydantic to turn the strings argv holds into the same
        strings (issue 31.2).  A parameter left out (None) never reaches here (typer's
        ``RuntimeParam.coerce``); an exact ``str`` for a ``str`` parameter is returned as the
        adapter returns it (the same object; a new list of them for ``list[str]``); any other
        value goes to typer's own coercion, built then (same result, same error messages)."""

        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.annotation is str and type(value) is str:
                return value
            if (self.annotation == list[str] and isinstance(value, (list, tuple))
                    and all(type(v) is str for v in value)):
                return list(value)
            real = _build_runtime_param(self.descriptor)
            param._runtime_param = real
            return real._coerce_value(value, param=param, ctx=ctx)


def _text_first(param: Any) -> None:
    """Install ``_TextFirst`` on a typer parameter that typer has not coerced yet."""
    desc = getattr(param, "type_descriptor", None)
    if _RuntimeParam is None or desc is None or getattr(param, "_runtime_param", False) is not None:
        return
    text = desc.parameter_info.parser is None and desc.file_annotation is None
    param._runtime_param = _TextFirst(parameter_info=desc.parameter_info,
                                      annotation=desc.annotation if text else None, descriptor=desc)


def plain_metavars(cmd: Any) -> None:
    """Give every parameter of ``cmd`` (and of its sub-commands) a plain metavar, unless it
    has one of its own; text parameters coerce without pydantic (``_TextFirst``)."""
    for param in getattr(cmd, "params", ()):
        _text_first(param)
        if param.metavar is None:
            param.metavar = _metavar(param)
        if _says_itself(param) and hasattr(param, "display_type_rich"):
            # typer prints the Python type beside an argument's name (`QUERY <str>`) and a
            # flag's (`--explain <bool>`); the name says it (an instance attribute shadows
            # the method for this parameter only).
            param.display_type_rich = lambda ctx: None
    if not getattr(cmd, "_memo_plain_help", False) and hasattr(cmd, "get_help_option"):
        made = cmd.get_help_option

        def help_option(ctx: Any) -> Any:
            opt = made(ctx)
            if opt is not None:
                opt.display_type_rich = lambda ctx: None
                _text_first(opt)
            return opt

        cmd.get_help_option, cmd._memo_plain_help = help_option, True
    for sub in (getattr(cmd, "commands", None) or {}).values():
        plain_metavars(sub)


class MemoGroup(TyperGroup):
    """The ``memo`` group: usage errors become a JSON error document under ``--json``,
    stdout carries nothing but that document, and no exception escapes as a traceback.

    Its commands are loaded on demand: ``command_modules`` maps a command name to the module
    of memo.cli whose ``register(app)`` defines it (memo/cli/__init__.py); the module is
    imported when the command is asked for, and every command it registers joins the group."""

    command_modules: ClassVar[Mapping[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        as_json = wants_json(argv)
        with json_stdout(as_json):
            code = self._run(argv, prog_name, complete_var, as_json, **extra)
        sys.exit(code)

    def _run(self, argv: list[str], prog_name: str | None, complete_var: str | None, as_json: bool,
             **extra: Any) -> int:
        plain_metavars(self)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except ClickException as exc:
            if as_json:
                cls = ValidationError if isinstance(exc, UsageError) else MemoError
                err = cls(encodable(exc.format_message()), hint=USAGE_HINT)
                print_json({**err.to_dict(), "exit_code": exc.exit_code})
            else:
                self._show_usage_error(exc)
            return exc.exit_code
        except typer.Abort:
            report_error(MemoError("aborted", hint="run the command again"), as_json)
            return 1
        except MemoError as err:
            report_error(err, as_json)
            return err.exit_code
        except Exception as exc:
            err = unexpected_error(exc)
            report_error(err, as_json)
            return err.exit_code

    def list_commands(self, ctx: Any) -> list[str]:
        """``command_modules``' order, then registration order, the plugin slots last."""
        names = list(dict.fromkeys([*self.command_modules, *super().list_commands(ctx)]))
        return [n for n in names if n not in plugins.SLOTS] + [n for n in names if n in plugins.SLOTS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            module = self.command_modules.get(cmd_name)
            # A name no module defines (a typo) loads them all: typer's "Did you mean" picks
            # from the commands the group holds.
            for name in (module,) if module is not None else dict.fromkeys(self.command_modules.values()):
                self._load(name)
        return super().get_command(ctx, cmd_name)

    def _load(self, module: str) -> None:
        """Import ``memo.cli.<module>`` and add the commands its ``register`` defines (once)."""
        if module in self._loaded:
            return
        self._loaded.add(module)
        sub = memo_typer()
        importlib.import_module(f"memo.cli.{module}").register(sub)
        for name, cmd in typer.main.get_group(sub).commands.items():
            self.commands.setdefault(name, cmd)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """As typer resolves it, except a plugin slot (``memo eval``): the installed plugin's
        group when there is one, else the placeholder that says how to install it.  The entry
        points are read only here, when the command line names the slot (memo/cli/plugins.py)."""
        name, cmd, rest = super().resolve_command(ctx, args)
        if name in plugins.SLOTS:
            cmd = plugins.load(name) or cmd
        if cmd is not None:
            plain_metavars(cmd)
        return name, cmd, rest

    def _show_usage_error(self, exc: ClickException) -> None:
        """As typer shows it (rich panel on stderr when rich is installed)."""
        from typer.core import HAS_RICH

        try:
            if HAS_RICH and self.rich_markup_mode is not None:
                from typer import rich_utils

                rich_utils.rich_format_error(exc)
            else:
                exc.show()
        except UnicodeError:
            echo_err(f"error: {exc.format_message()}")
