"""A running server (``memo web``, ``memo-mcp``) embeds the passages other processes queued
while it runs.

The server's background embedder (memo.embed.background) embeds what was queued before it
started, then only what this server adds.  A ``memo import --no-embed`` or an add whose
model was missing, made by another process later, stayed without vectors until a restart
or a manual ``memo backfill``, while the empty-answer hint says a server embeds them
within moments (memo.retrieve.empty, ``vectors_pending``).

``MemoTools`` (memo.serve.mcp_tools, the state both servers share) owns one
``PendingVectors`` and, after each search and stats answer, calls ``after_search`` /
``after_stats``, which ``poke`` when the answer shows queued vectors (a degraded search or
a ``vectors_pending`` empty answer; stats with pending vectors for the embedding model).
``poke`` starts the very backfill the server runs at start (a one-shot
``BackgroundEmbedder`` with ``backfill_at_start``: its own connection, thread and lowered
priority, failures logged and kept queued) on a daemon thread and returns at once, so a
search never waits for it.  At most one runs at a time, none while the server's own
embedder is busy (its start-up backfill or an add's batch: those rows are in hand
already) or absent (library use and tests: nothing is started), and after a failed run
(no model) it waits ``retry_after`` seconds before trying again, so a missing model does
not make every search start a doomed backfill.  ``min_gap`` bounds how often runs start
at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """What is used of memo.embed.background.BackgroundEmbedder."""

    last_error: str | None

    @property
    def running(self) -> bool: ...

    def start(self) -> Any: ...

    def wait_idle(self, timeout: float | None = None) -> bool: ...

    def stop(self, *, drain: bool = True, timeout: float = 10.0) -> bool: ...


def _backfill_embedder(db_path: Any) -> Embedder:
    from memo.embed.background import BackgroundEmbedder  # numpy/onnx only when serving
    return BackgroundEmbedder(db_path, backfill_at_start=True)


class PendingVectors:
    """Runs the start-up backfill again, in the background, when asked and allowed."""

    def __init__(self, db_path: Any, server_embedder: Callable[[], Embedder | None], *,
                 make: Callable[[Any], Embedder] = _backfill_embedder, min_gap: float = 2.0,
                 retry_after: float = 60.0) -> None:
        self.db_path = db_path
        self.server_embedder = server_embedder   # read at each poke: the server starts it after the tools
        self.make, self.min_gap, self.retry_after = make, min_gap, retry_after
        self.runs = 0                            # backfills started (tests, logs)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._current: Embedder | None = None
        self._started_at: float | None = None
        self._failed = False
        self._closed = False
        self._model_id: str | None = None

    def model_id(self) -> str | None:
        """The model the server's embedders embed with (the registry's default, as
        memo.embed.backfill picks it); None when it cannot be named (no backfill can run)."""
        if self._model_id is None:
            try:
                from memo.embed.registry import load_registry  # deferred: start-up
                self._model_id = load_registry().get(None).id
            except Exception:  # noqa: BLE001 - an unknown model: nothing to embed with
                return None
        return self._model_id

    def stats_pending(self, stats: dict[str, Any]) -> bool:
        """Whether a ``memo stats`` document shows passages or facts waiting for the model."""
        model = self.model_id()
        return model is not None and any(
            (stats.get(key) or {}).get(model, 0) > 0 for key in ("pending_vectors", "pending_fact_vectors"))

    def after_search(self, doc: dict[str, Any]) -> bool:
        """Poke after a search answer (``memo search --json``'s document) that shows queued
        vectors: degraded (passages without vectors may be the reason; else the model is
        missing or still loading: that backfill fails or finds nothing, and the waits below
        keep it rare), or empty because candidates had no vector yet."""
        if doc["trace"]["degraded"]["flag"] or doc.get("cause") == "vectors_pending":
            return self.poke()
        return False

    def after_stats(self, stats: dict[str, Any]) -> bool:
        """Poke after a stats answer that counts vectors waiting for the model."""
        # The embedder first: without one nothing starts, and the registry is not read.
        if self._running_embedder() is not None and self.stats_pending(stats):
            return self.poke()
        return False

    def _running_embedder(self) -> Embedder | None:
        """The server's background embedder, if it runs (read at each call: the server
        starts it after the tools)."""
        main = self.server_embedder()
        return main if main is not None and main.running else None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def poke(self) -> bool:
        """Start a backfill unless one runs, the server embeds or a wait is due.  Never
        blocks on embedding; True when one was started."""
        main = self._running_embedder()
        if main is None:
            return False       # no background embedding in this server (library use, tests)
        with self._lock:
            if self._closed or self.busy:
                return False
            now = time.monotonic()
            if self._started_at is not None and now - self._started_at < (
                    self.retry_after if self._failed else self.min_gap):
                return False
            if not main.wait_idle(0):
                return False   # the server's embedder has rows in hand; a later answer asks again
            self._started_at, self.runs = now, self.runs + 1
            self._thread = threading.Thread(target=self._run, name="memo-catch-up-backfill", daemon=True)
            self._thread.start()
        return True

    def _run(self) -> None:
        error: str | None = None
        try:
            embedder = self.make(self.db_path)
            with self._lock:
                if self._closed:
                    return
                self._current = embedder
                embedder.start()
            try:
                embedder.wait_idle()     # the backfill done (or failed: logged by the embedder)
            finally:
                embedder.stop(drain=False)
            error = embedder.last_error
        except Exception as exc:  # noqa: BLE001 - a daemon thread: log, never a traceback on stderr
            error = f"{type(exc).__name__}: {exc}"
            log.warning("catching up on pending vectors failed: %s", error)
        finally:
            with self._lock:
                self._failed = error is not None
                self._current = None
        if error is not None:
            log.info("pending vectors stay queued; retrying in %.0f s: %s", self.retry_after, error)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the running backfill (if any) ends; False on timeout (tests)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.busy

    def close(self, timeout: float = 10.0) -> None:
        """No more runs; stop the running one (what it has not embedded stays queued)."""
        with self._lock:
            self._closed = True
            current, thread = self._current, self._thread
        if current is not None:
            current.stop(drain=False, timeout=timeout)
        if thread is not None:
            thread.join(timeout)
