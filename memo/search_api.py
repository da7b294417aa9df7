"""``memo.search``: one call from a query string to a ``SearchResponse``.

Opens the database read-only, builds the semantic service (a missing model degrades the
search instead of failing it), runs ``memo.retrieve.search`` and closes the connection.
Long-running callers (MCP server, eval harness) hold their own connection and call
``memo.retrieve.search`` directly.

A search that uses meaning (mode auto or semantic, default services) starts building the
model's session first (``memo.embed.model.start_loading``: onnxruntime builds it without
holding the GIL) and only then imports the pipeline, opens the database and runs the other
stages, so a one-shot process (``memo search``) waits for the longer of the two, not their
sum (issue 31.2).  That is why this module imports the pipeline inside ``search`` and not
at its top: ``memo search`` imports this module before it knows the mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo.embed.registry import load_registry
from memo.errors import MemoError
from memo.types import check_fields, default_profile, scope_from

if TYPE_CHECKING:
    from memo.profile import Profile
    from memo.retrieve import SearchResponse
    from memo.retrieve.services import ArmServices

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


def search(query: str, *, db: str | Path | None = None, mode: str = "auto",
           profile: str | Path | Profile | None = None, limit: int | None = None,
           max_tokens: int | None = None, explain: bool = False,
           services: ArmServices | dict[str, Any] | None = None, **fields: Any) -> SearchResponse:
    """Search the knowledge base (``db`` default: $MEMO_DB, else the user data dir;
    ``profile`` default: $MEMO_PROFILE, else zscore).

    ``fields``: the search fields of ``memo.types.SEARCH_FIELDS`` (``namespaces``, ``kinds``,
    ``sources``, ``library``, ``version``, ``tags``, ``date_from``, ``date_to``,
    ``min_trust``, ``as_of``, ``now``); left out = no constraint; ``tags`` must all be
    present on a record; ``now`` pins the time recency is computed at.
    ``services=None`` builds the default semantic service; pass ``ArmServices()`` (or ``{}``)
    for keyword/exact only.
    """
    check_fields(fields, "memo.search()")
    if services is None and mode not in _NO_MEANING_MODES:     # the default semantic service, below
        _start_model_load()
    from memo.profile import load_profile
    from memo.retrieve import SearchRequest
    from memo.retrieve import search as run_search
    from memo.retrieve.conn_cache import forget
    from memo.retrieve.services import ArmServices
    from memo.store.db import open_db

    prof = load_profile(default_profile() if profile is None else profile)
    request = SearchRequest(
        query=query, scope=scope_from(fields), mode=mode, limit=limit, max_tokens=max_tokens,
        response_format="explain" if explain else "compact", now=fields.get("now"))
    conn = open_db(db, write=False)
    try:
        if services is None and mode in _NO_MEANING_MODES:
            services = ArmServices(semantic=_NotLoaded(default_model_id()))
        elif services is None:
            # numpy, onnxruntime and the vector matrix load only for a search that uses meaning
            from memo.embed.service import semantic_services
            services = ArmServices.of(semantic_services(conn))
        return run_search(conn, request, prof, services)
    finally:
        forget(conn)
        conn.close()


def _start_model_load() -> None:
    """Start the default model's session (the one ``semantic_services`` will ask for) on a
    helper thread.  Anything that stops it (no registry, no onnxruntime, a bad file) is
    left for the search itself to meet and report as it always does (degraded, with the
    reason)."""
    try:
        spec = load_registry().get(None)
        from memo.embed.model import start_loading

        start_loading(spec)
    except Exception:  # noqa: BLE001 - only a head start: the search meets and reports the fault itself
        pass
