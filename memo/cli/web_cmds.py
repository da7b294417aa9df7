"""``memo web``: serve the local web UI (memo/serve/web.py; docs/web.md).

Parsing only.  The one rule decided here is the loud one: a --host that other machines can
reach is refused unless --allow-remote says the user means it (reliability.md R12).
"""

from __future__ import annotations

from typing import Annotated

import typer

from memo.cli.common import DbOption, JsonOption, echo, handle_errors, print_json
from memo.errors import MemoError, ValidationError
from memo.serve.guard import is_loopback


@handle_errors
def web(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback only unless --allow-remote).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0 picks a free one; the printed URL has it).")] = 8765,
    profile: Annotated[str | None, typer.Option("--profile", envvar="MEMO_PROFILE", show_envvar=True, help="Default search profile, a name or a .toml path (the page can pick another by name; default: $MEMO_PROFILE, else zscore).")] = None,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open the page in the default browser.")] = False,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Allow a non-loopback --host (the token is then the only lock, sent in clear text).")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Serve the web UI on 127.0.0.1 and print its URL (with a one-time token) on stderr;
    with --json also one JSON document on stdout once it listens (url, host, port, token,
    pid): a script can start it with --port 0 and read where it is."""
    if not is_loopback(host):
        if not allow_remote:
            raise ValidationError(f"--host {host} is not a loopback address; refusing to expose memo to the network",
                                  hint="keep the default 127.0.0.1, or add --allow-remote if you really mean it")
        echo(f"WARNING: memo web listens on {host}: every machine that can reach it and learns the token "
                   "can read and add memories; plain HTTP sends the token in clear text", err=True)
    from memo.serve.web import serve  # starlette/uvicorn only for this command

    listening = False

    def announce(doc: dict[str, object]) -> None:
        nonlocal listening
        listening = True
        if as_json:
            print_json(doc)

    try:
        serve(host=host, port=port, db=db, profile=profile, open_browser=open_browser, allow_remote=allow_remote,
              on_listening=announce)
    except MemoError as err:
        if not (as_json and listening):
            raise
        # The one JSON document was the start: a later failure is a line on stderr.
        echo(f"error: {err}", err=True)
        raise typer.Exit(err.exit_code) from None


def register(app: typer.Typer) -> None:
    app.command("web")(web)
