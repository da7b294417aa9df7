"""memo-mcp answers ``initialize`` before the MCP SDK is imported (issue 31.2: within 300 ms
of its start; importing the SDK alone takes 500-650 ms on the 2-core target, most of it
its protocol models).

The answer is the SDK's own: each time the SDK answers an ``initialize`` the transport
(``memo.serve.mcp_server.stdio_transport``) records its result in the user's cache folder
(``mcp-initialize.json``), per protocol version the client asked for, under a key made of
memo's version and the files that decide it (memo's server module, the SDK's and its
types' packages: an upgrade or an edit changes their size or mtime).  At the next start
``memo.serve.mcp.main`` reads the first line from stdin while a thread imports the SDK;
when it is an ``initialize`` whose version has a recorded result under the current key, it
writes that result at once.  The SDK then gets the same line as always (its session must
see the handshake) and its reply to that id is not written again: the transport compares
it with what went out and, if they differ (a change the key missed), logs a warning and
records the SDK's.

Anything else goes the ordinary way, byte for byte: a first start (nothing recorded), a
first line that is not a plain ``initialize`` (a ``_meta`` envelope, another method,
malformed or oversized: ``EARLY_MAX``), ``--http`` and ``memo-mcp backfill``.  Nothing here
imports the SDK, pydantic or anyio.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo import __version__

EARLY_MAX = 1 << 20          # a first line longer than this goes to the transport unread
CACHE_FILE = "mcp-initialize.json"
_VERSIONS_KEPT = 8


def _stat_of(path: str | None) -> list[Any]:
    if not path:
        return [None]
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns]


def code_key() -> str:
    """What the SDK's answer to ``initialize`` depends on: memo's version, its server module
    and the SDK's packages (located without importing them)."""
    parts: list[Any] = [__version__, _stat_of(str(Path(__file__).with_name("mcp_server.py")))]
    for pkg in ("mcp", "mcp_types"):
        spec = importlib.util.find_spec(pkg)
        parts.append(_stat_of(spec.origin if spec is not None else None))
    return json.dumps(parts)


def cache_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("memo")) / CACHE_FILE


@dataclass
class EarlyStart:
    """What ``main`` did before the SDK was loaded, handed to the transport."""

    prefix: bytes = b""                  # bytes read from stdin: the first line and any that followed
    request_id: Any = None               # the first line's initialize id (None: not one we record)
    requested: str | None = None         # its protocolVersion
    answered: dict[str, Any] | None = None   # the result already written (None: the SDK answers)
    key: str = ""
    path: Path | None = None
    settled: bool = field(default=False)     # the SDK's reply to request_id was seen

    def record(self, result: dict[str, Any]) -> None:
        """Keep the SDK's ``result`` for this protocol version (best effort: a cache folder
        that cannot be written costs the next start its head start, nothing else)."""
        if self.path is None or self.requested is None:
            return
        doc = _read(self.path)
        results = doc.get("results", {}) if doc.get("key") == self.key else {}
        results.pop(self.requested, None)
        results[self.requested] = result
        while len(results) > _VERSIONS_KEPT:
            results.pop(next(iter(results)))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"key": self.key, "results": results}), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def read_first_line(fd: int) -> bytes:
    """Bytes from ``fd`` up to and including the first newline (or EOF, or more than
    ``EARLY_MAX`` bytes without one): whatever came, for the transport to read first."""
    buf = bytearray()
    while b"\n" not in buf and len(buf) <= EARLY_MAX:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def _plain_initialize(line: bytes) -> tuple[Any, str] | None:
    """(id, protocolVersion) of a JSON-RPC ``initialize`` request whose answer depends on
    nothing but that version; None for anything else."""
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != "initialize":
        return None
    rid, params = msg.get("id"), msg.get("params")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)) or not isinstance(params, dict):
        return None
    version = params.get("protocolVersion")
    if not isinstance(version, str) or "_meta" in params:
        return None
    return rid, version


def start(in_fd: int, out_fd: int) -> EarlyStart:
    """Read the first line; answer it at once when it is an ``initialize`` whose result
    is recorded for the current code (module docstring)."""
    prefix = read_first_line(in_fd)
    early = EarlyStart(prefix=prefix)
    nl = prefix.find(b"\n")
    first = _plain_initialize(prefix[:nl]) if nl >= 0 else None     # a whole first line only
    if first is None:
        return early
    early.request_id, early.requested = first
    early.key, early.path = code_key(), cache_path()
    doc = _read(early.path)
    result = doc.get("results", {}).get(early.requested) if doc.get("key") == early.key else None
    if isinstance(result, dict):
        reply = json.dumps({"jsonrpc": "2.0", "id": early.request_id, "result": result},
                           ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(reply)
        try:
            while view:
                view = view[os.write(out_fd, view):]
        except OSError:     # the client is gone: the transport finds out and stops
            return early
        early.answered = result
    return early
