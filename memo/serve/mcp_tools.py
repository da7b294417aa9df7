"""What each MCP tool does, without any MCP types: parse nothing, decide nothing, call
one memo library function and serialise its frozen report the way ``memo … --json``
prints it (``memo.cli.common.to_jsonable``; schemas in docs/cli-json.md).

Two long-lived connections per server process, each guarded by its own lock: the SDK
(and the web UI) run each synchronous tool on a worker thread, and a sqlite3 connection
must not run two statements (or an explicit transaction) from two threads at once.

* ``conn`` (write) serves ``add``, ``supersede``, ``forget`` and the fact writes under
  ``_lock``, which an add holds only for its validation and commit: the passages' embedding
  goes to the server's background embedder (``start_embedder``; memo.embed.background), so
  the add is acknowledged as soon as it is durable (issue 9.9) and the next write does not
  wait for ONNX.  ``wait=True`` (or no embedder: tests, library use) embeds before
  returning, still holding ``_lock``, as before.  The same for every write that makes
  vectors: ``add``, ``supersede``, ``fact_add`` and ``fact_supersede``.
* ``read_conn`` serves ``search``, ``get``, ``list_records``, ``fact_list`` and ``stats`` under
  ``_read_lock``, so a search never waits for an add (WAL: readers see the last commit);
  searches take milliseconds and run one at a time.  The semantic service (in-memory
  vector index, per-connection scope caches) is bound to it and stays warm across calls.

Rows another process queued while the server runs (``memo import --no-embed``, an add
whose model was missing) are embedded when an answer shows them: ``search`` and ``stats``
hand their document to ``pending`` (memo.serve.pending_vectors), which starts a catch-up
backfill in the background and never makes the answer wait; both servers get it here.

The model and the vector matrices load in the background (``start_warmup``;
memo.embed.warmup): a search that arrives before they are loaded runs without the semantic
arm and says so in ``trace.degraded`` ("model … is loading …"); the ones after are hybrid.

Load-time deferral (issue 31.2): ``memo.ops``, ``memo.retrieve`` and ``memo.metrics`` (the
search pipeline, the write path, prometheus: about 0.4 s of imports on the loaded 2-core VM)
are imported by the methods that use them, not at the top, so memo-mcp answers
``initialize`` without them; the warm-up thread imports them right after the server starts
(``preload``, through memo.deferred: one thread at a time), and a tool call that comes
sooner waits for that import instead of running its own beside it.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo import deferred
from memo.embed.warmup import Warmup, load_semantic, resolve_model
from memo.errors import ConfirmationRequired, ProfileError, ValidationError
from memo.profile import Profile, load_profile, resolve_profile_path, user_profile_dir
from memo.serialize import to_jsonable
from memo.serve.pending_vectors import PendingVectors
from memo.store.connect import release_memory
from memo.store.db import open_db, resolve_db
from memo.stored import FactDraft, RecordDraft
from memo.text.limits import RELEASE_AFTER_CHARS
from memo.types import check_fields, default_profile, scope_from

if TYPE_CHECKING:
    from memo.embed.background import BackgroundEmbedder
    from memo.retrieve.services import ArmServices

# What the methods import when called (module docstring), loaded through memo.deferred
# (one thread at a time: two first imports of memo.retrieve at once break) by ``preload``,
# which every method calls first and the warm-up thread calls right after the start.  A
# search also needs what its arms import as they run (the graph arm: scipy, memo.graph).
DEFERRED = ("memo.metrics", "memo.retrieve", "memo.retrieve.services", "memo.ops", "memo.ops.guard",
            "memo.ops.facts")
SEARCH_DEFERRED = (*DEFERRED, "memo.graph.cache", "memo.graph.ppr", "memo.graph.titles")

# Profiles arrive from the client by name only: a path would let a tool call read any
# TOML file on the machine.  The operator picks a path with `memo-mcp --profile`.
_PROFILE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def preload(names: tuple[str, ...] = DEFERRED) -> None:
    """Import the modules the methods defer (``DEFERRED``; a search: ``SEARCH_DEFERRED``)."""
    deferred.load(*names)


def _warm(warmup: Warmup) -> None:
    """The server's warm-up: the model's id (the degraded searches name it), the tools'
    modules, the graph arm's mention graph, then the model and the matrices."""
    resolve_model(warmup)
    preload(SEARCH_DEFERRED)
    warm_graph(warmup.db_path)
    load_semantic(warmup)


def warm_graph(db_path: str | Path) -> None:
    """The graph arm's mention graph into its process cache (``memo.graph.cache``): scipy
    and the graph, about 0.4 s on the loaded VM that the first routed search paid, model or
    not.  PostgreSQL walks no in-process graph."""
    preload(SEARCH_DEFERRED)
    from memo.graph.cache import mention_graph  # deferred: start-up (module docstring)
    from memo.store.dialect import is_postgres

    conn = open_db(db_path, write=False)
    try:
        if not is_postgres(conn):
            mention_graph(conn)
    finally:
        conn.close()


def page(fetch: Callable[[int], Sequence[Any]], key: str, limit: int, offset: int) -> dict[str, Any]:
    """One page of a list tool: ``{"count", key: rows, "next_offset"}``, as ``memo list --json``
    and ``memo fact list --json`` print it.  ``fetch(n)`` reads at most ``n`` rows from
    ``offset``; it is asked for one row more than ``limit``, and that row, when it comes, says
    another page exists (``next_offset``: the offset of the next page; None on the last one).
    A limit out of range goes to the library as given, which refuses it (``fetch_page``)."""
    from memo.ops.paging import fetch_page  # deferred: start-up (module docstring)
    shown, next_offset = fetch_page(fetch, limit, offset)
    return {"count": len(shown), key: to_jsonable(shown), "next_offset": next_offset}


class MemoTools:
    """The server's state (database connection, default profile) and one method per tool."""

    def __init__(self, db: str | Path | None = None, profile: str | Path | None = None) -> None:
        self.db_path = resolve_db(db)     # a SQLite file, or a PostgreSQL URL
        # write=True: creates the file and applies migrations, so a fresh server can add
        # the first memory; a database from a newer memo fails here (SchemaTooNew).
        self.conn: sqlite3.Connection = open_db(self.db_path, write=True)
        try:
            self.read_conn: sqlite3.Connection = open_db(self.db_path, write=False)
            self.default_profile: Profile = load_profile(default_profile() if profile is None else profile)
        except BaseException:
            self.conn.close()
            raise
        self._lock = threading.Lock()          # the write connection
        self._read_lock = threading.Lock()     # the read connection
        self._services: ArmServices | None = None
        self.embedder: BackgroundEmbedder | None = None
        self.warmup: Warmup | None = None
        # Vectors queued by other processes: embedded when an answer shows them (module
        # docstring); starts nothing until start_embedder has run.
        self.pending = PendingVectors(self.db_path, lambda: self.embedder)

    def start_warmup(self) -> Warmup:
        """Load the model and the vector matrices on a background thread (once); until
        it is done, searches run without the semantic arm, degraded with the reason."""
        if self.warmup is None:
            self.warmup = Warmup(self.db_path, index_cfg=self.default_profile.index, load=_warm).start()
        return self.warmup

    def start_embedder(self, *, backfill: bool = True) -> BackgroundEmbedder:
        """Start the server's background embedder (one thread, its own connection); with
        ``backfill`` it first embeds what was queued before."""
        from memo.embed.background import BackgroundEmbedder  # numpy/onnx only when serving
        if self.embedder is None:
            self.embedder = BackgroundEmbedder(self.db_path, backfill_at_start=backfill).start()
        return self.embedder

    def _background(self, wait: bool) -> BackgroundEmbedder | None:
        return None if wait else self.embedder

    def close(self) -> None:
        self.pending.close()                 # no catch-up backfill outlives the server
        if self.warmup is not None:
            self.warmup.stop()               # never exit while the model is half loaded
        if self.embedder is not None:
            # Embed what was acknowledged but not embedded yet (bounded); the rest stays
            # queued in the database for `memo backfill` / the next start.
            self.embedder.stop(drain=True, timeout=10.0)
        with self._lock:
            self.conn.close()
        with self._read_lock:
            self.read_conn.close()

    # --- helpers -----------------------------------------------------------------------
    def _after_write(self, text: object) -> None:
        """After a text over RELEASE_AFTER_CHARS (stored or refused: the refused one was
        parsed and split too), give the memory back: a server lives on, and one 4.5 MB add
        otherwise left it about 160 MB larger for good (issue 33.3).  Called holding
        ``_lock`` (the write connection is not shared while it shrinks)."""
        if isinstance(text, str) and len(text) > RELEASE_AFTER_CHARS:
            # The splitter's word-count cache first (issue 31.3): its entries would pin the
            # freed heap.  Only if loaded: this module must not import the ingest modules.
            budget = sys.modules.get("memo.ingest.budget")
            if budget is not None:
                budget.clear_caches()
            release_memory(self.conn)

    def _profile(self, name: str | None) -> Profile:
        if name is None or name == self.default_profile.name:
            return self.default_profile
        if not _PROFILE_NAME.fullmatch(name) or name.endswith(".toml"):
            raise ProfileError(f"profile {name!r} is not a profile name",
                               hint="pass a name such as 'rrf' or 'minmax'; paths are set with memo-mcp --profile")
        try:
            path = resolve_profile_path(name)
        except ProfileError as err:
            # The library's hint offers "or pass a path", which a caller here may not do (the
            # web API shares this method: the advice names the server's option, not memo-mcp's).
            raise ProfileError(str(err), hint=f"use a known name, or put NAME.toml in {user_profile_dir()} "
                                              "(docs/profiles.md); a path is the server's --profile option") from None
        return load_profile(path)

    def _semantic(self) -> ArmServices:
        # Built once: the service is lazy (the model loads on the first semantic query,
        # unless the warm-up thread loaded it) and keeps the vector matrix resident between
        # calls.  While the warm-up is loading, a stand-in that reports it (not cached).
        preload()
        from memo.retrieve.services import ArmServices  # deferred: start-up (module docstring)
        if self._services is None:
            if self.warmup is not None and self.warmup.loading:
                return ArmServices(semantic=self.warmup.stand_in())
            deferred.load("memo.embed.service")           # numpy/onnx only when searching
            from memo.embed.service import semantic_services
            self._services = ArmServices.of(semantic_services(self.read_conn))
        return self._services

    # --- tools -------------------------------------------------------------------------
    def search(self, query: str, *, mode: str = "auto", profile: str | None = None, limit: int | None = None,
               max_tokens: int | None = None, response_format: str = "compact", **fields: Any) -> dict[str, Any]:
        """``fields``: the search fields of ``memo.types.SEARCH_FIELDS`` (scope fields and ``now``)."""
        preload(SEARCH_DEFERRED)
        from memo.ops.guard import store_errors  # deferred: start-up (module docstring)
        from memo.retrieve import SearchRequest
        from memo.retrieve import search as run_search
        check_fields(fields, "MemoTools.search()")
        prof = self._profile(profile)
        request = SearchRequest(query=query, scope=scope_from(fields), mode=mode, limit=limit,
                                max_tokens=max_tokens, response_format=response_format, now=fields.get("now"))
        with self._read_lock, store_errors("search"):
            resp = run_search(self.read_conn, request, prof, self._semantic())
        doc = to_jsonable(resp)
        self.pending.after_search(doc)       # never waits: a background catch-up, if any
        return doc

    def add(self, text: str, *, wait: bool = False, **fields: Any) -> dict[str, Any]:
        """``wait``: embed before returning (a semantic search finds the memory at once);
        else the background embedder does it right after (keyword search finds it at once)."""
        preload()
        from memo import ops  # deferred: start-up (module docstring)
        tags = fields.pop("tags", None)
        trust = fields.pop("trust", None)
        meta = dict(fields.pop("meta", None) or {})
        entities = [e for e in (fields.pop("entities", None) or ()) if isinstance(e, str) and e.strip()]
        if entities:
            # memo add --entity's field (memo.store.mentions.explicit_entities), merged with
            # any meta.entities the caller sent too.
            given = meta.get("entities")
            given = [given] if isinstance(given, str) else list(given) if isinstance(given, list | tuple) else []
            meta["entities"] = list(dict.fromkeys([*given, *entities]))
        draft = RecordDraft(body=text, tags=tuple(tags or ()), trust=1.0 if trust is None else trust,
                            meta=meta, **{k: v for k, v in fields.items() if v is not None})
        with self._lock:
            try:
                return to_jsonable(ops.add_record(self.conn, draft, background=self._background(wait),
                                                  profile=self.default_profile))
            finally:
                self._after_write(text)

    def get(self, record_id: str) -> dict[str, Any]:
        preload()
        from memo import ops  # deferred: start-up (module docstring)
        with self._read_lock:
            return to_jsonable(ops.get(self.read_conn, record_id))

    def list_records(self, *, namespaces: Sequence[str] = (), kinds: Sequence[str] = (), sources: Sequence[str] = (),
             library: str | None = None, version: str | None = None, tags: Sequence[str] = (),
             date_from: str | None = None, date_to: str | None = None,
             include_forgotten: bool = False, include_superseded: bool = False,
             limit: int = 50, offset: int = 0) -> dict[str, Any]:
        preload()
        from memo import ops  # deferred: start-up (module docstring)
        flt = ops.ListFilter(namespaces=tuple(namespaces), kinds=tuple(kinds), sources=tuple(sources),
                             library=library, version=version, tags=tuple(tags),
                             date_from=date_from, date_to=date_to,
                             include_forgotten=include_forgotten, include_superseded=include_superseded,
                             limit=limit, offset=offset)

        def fetch(n: int) -> Sequence[Any]:
            with self._read_lock:
                return ops.list_records(self.read_conn, replace(flt, limit=n))
        return page(fetch, "records", limit, offset)

    def supersede(self, record_id: str, text: str, *, wait: bool = False, **changes: Any) -> dict[str, Any]:
        preload()
        from memo import ops  # deferred: start-up (module docstring)
        if changes.get("tags") is not None:
            changes["tags"] = tuple(changes["tags"])
        with self._lock:
            try:
                return to_jsonable(ops.supersede(self.conn, record_id, text, background=self._background(wait),
                                                 **changes))
            finally:
                self._after_write(text)

    def forget(self, ids: Sequence[str], confirm: int | None = None) -> dict[str, Any]:
        preload()
        from memo import ops  # deferred: start-up (module docstring)
        distinct = tuple(dict.fromkeys(ids))
        if not distinct:
            raise ValidationError("no record ids given", hint="pass ids: a list of record ids")
        # The library's rule (more than one record needs confirmation), stated over MCP as
        # a count: a model that means to forget 2 records must say confirm=2, so a list
        # grown by mistake (mcp-memory-service #353) is refused instead of erased.
        if confirm is not None and confirm != len(distinct):
            raise ConfirmationRequired(
                f"confirm={confirm} does not match the {len(distinct)} distinct record id(s) given; "
                "nothing was forgotten", hint=f"repeat with confirm={len(distinct)} if you mean all of them")
        if len(distinct) > 1 and confirm is None:
            raise ConfirmationRequired(
                f"forgetting {len(distinct)} records needs confirmation; nothing was forgotten",
                hint=f"repeat with confirm={len(distinct)} (the number of ids) to forget all of them")
        with self._lock:
            return to_jsonable(ops.forget(self.conn, distinct, confirm=confirm == len(distinct)))

    # --- facts (memo.ops.facts) -----------------------------------------------------------
    def fact_add(self, text: str, evidence: Sequence[str], *, wait: bool = False, **fields: Any) -> dict[str, Any]:
        preload()
        from memo.ops.facts import add_fact  # deferred: start-up (module docstring)
        draft = FactDraft(text=text, evidence=tuple(evidence),
                          **{k: v for k, v in fields.items() if v is not None})
        with self._lock:
            return to_jsonable(add_fact(self.conn, draft, background=self._background(wait),
                                        profile=self.default_profile))

    def fact_list(self, *, namespaces: Sequence[str] = (), evidence: str | None = None,
                  include_forgotten: bool = False, include_superseded: bool = False,
                  limit: int = 50, offset: int = 0) -> dict[str, Any]:
        preload()
        from memo.ops.facts import list_facts  # deferred: start-up (module docstring)

        def fetch(n: int) -> Sequence[Any]:
            with self._read_lock:      # a read: never waits behind a long add
                return list_facts(self.read_conn, namespaces=tuple(namespaces), evidence=evidence,
                                  include_forgotten=include_forgotten, include_superseded=include_superseded,
                                  limit=n, offset=offset)
        return page(fetch, "facts", limit, offset)

    def fact_supersede(self, fact_id: str, text: str, *, evidence: Sequence[str] = (),
                       wait: bool = False, **fields: Any) -> dict[str, Any]:
        """``memo fact supersede``: the evidence is copied from the old version unless given.
        ``wait`` as for ``fact_add``: the new version's vector is embedded before returning,
        else by the background embedder right after (``embedded`` false)."""
        preload()
        from memo.ops.facts import supersede_fact  # deferred: start-up (module docstring)
        with self._lock:
            return to_jsonable(supersede_fact(self.conn, fact_id, text, evidence=tuple(evidence),
                                              background=self._background(wait), **fields))

    def fact_forget(self, ids: Sequence[str], confirm: int | None = None) -> dict[str, Any]:
        preload()
        from memo.ops.facts import forget_facts  # deferred: start-up (module docstring)
        distinct = tuple(dict.fromkeys(ids))
        if not distinct:
            raise ValidationError("no fact ids given", hint="pass ids: a list of fact ids")
        # Same rule as memory_forget: more than one id needs confirm = the number of ids.
        if (confirm is not None and confirm != len(distinct)) or (len(distinct) > 1 and confirm is None):
            raise ConfirmationRequired(
                f"forgetting {len(distinct)} facts needs confirm={len(distinct)}; nothing was forgotten",
                hint=f"repeat with confirm={len(distinct)} (the number of ids) to forget all of them")
        with self._lock:
            return to_jsonable(forget_facts(self.conn, distinct, confirm=True))

    def stats(self) -> dict[str, Any]:
        """``memo stats --json``'s document plus ``metrics``: this server's search metrics
        (memo.metrics.snapshot; the pending-vector gauge refreshed from the database)."""
        preload()
        from memo import metrics, ops  # deferred: start-up (module docstring)
        with self._read_lock:
            report = ops.stats(self.read_conn)
        doc = {**to_jsonable(report), "metrics": metrics.stats_metrics(report.pending_vectors)}
        self.pending.after_stats(doc)        # never waits: a background catch-up, if any
        return doc

    def metrics_text(self) -> str:
        """The Prometheus text exposition (``/metrics``, the MCP resource ``memo://metrics``),
        the pending-vector gauge refreshed from the database first."""
        preload()
        from memo import metrics, ops  # deferred: start-up (module docstring)
        with self._read_lock:
            report = ops.stats(self.read_conn)
        metrics.set_pending(report.pending_vectors)
        return metrics.exposition().decode("utf-8")

