"""Who may talk to memo's local HTTP server: pure predicates over request headers.

A server on 127.0.0.1 is still reachable from any web page the user opens: the page can
send requests to it (CSRF), and a DNS-rebinding attacker can point its own host name at
127.0.0.1 and then read the answers as same-origin (MCP transport spec: servers MUST check
``Origin`` and answer 403; CVE-2025-66416 in the Python SDK).  These predicates decide
that from the headers alone, socket-free, so they are tested on their own
(tests/unit/serve/test_serve_guard.py; shape of tobi/qmd ``src/mcp/origin-guard.ts``).

* ``Host`` must name a loopback authority with the server's own port: a rebinding page
  sends its attacker host name there, so it never matches.  A missing or malformed
  ``Host`` (not ``name[:port]`` with an ASCII port) is a bad request (400), a well-formed
  foreign one is forbidden (403).
* ``Origin``, when present, must be one of the same loopback origins.  ``null`` (sandboxed
  frames, file: pages) and ``http://0.0.0.0:PORT`` (reaches the server on Linux, but is
  nobody's legitimate origin) are refused like any foreign origin.  A missing ``Origin`` is
  allowed: non-browser clients do not send one, and they still need the token.
* A state-changing request marked ``Sec-Fetch-Site: cross-site`` by the browser is refused
  even before the token is looked at (datasette's header-based CSRF check).
* The bearer token is compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS: frozenset[str] = frozenset({"0.0.0.0", "::", ""})
SAFE_METHODS: frozenset[str] = frozenset({"GET", "HEAD", "OPTIONS"})
# A token goes into a URL fragment and an HTTP header: keep it to URL-safe characters.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,512}")
_BEARER = re.compile(r"Bearer[ ]+(\S+)[ ]*", re.IGNORECASE)
# ASCII digits only: str.isdigit() and int() also take '²' or '８' (issue 33.5: a Host
# port of '²' passed isdigit() and int() then raised, a plain-text 500).
_PORT = re.compile(r"[0-9]{1,5}")
# RFC 3986 host: a reg-name or IPv4 address (unreserved, sub-delims, pct-encoded), or a
# bracketed IPv6 literal; anything else (non-ASCII, controls) is malformed.
_REG_NAME = re.compile(r"[a-z0-9._~!$&'()*+,;=%-]+")
_IPV6 = re.compile(r"[0-9a-f:.]+")


def is_loopback(host: str) -> bool:
    """True for a name or address that only this machine can reach."""
    name = host.strip().lower().strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_authority(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` -> (lower-case name without brackets, port or None); None if malformed."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/@?#\\ \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1:]
    else:
        name, sep, port_text = value.rpartition(":")
        if not sep:
            name, rest = value, ""
        else:
            rest = ":" + port_text
        if ":" in name:          # an IPv6 literal must be bracketed in a Host header
            return None
    if not (_IPV6 if value.startswith("[") else _REG_NAME).fullmatch(name):
        return None
    if not rest:
        return name, None
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
        return None
    return name, int(rest[1:])


def host_malformed(host_header: str | None) -> bool:
    """No ``Host``, or one that is not ``host[:port]`` (RFC 9112 3.2: answer 400)."""
    return host_header is None or split_authority(host_header) is None


def host_allowed(host_header: str | None, port: int, names: Iterable[str] = LOOPBACK_NAMES) -> bool:
    """``Host`` names one of ``names`` (``*`` = any name) with the server's port."""
    if host_header is None:
        return False
    parsed = split_authority(host_header)
    if parsed is None:
        return False
    name, given_port = parsed
    allowed = {n.lower() for n in names}
    if given_port is None:
        given_port = 80      # an http Host without a port means port 80
    return given_port == port and ("*" in allowed or name in allowed)


def origin_allowed(origin: str | None, port: int, names: Iterable[str] = LOOPBACK_NAMES,
                   host_header: str | None = None) -> bool:
    """No ``Origin`` is fine (not a browser); otherwise it must be ``http://NAME:PORT`` for
    an allowed name.  With the wildcard name ``*`` (``--allow-remote`` on 0.0.0.0) the
    origin must equal the request's own ``Host``: same-origin only."""
    if origin is None:
        return True
    if origin.strip().lower() == "null":
        return False
    try:
        parts = urlsplit(origin.strip())
        explicit_port = parts.port
    except ValueError:
        return False
    if parts.scheme != "http" or parts.path not in ("", "/") or parts.query or parts.username:
        return False
    name = (parts.hostname or "").lower()
    origin_port = 80 if explicit_port is None else explicit_port
    if origin_port != port or name in WILDCARD_HOSTS:
        return False
    allowed = {n.lower() for n in names}
    if name in allowed:
        return True
    if "*" in allowed and host_header is not None:
        host = split_authority(host_header)
        return host is not None and host[0] == name and (host[1] or 80) == origin_port
    return False


def cross_site_write(method: str, sec_fetch_site: str | None) -> bool:
    """A browser says this state-changing request comes from another site."""
    return method.upper() not in SAFE_METHODS and (sec_fetch_site or "").strip().lower() == "cross-site"


def bearer_ok(authorization: str | None, token: str) -> bool:
    """``Authorization: Bearer <token>``, compared in constant time."""
    if not authorization:
        return False
    m = _BEARER.fullmatch(authorization.strip())
    if m is None:
        return False
    return hmac.compare_digest(m.group(1).encode("utf-8"), token.encode("utf-8"))


def allowed_names(bind_host: str, allow_remote: bool) -> frozenset[str]:
    """Host names the server answers to: the loopback names, plus (only with
    ``allow_remote``) the address it was bound to, or any name for a wildcard bind."""
    if not allow_remote or is_loopback(bind_host):
        return LOOPBACK_NAMES
    name = bind_host.strip().lower().strip("[]")
    return LOOPBACK_NAMES | {"*" if name in WILDCARD_HOSTS else name}
