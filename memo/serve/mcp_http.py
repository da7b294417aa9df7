"""``memo-mcp --http``: the same MCP server over Streamable HTTP (MCP specification,
transport "Streamable HTTP"), beside stdio.

The tools, their schemas and their answers are ``build_server``'s, unchanged: only the
transport differs.  The SDK's own Streamable HTTP app (``MCPServer.streamable_http_app``)
serves ``/mcp``; memo wraps it in the web UI's guard (``memo.serve.web.GuardMiddleware``,
predicates in ``memo.serve.guard``), so both HTTP skins refuse the same requests:

* it binds 127.0.0.1 unless ``--allow-remote`` (a non-loopback ``--host`` is refused
  without it, as ``memo web`` does);
* ``Host`` must name a loopback authority with the server's port and ``Origin``, when a
  browser sends one, a loopback origin: a web page the user opens cannot drive the server
  (CSRF) and a DNS-rebinding page cannot read it (the MCP specification says servers MUST
  check ``Origin``);
* every request carries ``Authorization: Bearer <token>``; the token is
  ``$MEMO_MCP_TOKEN``, else a random one printed on stderr at start (never taken from the
  command line, where other users of the machine can read it in the process list);
* a request body over ``MAX_MESSAGE_BYTES`` (the stdio transport's line cap) is 413.

The SDK's own DNS-rebinding check is switched off because the guard above does it, with
the same rules as the web UI (one definition), including ``--allow-remote``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from memo.errors import ValidationError
from memo.serve import guard

if TYPE_CHECKING:
    from starlette.applications import Starlette

TOKEN_ENV = "MEMO_MCP_TOKEN"
MCP_PATH = "/mcp"
DEFAULT_PORT = 8766       # `memo web` takes 8765
# The guard's refusals, in this skin's words (the web UI's name its printed URL).
HINTS = {
    "Unauthorized": f"send 'Authorization: Bearer <token>': ${TOKEN_ENV}, or the token memo-mcp printed at start",
    "Forbidden": "connect to the URL memo-mcp printed (127.0.0.1, localhost or [::1] with its port), "
                 "from a client that sends no foreign Origin",
    "BadRequest": "send a Host header of the form 127.0.0.1:PORT (the URL memo-mcp printed)",
}


def create_http_app(server: object, token: str, *, names: frozenset[str] = guard.LOOPBACK_NAMES,
                    max_body: int) -> Starlette:
    """The ASGI app serving ``server`` (a ``MemoMCPServer``) at ``/mcp`` behind the guard."""
    # Load-time deferral: memo-mcp imports this module for its constants at every start;
    # the web UI's middleware (starlette and memo.serve.web) only when serving HTTP.
    from mcp.server.transport_security import TransportSecuritySettings

    from memo.serve.web import GuardMiddleware
    app: Starlette = server.streamable_http_app(  # type: ignore[attr-defined]
        streamable_http_path=MCP_PATH, max_request_body_size=max_body,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    app.add_middleware(GuardMiddleware, token=token, names=names, max_body=max_body,
                       hints={**HINTS, "ContentTooLarge": f"send at most {max_body} bytes per message"})
    return app


def endpoint_url(sock_name: tuple[str, int]) -> str:
    addr, port = sock_name[:2]
    if addr in guard.WILDCARD_HOSTS:
        addr = "127.0.0.1"
    elif ":" in addr:
        addr = f"[{addr}]"
    return f"http://{addr}:{port}{MCP_PATH}"


def serve_http(server: object, *, host: str, port: int, allow_remote: bool, log_level: str, max_body: int) -> None:
    """Serve until interrupted.  Prints one line on stderr: the endpoint, and the token
    unless it came from ``$MEMO_MCP_TOKEN``."""
    import uvicorn  # only when serving over HTTP

    from memo.serve.web import bind_socket, resolve_token  # as uvicorn (create_http_app)

    if not guard.is_loopback(host) and not allow_remote:
        raise ValidationError(f"--host {host} is not a loopback address; refusing to expose memo to the network",
                              hint="keep the default 127.0.0.1, or add --allow-remote if you really mean it")
    token = resolve_token(os.environ.get(TOKEN_ENV) or None, env=TOKEN_ENV)
    app = create_http_app(server, token, names=guard.allowed_names(host, allow_remote), max_body=max_body)
    sock = bind_socket(host, port)
    url = endpoint_url(sock.getsockname())
    if not guard.is_loopback(host):
        sys.stderr.write(f"memo-mcp: WARNING: listening on {host}: plain HTTP sends the token in clear text\n")
    shown = "from $" + TOKEN_ENV if os.environ.get(TOKEN_ENV) else token
    sys.stderr.write(f"memo-mcp: Streamable HTTP at {url} (send 'Authorization: Bearer <token>'; token: {shown})\n")
    sys.stderr.flush()
    config = uvicorn.Config(app, log_level=log_level.lower(), access_log=False, server_header=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
