"""The background embedder of a long-running server (``memo-mcp``, ``memo web``).

A write is done once it commits (issue 9.6); embedding its passages is ONNX work that
grows with the text (minutes for a text of megabytes) and, on a busy 2-core machine, is
slow for anything (docs/results-log.md "Background embedder").  A server therefore
acknowledges an add, a supersede or a fact
add right after the commit and hands the new rows to this embedder: one daemon thread per
process, with its own connection, that

    waits for work -> takes everything submitted so far (one batch, whatever its size)
    -> embeds it outside any transaction -> writes the vectors in short transactions
       through the writers' queue (``memo.embed.vectors.write_vectors``)

so the write lock is never held while embedding, and adds that arrive together are
embedded together (one ONNX pass instead of one each).  Until its vectors land, a new
passage is found by the keyword and exact arms (they read the committed rows) and a
semantic search reports it as pending (``degraded.reason``: ``vectors_pending``), the
seed's degraded rule; the in-memory matrix picks the vectors up on the next search.

Failures never reach the writer: a model that cannot load or an ONNX / database error is
logged, remembered in ``last_error``, and the rows stay queued in the database (no
vector) for ``memo backfill`` or the next server start, exactly as when the synchronous
path fails.  At start the thread first embeds whatever was already queued (what
``memo backfill`` does), unless told not to.

``stop`` ends the thread: with ``drain`` it first embeds what was submitted (bounded by
``timeout``); what is left simply stays queued in the database.  The thread is a daemon,
so a server that exits without ``stop`` loses nothing but time (the vectors are derived
data, rebuilt by ``memo backfill``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memo import deferred
from memo.errors import MemoError
from memo.store.connect import release_memory
from memo.store.db import open_db

log = logging.getLogger(__name__)
# Vectors per write transaction (and per ONNX batch) in the server's thread: each vector
# transaction holds the writers' queue, and a foreground add waits behind it.  Under the
# 4+8 soak on the loaded 2-core VM (docs/reliability.md section 9), 64-row transactions
# were held far longer than 16-row ones (the holder is descheduled mid-transaction) and the
# adds waited longer behind them (docs/results-log.md "Background embedder").
BACKGROUND_BATCH = 16
BACKGROUND_NICE = 10      # the embedder thread's nice value above the process's (_lower_priority)


@dataclass(frozen=True, slots=True)
class Job:
    """One committed write's rows to embed, and when they were submitted (the commit)."""

    record_ids: tuple[str, ...]
    fact_pks: tuple[int, ...]
    submitted: float                      # time.monotonic() at submit


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What one pass of the thread did (``on_batch``; the soak bench measures lag with it)."""

    jobs: tuple[Job, ...]
    finished: float                       # time.monotonic() once the vectors committed
    embedded: int                         # passage vectors written
    facts_embedded: int
    error: str | None                     # why the batch's rows stay queued, if they do


def _lower_priority() -> None:
    """Run this thread at ``BACKGROUND_NICE`` above the process's priority (Linux: a thread
    id is a valid target of setpriority; elsewhere nothing changes).  The embedder is
    background work: under load it should take the CPU nobody else wants, not stretch the
    write transactions and searches it shares the cores with.  Raising one's own nice value
    needs no privilege.  Measured with bench/soak.py (docs/reliability.md section 9,
    docs/results-log.md "Background embedder"): searches' p99 falls at nice +10 and the
    embedding lag rises (the vectors arrive when the load lets them)."""
    if not sys.platform.startswith("linux") or BACKGROUND_NICE <= 0:
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE)
    except OSError as exc:   # a sandbox without setpriority: run at the process's priority
        log.debug("background embedder keeps its priority: %s", exc)


def _backfill_module():  # noqa: ANN202 - memo.embed.backfill
    """``memo.embed.backfill``, imported on first use (load-time deferral, not a cycle): it
    imports numpy and the model's modules, and memo-mcp creates this embedder on its event
    loop right after answering initialize (issue 31.2): the thread imports them instead.
    The module, not names: tests replace ``load_model`` there.  Through memo.deferred: other
    threads may be importing the same modules for the first time."""
    deferred.load("memo.embed.backfill")
    from memo.embed import backfill
    return backfill


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MemoError):
        return exc.one_line()
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")


class BackgroundEmbedder:
    """One thread that embeds what ``submit`` hands it.  Thread-safe; ``submit`` never
    blocks on embedding and never raises."""

    def __init__(self, db_path: str | Path, model_id: str | None = None, *, backfill_at_start: bool = True,
                 batch_size: int = BACKGROUND_BATCH, on_batch: Callable[[BatchOutcome], None] | None = None) -> None:
        self.db_path = db_path
        self.model_id = model_id
        self.backfill_at_start = backfill_at_start
        self.batch_size = batch_size
        self.on_batch = on_batch
        self.last_error: str | None = None
        self.batches = 0
        self._cond = threading.Condition()
        self._jobs: list[Job] = []
        self._busy = False                # a batch (or the start-up backfill) is being embedded
        self._stopping = False
        self._drain = True
        self._thread: threading.Thread | None = None

    # --- the writer's side -----------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def start(self) -> BackgroundEmbedder:
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("the background embedder was already started")
            self._busy = self.backfill_at_start     # wait_idle covers the start-up backfill too
            self._thread = threading.Thread(target=self._main, name="memo-embedder", daemon=True)
            self._thread.start()
        return self

    def submit(self, record_ids: Sequence[str] = (), fact_pks: Sequence[int] = ()) -> bool:
        """Queue just-committed rows.  False when the thread is not running (never started,
        stopping or dead): the caller then embeds them itself."""
        if not record_ids and not fact_pks:
            return True
        with self._cond:
            if not self.running:
                return False
            self._jobs.append(Job(tuple(record_ids), tuple(int(pk) for pk in fact_pks), time.monotonic()))
            self._cond.notify_all()
        return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until everything submitted so far is embedded (or failed); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                if self._thread is None or not self._thread.is_alive():
                    return not self._jobs
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def queued(self) -> int:
        """Jobs submitted and not yet taken by the thread."""
        with self._cond:
            return len(self._jobs)

    def stop(self, *, drain: bool = True, timeout: float = 10.0) -> bool:
        """End the thread.  ``drain``: embed what was submitted first, for at most
        ``timeout`` seconds; then (or at once without ``drain``) the thread finishes the
        embedding window in hand, waited for up to ``timeout`` more, and what is left stays
        queued in the database.  True when the thread has ended (a daemon thread still
        inside ONNX when the interpreter exits would abort the process)."""
        with self._cond:
            thread = self._thread
            self._stopping, self._drain = True, drain
            self._cond.notify_all()
        if thread is None:
            return True
        thread.join(timeout if drain else 0)
        if thread.is_alive():
            with self._cond:           # give up draining: end after the window in hand
                self._drain = False
                self._cond.notify_all()
            if drain:
                log.warning("background embedder still busy after %.0f s; the rest stays queued for "
                            "`memo backfill`", timeout)
            thread.join(timeout)
        return not thread.is_alive()

    # --- the thread --------------------------------------------------------------------------
    def _main(self) -> None:
        _lower_priority()
        try:
            conn = open_db(self.db_path, write=True)
        except Exception as exc:  # noqa: BLE001 - the server goes on; adds fall back to embedding themselves
            self.last_error = _describe(exc)
            log.warning("background embedder could not open the database; adds embed in the caller: %s",
                        self.last_error)
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
            return
        try:
            if self.backfill_at_start:
                self._backfill(conn)
            while True:
                with self._cond:
                    while not self._jobs and not self._stopping:
                        self._cond.wait()
                    if not self._jobs or (self._stopping and not self._drain):
                        break
                    jobs, self._jobs, self._busy = tuple(self._jobs), [], True
                try:
                    self._embed(conn, jobs)
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            with self._cond:
                self._stopping = True      # no more submits: callers embed themselves
                self._busy = False
                self._cond.notify_all()
            conn.close()

    def _backfill(self, conn) -> None:  # noqa: ANN001
        """What was queued before this start (model unavailable, a crash, --no-embed)."""
        try:
            report = _backfill_module().backfill(conn, self.model_id, progress=False, batch_size=self.batch_size)
            if report.embedded or report.facts_embedded:
                log.info("embedded %d queued passages and %d facts at start", report.embedded,
                         report.facts_embedded)
        except Exception as exc:  # noqa: BLE001 - a missing model must not stop the server
            self.last_error = _describe(exc)
            log.warning("backfill at server start skipped; passages stay queued: %s", self.last_error)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _abandoned(self) -> bool:
        """Stopping without draining: leave the rest of the batch queued (read between
        embedding windows, so a 2 MB add does not hold the shutdown for minutes)."""
        return self._stopping and not self._drain

    def _embed(self, conn, jobs: tuple[Job, ...]) -> None:  # noqa: ANN001
        record_ids = list(dict.fromkeys(r for j in jobs for r in j.record_ids))
        fact_pks = list(dict.fromkeys(pk for j in jobs for pk in j.fact_pks))
        embedded = facts = 0
        error: str | None = None
        _backfill = _backfill_module()
        try:
            if record_ids:
                report = _backfill.embed_records(conn, record_ids, self.model_id, batch_size=self.batch_size,
                                                 stop=self._abandoned)
                embedded, error = report.embedded, report.error
            if fact_pks and error is None:
                from memo.embed.fact_vectors import backfill_facts
                from memo.embed.registry import load_registry

                embedder = _backfill.load_model(load_registry().get(self.model_id))
                facts, _ = backfill_facts(conn, embedder, embedder.model_id, self.batch_size, only=fact_pks)
        except Exception as exc:  # noqa: BLE001 - logged; the rows stay queued for `memo backfill`
            error = _describe(exc)
            log.warning("background embedding failed; %d records and %d facts stay queued for "
                        "`memo backfill`: %s", len(record_ids), len(fact_pks), error,
                        exc_info=not isinstance(exc, MemoError))
        else:
            if error:
                log.warning("background embedding skipped; %d records and %d facts stay queued: %s",
                            len(record_ids), len(fact_pks), error)
        self.batches += 1
        if embedded + facts > self.batch_size * _backfill.WINDOW_BATCHES:
            # More than one window: a large add's rows, texts and vector pages are garbage
            # now; give them back (the ONNX arena already was: memo.embed.model), so the
            # server returns to its warm size (issue 33.3).
            release_memory(conn)
        if error:
            self.last_error = error
        if self.on_batch is not None:
            try:
                self.on_batch(BatchOutcome(jobs, time.monotonic(), embedded, facts, error))
            except Exception:  # noqa: BLE001 - an observer's bug must not stop embedding
                log.exception("on_batch observer failed")
