"""The CLI's plumbing that needs no command-line parser: output, errors, --json's stdout,
the end of a one-shot process.

``memo.cli.common`` (the typer skin's shared parts) and ``memo.cli.fast_search`` (``memo
search`` parsed without typer, issue 31.2) both use it, so a search prints, fails and exits
the same whichever parsed it.  Nothing here imports typer.

* ``echo`` / ``echo_err`` write every line a command prints for people, control
  characters made visible (``visible``: stored text never drives the terminal);
  ``print_json`` writes the one JSON document of a ``--json`` command.
* ``unexpected_error`` maps an exception memo did not map itself to a ``MemoError`` (never a
  traceback; ``MEMO_DEBUG=1`` prints it on stderr).
* Under ``--json`` fd 1 points at stderr while the command runs (``json_stdout``) and the
  document is written to a private duplicate of the real stdout, so output that native
  libraries (onnxruntime, tokenizers) or careless Python code write to stdout lands on
  stderr and stdout holds the JSON document only.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memo.errors import MemoError, ValidationError
from memo.serialize import to_jsonable

# Control characters a terminal acts on: C0 but tab and newline, DEL, C1 (U+0080..U+009F:
# CSI and OSC have one-character forms there).  ESC starts every CSI/OSC sequence (clear the
# screen, conceal, set the window title...), BEL ends an OSC, CR rewrites the line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

USAGE_HINT = "run the command with --help for its arguments and options"
UNEXPECTED_HINT = "memo did not expect this; MEMO_DEBUG=1 prints the traceback on stderr"

# The real stdout while a --json command runs with fd 1 pointed at stderr (None: use sys.stdout).
_json_fd: int | None = None


def encodable(text: str) -> str:
    """``text`` that any UTF-8 stream accepts (lone surrogates shown as escapes)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def print_json(doc: Any, *, line: bool = False) -> None:
    """One JSON document on stdout; ``line``: on one line (a stream of documents, JSON Lines,
    as ``memo import --watch`` prints one per import)."""
    value = to_jsonable(doc)
    indent = None if line else 2
    text = json.dumps(value, ensure_ascii=False, indent=indent) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:          # a lone surrogate in a value: JSON's \\udXXX escapes are valid
        text = json.dumps(value, ensure_ascii=True, indent=indent) + "\n"
        data = text.encode("ascii")
    if _json_fd is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(_json_fd, view):]


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as its escape
    (``\\x1b``, ``\\x07``): what memo prints for people may hold stored text, and stored
    text must not drive the terminal (issue: a note holding ``ESC [2J`` cleared the screen of
    whoever searched for it, ``ESC ] 0;…BEL`` set their window title).  A CR before a
    newline (a Windows line end) is dropped rather than shown on every line."""
    if text.isprintable():
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))


def states_of(superseded_at: str | None, forgotten_at: str | None) -> str:
    """"superseded", "forgotten" or both, for a list line of a record or fact ('' when live)."""
    return ", ".join(w for w, at in (("superseded", superseded_at), ("forgotten", forgotten_at)) if at)


def echo(text: str = "", err: bool = False) -> None:
    """One line on stdout (stderr with ``err``), flushed.  Every line a command prints for
    people goes through here, so control characters are made visible here (``visible``),
    on a terminal and in a pipe alike; ``--json`` documents go through ``print_json``
    (JSON escapes them)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = visible(text) + "\n"
    try:
        stream.write(out)
    except UnicodeEncodeError:      # a stream that is not UTF-8: what it can show
        enc = getattr(stream, "encoding", None) or "utf-8"
        stream.write(out.encode(enc, "replace").decode(enc))
    stream.flush()


def echo_err(line: str) -> None:
    echo(encodable(line), err=True)


def report_error(err: MemoError, as_json: bool) -> None:
    if as_json:
        print_json(err.to_dict())
    else:
        echo_err(f"error: {err.one_line()}")


def bad_text(value: str) -> str | None:
    """None if ``value`` is valid Unicode text, else what is wrong with it."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = ord(value[exc.start])
        if 0xDC80 <= char <= 0xDCFF:     # how Python decodes an argv byte that is not UTF-8
            return f"is not valid UTF-8 (byte 0x{char - 0xDC00:02x} at character {exc.start})"
        return f"holds a lone surrogate U+{char:04X} at character {exc.start}"
    return None


def check_text(kwargs: dict[str, Any], label: Callable[[str], str]) -> None:
    """Refuse text options and arguments that are not valid Unicode (``label(name)``: how the
    command line names the parameter).  Paths are left to the library (a file name may be
    any bytes)."""
    for name, value in kwargs.items():
        values: Sequence[Any] = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            problem = bad_text(item) if isinstance(item, str) else None
            if problem:
                raise ValidationError(f"{label(name)} {problem}",
                                      hint="pass the text in UTF-8 (check the terminal's or the file's encoding)")


# OSErrors that say a path is unusable as given (not that the disk or the system failed).
_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EINVAL,
                          errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS})


def unexpected_error(exc: BaseException, where: str = "memo") -> MemoError:
    """A ``MemoError`` for an exception memo did not map itself (never a traceback)."""
    if os.environ.get("MEMO_DEBUG"):
        import traceback  # here: it imports textwrap and linecache, which a search never needs

        echo_err("".join(traceback.format_exception(exc)).rstrip())
    if isinstance(exc, UnicodeError):
        return ValidationError(f"the input holds text that is not valid Unicode ({type(exc).__name__}: "
                               f"{_first_line(exc)})",
                               hint="pass text in UTF-8 without lone surrogates")
    if isinstance(exc, OSError) and exc.strerror:
        path = f": {os.fsdecode(exc.filename)}" if exc.filename is not None else ""
        if exc.filename is not None and exc.errno in _PATH_ERRNOS:
            # A path memo was given (or one beside it) that cannot be used as it is: the
            # caller's input, so exit 2 like any other bad value (issue 33.5: a 300-character
            # --db or DEST was a generic error, exit 1).
            return ValidationError(f"{where}: the path cannot be used: {exc.strerror}{path[:300]}"
                                   f"{'…' if len(path) > 300 else ''}",
                                   hint="check the path: its length, that its folders exist and are folders, "
                                        "and its permissions")
        return MemoError(f"{where} failed: {exc.strerror}{path}",
                         hint="check the path, that it is the kind of file expected, and its permissions")
    return MemoError(f"{where} failed unexpectedly ({type(exc).__name__}: {_first_line(exc)})",
                     hint=UNEXPECTED_HINT)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line[:200] + ("…" if len(line) > 200 else "")


def closed_stdout() -> None:
    """The reader of stdout went away (``memo list | head``): stop quietly, as Unix tools
    do, with stdout pointed at /dev/null so the interpreter's final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


# --- the end of a one-shot process ----------------------------------------------------------
# The interpreter's teardown after a search's output is written: 45-70 ms for a hybrid
# search (the model's session, onnxruntime's thread pools and libraries, numpy), 12-14 ms
# for a keyword one above `python -c "import sqlite3"`'s 5 ms: measured from the search's
# last line to the process's exit, 100k passages, 2 cores.  A read-only command asks the
# console script (``memo.cli.main``) to end the process once its output is flushed, after
# the atexit handlers (a user's, coverage's, logging's) have run.
_skip_teardown = False


def skip_teardown() -> None:
    """Let ``memo.cli.main`` end this process without the interpreter's teardown (module
    clean-up, finalizers, library unloading; atexit handlers still run).  Only for a
    command that holds nothing a teardown must finish: no open write, no buffered file,
    its database connection closed; a thread still running is ended with the process."""
    global _skip_teardown
    _skip_teardown = True


def teardown_skipped() -> bool:
    return _skip_teardown and hasattr(atexit, "_run_exitfuncs")   # CPython's; elsewhere exit as usual


def exit_now(code: object) -> None:
    """Run the atexit handlers, flush stdout and stderr, and end the process with ``code``
    (``SystemExit.code``) without the rest of the interpreter's teardown."""
    atexit._run_exitfuncs()           # type: ignore[attr-defined]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):     # a reader that went away: as closed_stdout
            pass
    os._exit(code if isinstance(code, int) and not isinstance(code, bool) else 0 if code is None else 1)


def wants_json(argv: Sequence[str]) -> bool:
    """``--json`` given as an option (before a ``--`` that ends the options)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


@contextmanager
def json_stdout(enabled: bool) -> Iterator[None]:
    """While a --json command runs, fd 1 is stderr and the document goes to the real
    stdout (a private duplicate).  Without a real fd 1 (tests' CliRunner) nothing changes."""
    global _json_fd
    if not enabled or _json_fd is not None:
        yield
        return
    try:
        sys.stdout.flush()
        if sys.stdout.fileno() != 1:
            raise ValueError("sys.stdout is not fd 1")
        saved = os.dup(1)
    except (AttributeError, OSError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        yield
        return
    _json_fd = saved
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        _json_fd = None
        os.dup2(saved, 1)
        os.close(saved)
