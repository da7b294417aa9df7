"""``memo.search``: one call from a query string to a ``SearchResponse``.

Opens the database read-only, builds the semantic service (lazy: the model loads on the
first semantic query; a missing model degrades the search instead of failing it), runs
``memo.retrieve.search`` and closes the connection.  Long-running callers (MCP server,
eval harness) hold their own connection and call ``memo.retrieve.search`` directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memo.embed.registry import load_registry
from memo.errors import MemoError
from memo.profile import Profile, load_profile
from memo.retrieve import SearchRequest, SearchResponse
from memo.retrieve import search as run_search
from memo.retrieve.conn_cache import forget
from memo.store.db import open_db
from memo.types import Scope

_NO_MEANING_MODES = ("keyword", "exact")   # the semantic arm is off: nothing of memo.embed is loaded


class _NotLoaded:
    """The semantic service of a keyword or exact search: names the default model (the
    trace's ``model_id``, as the servers' loaded service does) and loads nothing."""

    index = None
    fact_index = None

    def __init__(self, model_id: str | None) -> None:
        self.model_id = model_id

    def status(self) -> tuple[bool, str]:
        return False, "not loaded: keyword or exact mode"


def default_model_id() -> str | None:
    """The default model's id from the registry (no numpy, no onnxruntime); None if the
    registry cannot be read."""
    try:
        return load_registry().get(None).id
    except MemoError:
        return None


def search(query: str, *, db: str | Path | None = None,
           namespaces: Iterable[str] = (), kinds: Iterable[str] = (), sources: Iterable[str] = (),
           library: str | None = None, version: str | None = None, tags: Iterable[str] = (),
           date_from: str | None = None, date_to: str | None = None, min_trust: float | None = None,
           as_of: str | None = None, mode: str = "auto", profile: str | Path | Profile = "rrf",
           limit: int | None = None, max_tokens: int | None = None, explain: bool = False,
           now: str | None = None, services: dict[str, Any] | None = None) -> SearchResponse:
    """Search the knowledge base (``db`` default: $MEMO_DB, else the user data dir).

    Scope fields left empty do not constrain; ``tags`` must all be present on a record.
    ``services=None`` builds the default semantic service; pass ``{}`` for keyword/exact only.
    """
    prof = load_profile(profile)
    request = SearchRequest(
        query=query,
        scope=Scope(namespaces=_strs(namespaces), kinds=_strs(kinds), sources=_strs(sources),
                    library=library, version=version, tags=_strs(tags), date_from=date_from,
                    date_to=date_to, min_trust=min_trust, as_of=as_of),
        mode=mode, limit=limit, max_tokens=max_tokens,
        response_format="explain" if explain else "compact", now=now)
    conn = open_db(db, write=False)
    try:
        if services is None and mode in _NO_MEANING_MODES:
            services = {"semantic": _NotLoaded(default_model_id())}
        elif services is None:
            # numpy, onnxruntime and the vector matrix load only for a search that uses meaning
            from memo.embed.service import semantic_services
            services = semantic_services(conn)
        return run_search(conn, request, prof, services)
    finally:
        forget(conn)
        conn.close()


def _strs(values: Iterable[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        return (values,)
    return tuple(values)
