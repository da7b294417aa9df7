"""Loading the semantic service in the background of a server (``memo-mcp``, issue 31.2).

The model (tokenizer, ONNX session, its first run) and the vector matrices take a second
or more on a loaded 2-core machine.  A server that loaded them before answering, or on
its first search, made the client wait that long.  ``Warmup`` loads them on a daemon
thread started when the server starts serving; until it has finished, ``stand_in()`` is
what the search pipeline gets as ``ArmServices.semantic``: a service whose ``status()`` is
``(False, "model M is loading in the background (server start-up)…")``.  The semantic arm
then plans itself out with ``degraded=True`` and that reason, the other arms (keyword,
exact, fact by keyword, entity, graph) answer, and the response says so in
``trace.degraded`` (the seed's "Degraded mode": a model that is not available yet), counted
as ``memo_search_degraded_total{reason="arm_unavailable"}`` like any unavailable model.

Once the thread has finished the caller builds the real service
(``memo.embed.service.semantic_services``): the model and matrices are in the process
caches by then, so the next search is a full hybrid one without loading anything.  If the
model failed to load, that service's ``status()`` gives the failure (``load_model``
remembers it per file state and does not retry it on every search), so searches stay
degraded with that reason; nothing reaches the client as a traceback.

``MEMO_WARMUP_GATE`` (tests only): a file path; the thread waits until that file exists
before it loads anything, so a test can search while the model is certainly loading, then
create the file and watch the searches become hybrid (tests/integration/test_mcp_stdio.py).

This module imports nothing heavy at load time: the search that runs while the model loads
must not wait for numpy or onnxruntime to be imported.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memo import deferred
from memo.errors import MemoError, ModelUnavailable

log = logging.getLogger(__name__)

GATE_ENV = "MEMO_WARMUP_GATE"
# The degraded reason's wording, defined once (the pipeline prefixes "semantic: ").
LOADING = "is loading in the background (server start-up)"


def loading_reason(model_id: str | None) -> str:
    name = f"model {model_id}" if model_id else "the embedding model"
    return f"{name} {LOADING}; keyword and the other arms answered, semantic search joins once it is loaded"


class LoadingService:
    """``ArmServices.semantic`` while the model loads: unavailable, saying why."""

    index = None
    fact_index = None

    def __init__(self, model_id: str | None) -> None:
        self.model_id = model_id

    def status(self) -> tuple[bool, str]:
        return False, loading_reason(self.model_id)

    def embed_query(self, text: str) -> Any:
        raise ModelUnavailable(loading_reason(self.model_id))


class Warmup:
    """One thread that loads the model and the database's vector matrices once.

    ``load``: what the thread runs (default ``load_semantic``); tests pass their own."""

    def __init__(self, db_path: str | Path, *, index_cfg: Any = None, model_id: str | None = None,
                 load: Callable[[Warmup], None] | None = None) -> None:
        self.db_path = db_path
        self.index_cfg = index_cfg
        self.model_id = model_id          # the registry's default until the thread resolves it
        self.error: str | None = None     # why loading failed (searches then report it via the service)
        self.seconds: float | None = None
        self._load = load or load_semantic
        self._done = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def loading(self) -> bool:
        """Started and not finished.  Never started counts as not loading: the caller
        then loads on the first search, as the CLI does."""
        return self._thread is not None and not self._done.is_set()

    def start(self) -> Warmup:
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name="memo-warmup", daemon=True)
            self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread has finished (loaded or failed); False on timeout."""
        return self._done.wait(timeout)

    def stop(self, timeout: float = 30.0) -> bool:
        """Before the process exits: a load not begun is skipped, one under way is waited
        for (bounded).  An interpreter that finalises while onnxruntime builds a session on
        this daemon thread aborts ("terminate called without an active exception", exit
        -6): a client that connects and leaves at once must not crash the server."""
        self._stopping.set()
        return self._thread is None or self._done.wait(timeout)

    def stand_in(self) -> LoadingService:
        return LoadingService(self.model_id)

    def _main(self) -> None:
        t0 = time.perf_counter()
        try:
            _wait_for_gate(self._stopping)
            if not self._stopping.is_set():
                self._load(self)
        except Exception as exc:  # noqa: BLE001 - a model that cannot load must not stop the server
            self.error = exc.one_line() if isinstance(exc, MemoError) else f"{type(exc).__name__}: {exc}"
            log.warning("the embedding model did not load; searches run without the semantic arm: %s",
                        self.error, exc_info=not isinstance(exc, MemoError))
        finally:
            self.seconds = time.perf_counter() - t0
            log.info("semantic warm-up finished in %.2f s", self.seconds)
            self._done.set()


def _wait_for_gate(stopping: threading.Event) -> None:
    gate = os.environ.get(GATE_ENV)
    if gate:
        while not os.path.exists(gate) and not stopping.is_set():
            time.sleep(0.02)


def resolve_model(warmup: Warmup) -> None:
    """The model id from the registry ($MEMO_MODEL, else its default), so the searches that
    run while the rest loads name it (an unknown id raises: the warm-up ends with that error)."""
    deferred.load("memo.embed.registry")           # deferred with the rest (module docstring)
    from memo.embed.registry import load_registry

    warmup.model_id = load_registry().get(warmup.model_id).id


def load_semantic(warmup: Warmup) -> None:
    """The model into the process's cache (hash-checked, its first run done) and the
    database's passage and fact matrices into theirs (``memo.embed.service``) with the
    server's default profile's ``[index]`` settings."""
    # Deferred to this thread (load-time deferral, not a cycle): numpy, onnxruntime and the
    # model's modules are what the server must not import before it answers.
    deferred.load("memo.embed.registry", "memo.embed.service", "memo.store.db", "memo.store.dialect")
    from memo.embed.registry import load_registry
    from memo.embed.service import SemanticService, load_model
    from memo.store.db import open_db
    from memo.store.dialect import is_postgres

    spec = load_registry().get(warmup.model_id)
    warmup.model_id = spec.id
    model = load_model(spec)
    model.embed_query("warm-up")          # the first ONNX run sizes its arena: not the first search's cost
    conn = open_db(warmup.db_path, write=False)
    try:
        if not is_postgres(conn):         # PostgreSQL searches its vectors in the server (pgvector)
            svc = SemanticService(conn, spec, embedder=model)
            svc.index.refresh(conn, warmup.index_cfg)
            svc.fact_index.refresh(conn)
    finally:
        conn.close()
