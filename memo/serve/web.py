"""``memo web``: a small local web UI over the same library calls as the CLI and MCP.

A skin: every ``/api`` handler parses its input (pydantic, memo/serve/web_input.py), calls one
``MemoTools`` method (memo/serve/mcp_tools.py, shared with the MCP server) on a worker
thread and returns the document ``memo … --json`` prints.  No search logic lives here.

Security (docs/web.md; reliability.md R12, R14):
* binds 127.0.0.1 unless the caller passes ``allow_remote`` (the CLI says so loudly);
* ``GuardMiddleware`` checks Host / Origin / Sec-Fetch-Site (memo.serve.guard) on every
  request, then the bearer token on every request but the page, its static files and
  ``/healthz``, before any handler runs;
* the token reaches the page in the URL fragment (never sent to a server, never in a
  Referer); the page keeps it in sessionStorage and strips it from the address bar;
* every response carries a CSP without inline script or style, ``nosniff`` and
  ``no-referrer``; the page renders memory text with ``textContent`` only.

Embedding: ``serve`` starts the background embedder (adds are embedded after their commit);
passages other processes leave queued while it runs are embedded when an answer shows them
(memo.serve.pending_vectors, called by ``MemoTools.search`` and ``MemoTools.stats``, which
memo-mcp shares).

Errors: a ``MemoError`` becomes its ``http_status`` with ``{"error", "type", "hint"}``;
bad parameters are 400 the same way, and so are JSON bodies over ``MAX_JSON_DEPTH`` levels,
with a lone surrogate or a non-finite number (web_input.parse_json) and any
OverflowError / UnicodeError / RecursionError a handler meets (input memo cannot handle);
anything else unexpected is logged on stderr and answered with a generic 500 JSON body
(never a traceback).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memo import __version__, metrics
from memo.cli.options import SEARCH_OPTIONS
from memo.errors import MemoError, ValidationError
from memo.profile import load_profile, profile_names
from memo.serve import guard
from memo.serve.mcp_tools import MemoTools
from memo.serve.web_input import (
    FLAG_WORDS,
    MAX_JSON_DEPTH,  # noqa: F401 (re-exported)
    SEARCH_KEYS,
    parse_add_body,
    parse_search_params,
    search_fields,
)
from memo.types import SEARCH_FIELDS

log = logging.getLogger("memo.serve.web")

STATIC_DIR = Path(__file__).with_name("static")
MAX_BODY_BYTES = 1 << 20  # one memory is text; 1 MiB is far above any sane note
TOKEN_ENV = "MEMO_WEB_TOKEN"

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

# Hints written for the CLI name its flags; over HTTP the same advice names parameters.
_WEB_HINTS: dict[str, str] = {
    "ValidationError": "check the parameter against docs/web.md (API routes) and try again",
    "NotFound": "record ids come from search results (record_id) or an add report; routes are in docs/web.md",
    "Unauthorized": "send 'Authorization: Bearer <token>'; the token is in the URL `memo web` printed",
    "Forbidden": "open the URL `memo web` printed (127.0.0.1, localhost or [::1] with its port)",
    "BadRequest": "send a Host header of the form 127.0.0.1:PORT (the URL `memo web` printed)",
    "ContentTooLarge": f"send at most {MAX_BODY_BYTES} bytes per request",
    "UnsupportedMediaType": "send the body as JSON with 'Content-Type: application/json'",
    "MethodNotAllowed": "see docs/web.md for the method of each route",
    "InternalError": "the server logged the details on its stderr and is still running",
}


# --- CLI flags in a search's advice -> web parameters -------------------------------------
def _flag_params() -> dict[str, str]:
    """Each long flag of ``memo search`` (memo.cli.options, the one table of them) -> the web
    query parameter that does the same: a search field's web name (memo.types.SEARCH_FIELDS:
    --tag is tags, --from is from), else the parameter of the option's own name (mode,
    profile, limit, max_tokens, explain).  --db and --json have none.  The search document
    stays the CLI's (the same on every surface, tests/integration/test_surface_parity.py);
    the page words its ``hint`` and ``narrow_hint`` with this table (GET /api/form)."""
    by_param = {f.cli_param: f.web for f in SEARCH_FIELDS}
    params: dict[str, str] = {}
    for opt in SEARCH_OPTIONS:
        web = by_param.get(opt.param) or (opt.param if opt.param in SEARCH_KEYS else None)
        if web is not None:
            params.update({flag: web for flag in opt.flags if flag.startswith("--")})
    return params


FLAG_PARAMS = _flag_params()


# --- errors ------------------------------------------------------------------------------
def error_response(status: int, type_name: str, message: str, hint: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    doc = {"error": message, "type": type_name, "hint": hint if hint is not None else _WEB_HINTS.get(type_name, "")}
    return JSONResponse(doc, status_code=status, headers=headers)


def web_hint(err: MemoError) -> str:
    """The library's specific hint if it set one for this error, else the web wording of
    the class default (same rule as memo.serve.mcp_server.mcp_hint)."""
    if "hint" in vars(err):
        return err.hint
    for cls in type(err).__mro__:
        if "hint" in vars(cls):
            return _WEB_HINTS.get(cls.__name__, err.hint)
    return err.hint


def memo_error_response(err: MemoError) -> JSONResponse:
    return error_response(err.http_status, err.error_name, str(err).replace("\n", " "), web_hint(err))


# Fixed names (HTTPStatus phrases changed between Python versions, e.g. 413).
_STATUS_TYPES = {404: "NotFound", 405: "MethodNotAllowed", 413: "ContentTooLarge", 415: "UnsupportedMediaType"}


def _type_name(status: int) -> str:
    return _STATUS_TYPES.get(status) or HTTPStatus(status).phrase.replace(" ", "").replace("-", "")


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:      # the router's: no such route (a missing record is NotFound from memo)
        return error_response(404, "NotFound", f"no route {request.url.path}", "see docs/web.md for the routes")
    return error_response(exc.status_code, _type_name(exc.status_code), str(exc.detail), headers=exc.headers)


def _short(value: str | None) -> str:
    text = repr(value)
    return text[:80] + ("…" if len(text) > 80 else "")


# --- the guard -----------------------------------------------------------------------------
PUBLIC_PATHS = frozenset({"/", "/healthz", "/favicon.ico"})


def is_public(path: str) -> bool:
    """Paths served without the token: the page itself and health, no memory contents.
    Everything else needs it (deny by default: a future route cannot forget the check)."""
    return path in PUBLIC_PATHS or path.startswith("/static/")


class GuardMiddleware:
    """Pure ASGI middleware: rejects foreign Host/Origin, cross-site writes, missing
    tokens and oversized bodies before routing, and adds the security headers to every
    response (including its own rejections)."""

    def __init__(self, app: ASGIApp, token: str, names: Iterable[str], max_body: int,
                 hints: Mapping[str, str] | None = None) -> None:
        self.app, self.token, self.names, self.max_body = app, token, frozenset(names), max_body
        # The skin's own wording of a refusal's hint (memo-mcp --http names its token's
        # variable, not the URL `memo web` prints); the web UI's by default.
        self.hints = {**_WEB_HINTS, **(hints or {})}

    def refuse(self, status: int, type_name: str, message: str, **kw: Any) -> JSONResponse:
        return error_response(status, type_name, message, self.hints.get(type_name), **kw)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":    # lifespan; websockets have no route here, the router closes them
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith("/api/")

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
                if api or scope["path"] == "/healthz":
                    headers["Cache-Control"] = "no-store"
            await send(message)

        try:
            rejection = self.check(scope)
        except (ValueError, UnicodeError, OverflowError):
            # Header values no predicate foresaw: the client's request is malformed, and
            # the answer still carries the security headers (never starlette's plain 500).
            rejection = self.refuse(400, "BadRequest", "the request's headers are malformed")
        if rejection is not None:
            await rejection(scope, receive, send_secured)
            return
        await self.app(scope, receive, send_secured)

    def check(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        server = scope.get("server") or (None, None)
        port = server[1] if server[1] is not None else 80
        host = headers.get("host")
        if guard.host_malformed(host):
            return self.refuse(400, "BadRequest", f"Host {_short(host)} is not a valid host[:port]")
        if not guard.host_allowed(host, port, self.names):
            return self.refuse(403, "Forbidden", f"Host {_short(host)} is not allowed")
        origin = headers.get("origin")
        if not guard.origin_allowed(origin, port, self.names, host):
            return self.refuse(403, "Forbidden", f"Origin {_short(origin)} is not allowed")
        if guard.cross_site_write(scope["method"], headers.get("sec-fetch-site")):
            return self.refuse(403, "Forbidden", "cross-site requests may not change anything")
        if not is_public(scope["path"]) and not guard.bearer_ok(headers.get("authorization"), self.token):
            return self.refuse(401, "Unauthorized", "missing or wrong token",
                                  headers={"WWW-Authenticate": 'Bearer realm="memo"'})
        length = headers.get("content-length")
        if length is not None and length.strip().isascii() and length.strip().isdigit() and int(length) > self.max_body:
            return self.refuse(413, "ContentTooLarge", f"request body is over {self.max_body} bytes")
        return None


# --- the app -------------------------------------------------------------------------------
Handler = Callable[[Request], Awaitable[Response]]


def api(fn: Handler) -> Handler:
    """Typed errors -> their status; anything else -> a logged, generic 500 (inside the
    guard, so it carries the security headers too)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except MemoError as err:
            return memo_error_response(err)
        except HTTPException:
            raise
        except (OverflowError, UnicodeError, RecursionError) as exc:
            # Input-shaped failures the library did not name (a number or date out of
            # range, text that is not Unicode, nesting): the caller's input, not a crash.
            log.info("%s %s: %s", request.method, request.url.path, type(exc).__name__)
            return memo_error_response(ValidationError(
                f"the request holds a value memo cannot handle ({type(exc).__name__})"))
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return error_response(500, "InternalError", f"{request.url.path} failed unexpectedly")

    return endpoint


def resolve_token(token: str | None, env: str = TOKEN_ENV) -> str:
    """``token``, else ``$env``, else a random one; refused unless URL-safe (16..512)."""
    token = token or os.environ.get(env) or secrets.token_urlsafe(32)
    if not guard.TOKEN_PATTERN.fullmatch(token):
        raise ValidationError(f"the token must be 16 to 512 characters from A-Z a-z 0-9 . _ ~ - ({env})",
                              hint=f"unset {env} to get a random token")
    return token


def create_app(db: str | Path | None = None, profile: str | Path | None = None, token: str | None = None, *,
               allowed_hosts: Iterable[str] = guard.LOOPBACK_NAMES, max_body: int = MAX_BODY_BYTES) -> Starlette:
    """The ASGI app.  ``app.state.token`` is the bearer token (``token``, else
    $MEMO_WEB_TOKEN, else random); ``app.state.tools`` holds the one database connection;
    ``profile`` None = $MEMO_PROFILE, else zscore."""
    token = resolve_token(token)
    tools = MemoTools(db, profile)

    def run_search(p: Any) -> dict[str, Any]:
        # Vectors other processes queued are embedded when an answer shows them: the tools
        # start that catch-up themselves (memo.serve.pending_vectors), for memo-mcp too.
        return tools.search(p.q, mode=p.mode, profile=p.profile, limit=p.limit, max_tokens=p.max_tokens,
                            response_format="explain" if p.explain else "compact", **search_fields(p))

    @api
    async def search(request: Request) -> Response:
        p = parse_search_params(request)
        return JSONResponse(await run_in_threadpool(run_search, p))

    @api
    async def add(request: Request) -> Response:
        body = await parse_add_body(request, max_body)
        doc = await run_in_threadpool(tools.add, body.text, **body.model_dump(exclude={"text"}))
        return JSONResponse(doc, status_code=201 if doc["status"] != "skipped" else 200)

    @api
    async def record(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(tools.get, request.path_params["record_id"]))

    @api
    async def stats(_: Request) -> Response:
        return JSONResponse(await run_in_threadpool(tools.stats))

    @api
    async def profiles(_: Request) -> Response:
        return JSONResponse({"default": tools.default_profile.name, "profiles": profile_names()})

    @api
    async def form(_: Request) -> Response:
        return JSONResponse(await run_in_threadpool(page_form, tools))

    async def index(_: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    async def metrics_route(_: Request) -> Response:
        # Behind the same guard as /api (Host, Origin, bearer token): the counters say how
        # the knowledge base is used; a scraper sends the token (docs/web.md).
        text = await run_in_threadpool(tools.metrics_text)
        return Response(text, media_type=metrics.CONTENT_TYPE, headers={"Cache-Control": "no-store"})

    async def healthz(_: Request) -> Response:
        return JSONResponse({"ok": True, "version": __version__})   # no token, so nothing stored

    async def favicon(_: Request) -> Response:
        return Response(status_code=204)    # keeps the browser's automatic request quiet

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        tools.close()          # the catch-up backfill (tools.pending) first, then the rest

    routes = [
        Route("/", index), Route("/healthz", healthz), Route("/favicon.ico", favicon),
        Route("/api/search", search), Route("/api/memories", add, methods=["POST"]),
        Route("/api/records/{record_id:path}", record), Route("/api/stats", stats),
        Route("/api/profiles", profiles), Route("/api/form", form), Route("/metrics", metrics_route),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_exception})
    app.add_middleware(GuardMiddleware, token=token, names=allowed_hosts, max_body=max_body)
    app.state.token, app.state.tools, app.state.pending = token, tools, tools.pending
    return app


def page_form(tools: MemoTools) -> dict[str, Any]:
    """What the page's search form needs beyond the profile names (``GET /api/form``):
    each profile's limit default and maximum (its ``limit`` keys: the page's limit field
    and "show more" stay within them), the words ``explain`` takes and the web parameter
    of each ``memo search`` flag (``FLAG_PARAMS``: the page words hints with it).  A profile
    that does not load is left out (searching with it gives its error)."""
    limits: dict[str, dict[str, int]] = {}
    for name in profile_names():
        try:
            prof = tools.default_profile if name == tools.default_profile.name else load_profile(name)
        except MemoError:
            continue
        limits[name] = {"default": prof.limit.default, "max": prof.limit.max}
    prof = tools.default_profile          # possibly the operator's .toml path
    limits[prof.name] = {"default": prof.limit.default, "max": prof.limit.max}
    return {"limits": limits, "explain": {"true": list(FLAG_WORDS[True]), "false": list(FLAG_WORDS[False])},
            "flags": FLAG_PARAMS}


# --- serving -------------------------------------------------------------------------------
def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before uvicorn starts so port 0 yields the real port for the printed URL."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        # "localhost" may resolve to ::1 first; prefer IPv4, where the printed URL points.
        family, _, _, _, addr = sorted(infos, key=lambda i: i[0] != socket.AF_INET)[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise ValidationError(f"cannot listen on {where}: {exc.strerror or exc}",
                              hint="pick another --port (--port 0 picks a free one)") from None
    sock.setblocking(False)
    return sock


def page_url(sock: socket.socket, token: str) -> str:
    addr, port = sock.getsockname()[:2]
    if addr in guard.WILDCARD_HOSTS:
        addr = "127.0.0.1"          # a wildcard bind is reachable locally there
    elif ":" in addr:
        addr = f"[{addr}]"
    return f"http://{addr}:{port}/#token={token}"


def serve(host: str = "127.0.0.1", port: int = 8765, db: str | Path | None = None, profile: str | Path | None = None,
          token: str | None = None, open_browser: bool = False, *, allow_remote: bool = False,
          backfill: bool = True, on_listening: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Run the UI until interrupted.  Prints one line on stderr:
    ``memo web: http://127.0.0.1:PORT/#token=TOKEN``; ``on_listening`` gets the same as a
    dict (url, host, port, token, pid) once the socket listens (``memo web --json``)."""
    import uvicorn  # only when serving: keeps `memo --help` fast

    if not guard.is_loopback(host) and not allow_remote:
        raise ValidationError(f"--host {host} is not a loopback address; refusing to expose memo",
                              hint="use 127.0.0.1 (default), or pass --allow-remote if you really mean it")
    app = create_app(db, profile, token, allowed_hosts=guard.allowed_names(host, allow_remote))
    tools: MemoTools = app.state.tools
    try:
        sock = bind_socket(host, port)
        url = page_url(sock, app.state.token)
        sys.stderr.write(f"memo web: {url}\n")
        sys.stderr.flush()
        if on_listening is not None:
            addr, bound = sock.getsockname()[:2]
            on_listening({"url": url, "host": addr, "port": bound, "token": app.state.token, "pid": os.getpid()})
        # The background embedder (memo.embed.background): adds are answered after their
        # commit and embedded by its thread; with ``backfill`` it first embeds the passages
        # queued before this start.  tools.close() (lifespan end) stops it.
        tools.start_embedder(backfill=backfill)
        if open_browser:
            import webbrowser
            webbrowser.open(url)
        config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                                lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        tools.close()
