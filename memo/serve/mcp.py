"""``memo-mcp``: memo as an MCP server (stdio, or Streamable HTTP with ``--http``).

This is the command; the server is ``memo.serve.mcp_server`` (the official ``mcp`` SDK).
This module imports neither the SDK nor anything heavy (issue 31.2: memo-mcp answers
``initialize`` within 300 ms of its start, and importing the SDK takes 500-650 ms):

1. parse the arguments (an error exits with 2 before anything is answered);
2. over stdio, start a thread importing the server module while this one opens the
   database (``MemoTools``: migrations, the profile) and reads the first line from stdin;
   a recorded answer to that ``initialize`` goes out at once (memo.serve.mcp_early);
3. wait for the import, then serve: the SDK gets the first line as always.

``memo-mcp backfill`` never imports the SDK; ``--http`` imports it first and serves.

Usage: ``memo-mcp [--db PATH] [--profile NAME|PATH] [--log-level LEVEL] [--no-backfill] [--http [--host H] [--port P] [--allow-remote]]``, or
``memo-mcp backfill [--db PATH] [--model ID]`` (docs/mcp.md).  The database is ``--db``, else ``$MEMO_DB``, else the user data dir.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from typing import Any

from memo.errors import MemoError, ValidationError
from memo.serve.mcp_http import DEFAULT_PORT, MCP_PATH, TOKEN_ENV

log = logging.getLogger("memo.serve.mcp")
# The longest the SDK's import waits for the main thread (a database that is slow to open
# must not hold the server back further).
IMPORT_HOLD_S = 2.0


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="memo-mcp", description="memo as an MCP server (stdio, or Streamable HTTP "
                                                               "with --http).",
                                 epilog="memo-mcp backfill [--db PATH] [--model ID] [--batch-size N]: embed the "
                                        "queued passages and facts, as `memo backfill --json`, and exit.")
    ap.add_argument("--db", help="database file (default: $MEMO_DB, else the user data dir)")
    ap.add_argument("--profile", default=None,
                    help="default search profile, a name or a .toml path (default: $MEMO_PROFILE, else zscore)")
    ap.add_argument("--log-level", default=os.environ.get("MEMO_LOG_LEVEL", "WARNING").upper(),
                    choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                    help="stderr log level (default: $MEMO_LOG_LEVEL, else WARNING)")
    ap.add_argument("--no-backfill", action="store_true",
                    help="do not embed queued passages at start (default: a background thread does)")
    http = ap.add_argument_group("Streamable HTTP (docs/mcp.md)")
    http.add_argument("--http", action="store_true",
                      help=f"serve MCP over Streamable HTTP at http://HOST:PORT{MCP_PATH} instead of stdio; every "
                           f"request needs 'Authorization: Bearer <token>' (${TOKEN_ENV}, else a random token "
                           "printed on stderr)")
    http.add_argument("--host", default="127.0.0.1", help="address to listen on with --http (loopback only unless "
                                                           "--allow-remote; default 127.0.0.1)")
    http.add_argument("--port", type=_port, default=DEFAULT_PORT,
                      help=f"port with --http (0 picks a free one; default {DEFAULT_PORT})")
    http.add_argument("--allow-remote", action="store_true",
                      help="allow a non-loopback --host (the token is then the only lock, sent in clear text)")
    sub = ap.add_subparsers(dest="command", metavar="{backfill}")
    bf = sub.add_parser("backfill", help="embed passages and facts queued while the model was unavailable "
                                         "(the same library call as `memo backfill`), print its JSON report, exit")
    bf.add_argument("--db", dest="backfill_db", help="database file (default: as above)")
    bf.add_argument("--model", "-m", default=None, help="model id (default: $MEMO_MODEL or the registry default)")
    bf.add_argument("--batch-size", type=int, default=64, help="passages per embedding batch (1..1024)")
    argv = sys.argv[1:] if argv is None else list(argv)
    _refuse_unknown_options(ap, sub, argv)
    return ap.parse_args(argv)


def _refuse_unknown_options(ap: argparse.ArgumentParser, sub: Any, argv: list[str]) -> None:
    """argparse reads ``memo-mcp --dbb x`` as the sub-command ``x`` ("invalid choice: 'x'
    (choose from 'backfill')"); name the unknown option instead."""
    known = set(ap._option_string_actions)
    for parser in sub.choices.values():
        known |= set(parser._option_string_actions)
    for arg in argv:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        negative = name[1:].replace(".", "", 1).isdigit()       # a value such as --port -1
        if name.startswith("-") and name != "-" and not negative and name not in known:
            ap.error(f"unknown option {name} (memo-mcp --help lists the options)")


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0..65535)")
    return int(text)


def run_backfill(db: str | None, model: str | None, batch_size: int) -> int:
    """``memo-mcp backfill``: ``memo.embed.backfill.backfill``, as ``memo backfill --json``
    (the report on stdout; an error is one line on stderr and memo's exit code)."""
    from memo.embed.backfill import backfill
    from memo.serialize import to_jsonable
    from memo.store.db import open_db
    try:
        if not 1 <= batch_size <= 1024:
            raise ValidationError(f"--batch-size {batch_size} is outside 1..1024")
        # create=False as `memo backfill`: a mistyped --db is refused (exit 6), not made empty
        conn = open_db(db, write=True, create=False)
        try:
            report = backfill(conn, model, progress=True, batch_size=batch_size)
        finally:
            conn.close()
    except MemoError as err:
        sys.stderr.write(f"memo-mcp backfill: error: {err.one_line()}\n")
        return err.exit_code
    sys.stdout.write(json.dumps(to_jsonable(report), indent=2, ensure_ascii=False) + "\n")
    return 0


def _load_server(box: dict[str, Any], go: threading.Event) -> None:
    """Import the server module (the SDK with it) on a thread once ``go`` is set (or after
    ``IMPORT_HOLD_S`` regardless); an exception is kept for main."""
    try:
        go.wait(IMPORT_HOLD_S)
        gate = os.environ.get("MEMO_MCP_IMPORT_GATE")   # tests: hold the import until this file exists
        while gate and not os.path.exists(gate):
            time.sleep(0.01)
        import memo.serve.mcp_server as server
        box["server"] = server
    except BaseException as exc:  # noqa: BLE001 - re-raised by main once it needs the module
        box["error"] = exc


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    # Configured before MCPServer() so its own basicConfig is a no-op: plain lines on stderr.
    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="memo-mcp %(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "backfill":
        raise SystemExit(run_backfill(args.backfill_db or args.db, args.model, args.batch_size))
    box: dict[str, Any] = {}
    # The SDK's import (~0.5 s of Python) waits until this thread has done its own imports and
    # opened the database, and is about to read the first request: on a busy machine two
    # threads of Python share one GIL, and the import would stretch the early answer to
    # ``initialize`` (issue 31.2) by as much as it runs beside it, for no earlier start: the
    # work is the same either way.  While this thread waits on stdin, the import runs.
    go = threading.Event()
    loader = threading.Thread(target=_load_server, args=(box, go), name="memo-mcp-import", daemon=True)
    loader.start()
    from memo.serve.mcp_tools import MemoTools
    from memo.store.postgres.connection import redact
    try:
        tools = MemoTools(args.db, args.profile)
    except MemoError as err:
        sys.stderr.write(f"memo-mcp: error: {err.one_line()}\n")
        raise SystemExit(err.exit_code) from None
    log.info("serving %s (profile %s)", redact(str(tools.db_path)), tools.default_profile.name)
    if not args.http:   # this thread's last import, before the SDK's begins
        from memo.serve.mcp_early import start
    go.set()     # from here this thread waits on stdin (stdio) or on the import (--http)
    early = None if args.http else start(0, 1)
    loader.join()
    if "error" in box:
        tools.close()
        raise box["error"]
    box["server"].serve(args, tools, early)


if __name__ == "__main__":
    main()
