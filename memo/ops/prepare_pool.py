"""An import's records prepared on other processes while this one writes (issue 31.3).

Preparing a record (checks, splitting to the model's window, token counts, exact terms,
entity mentions: ``memo.ops.add.prepare`` and ``memo.ops.store_batch.prepare_item``) needs
no database and was most of an index-only import's CPU (docs/scale.md); the writes need
the one write connection.  So a large import hands its records to ``workers`` processes in
chunks and writes what they send back, in input order, while they prepare the next ones:
the same prepared records and the same decisions as preparing them here, one by one.

At most twice the writer's batch (and at least ``WINDOW`` chunks per worker) is out at a
time, in chunks of at most ``CHUNK`` records and about ``CHUNK_CHARS`` of text: the workers
prepare the next batch while this process commits one, and memory stays bounded however
long the input and however large its records.  The workers are spawned (a fork would copy
this process's threads and open database handles) without running the importing program's
main module (``memo.spawn``), ignore Ctrl-C (this process stops the import and the pool) and
end with the import, or within ``PARENT_CHECK_S`` of the importing process being killed.  A
worker that dies or a chunk that cannot be sent is prepared here instead, and the rest of
the import is prepared here too (logged): it never loses a record.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from memo.dc_pickle import by_fields
from memo.errors import ValidationError
from memo.ingest.files import FileItem
from memo.ops.add import prepare
from memo.ops.store_batch import PreparedItem, prepare_item
from memo.spawn import worker_context
from memo.stored import RecordDraft

log = logging.getLogger(__name__)

CHUNK = 64            # records per task: ~25 ms of preparing, against ~1 ms to send and receive
CHUNK_CHARS = 1 << 20  # text per task at most (a longer record goes alone): large records keep what is out small
WINDOW = 4            # chunks out per worker at least: it always has the next one
MAX_WORKERS = 4       # past this the one writing process is the bound (2 cores: 1 worker)


@by_fields
@dataclass(frozen=True, slots=True)
class Outcome:
    """One item's preparation: the record to store, or why it was rejected (``warning``:
    an unexpected failure's traceback, for the log)."""

    prepared: PreparedItem | None = None
    rejected: str | None = None
    warning: str | None = None


def absolute(draft: RecordDraft, base: Path) -> RecordDraft:
    """The draft with its import path made absolute (``base / path``; 'file.jsonl:7'
    keeps its line suffix).  Applied after splitting: passages (a code file's module
    name, the section) stay the same wherever the folder lives."""
    if not draft.import_path:
        return draft
    return replace(draft, import_path=(base / draft.import_path).as_posix())


def prepare_one(draft: RecordDraft, base: Path, nul_ok: bool) -> Outcome:
    """``draft`` ready to store, or rejected: a bad draft with its check's message, a
    splitter bug (RecursionError...) with its type, never raised (it must not stop the import)."""
    try:
        return Outcome(prepared=prepare_item(absolute(draft, base), prepare(draft, nul_ok=nul_ok)))
    except ValidationError as exc:
        return Outcome(rejected=str(exc))
    except Exception as exc:  # noqa: BLE001 - one record's failure rejects that record only
        return Outcome(rejected=f"cannot split into passages: {type(exc).__name__}: {exc}",
                       warning=traceback.format_exc())


def _prepare_chunk(drafts: list[RecordDraft | None], base: Path, nul_ok: bool) -> list[Outcome | None]:
    return [None if d is None else prepare_one(d, base, nul_ok) for d in drafts]


PARENT_CHECK_S = 0.5   # how often a worker checks that the importing process still lives


def _start_worker(parent: int) -> None:
    """A worker ignores Ctrl-C (the importing process stops the import and then the pool) and
    ends when the importing process is gone: killed (``kill -9``), it never shuts the pool
    down, and the worker, which holds both ends of its task queue, would wait for a task
    forever, keeping the killed command's output pipes open."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), name="memo-import-parent-watch", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def default_workers() -> int:
    """Worker processes for a large import: one core is this process's (it writes)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, min(MAX_WORKERS, cores - 1))


def outcomes(items: Iterator[FileItem], base: Path, nul_ok: bool, workers: int, ahead: int = 0
             ) -> Iterator[tuple[FileItem, Outcome | None]]:
    """Each item with its outcome (None: nothing to prepare, a rejected or ignored item), in
    input order; ``workers`` 0 prepares here.  Up to ``ahead`` items (at least ``WINDOW``
    chunks per worker) are out at a time: twice the writer's batch, so that the workers
    prepare the next batch while this process commits one."""
    if workers > 0 and multiprocessing.current_process().daemon:
        workers = 0            # a daemonic process (a multiprocessing.Pool's worker) may have no children
    if workers <= 0:           # one at a time: read, prepare, hand over, as before the pool
        for item in items:
            yield from _here([item], base, nul_ok)
        return
    pool: ProcessPoolExecutor | None
    try:
        pool = ProcessPoolExecutor(workers, mp_context=worker_context(),
                                   initializer=_start_worker, initargs=(os.getpid(),))
    except (OSError, ImportError, NotImplementedError, ValueError):   # no semaphores here (some sandboxes)
        log.warning("import: cannot start preparing processes; preparing here", exc_info=True)
        pool = None
    out: deque[tuple[list[FileItem], Future]] = deque()
    window = max(WINDOW * workers, -(-ahead // CHUNK))
    try:
        for chunk in _chunks(items):
            if pool is None:
                yield from _here(chunk, base, nul_ok)
                continue
            try:
                out.append((chunk, pool.submit(_prepare_chunk, _drafts(chunk), base, nul_ok)))
            except Exception:  # noqa: BLE001 - a broken pool: what was sent and the rest, here
                log.warning("import: the preparing processes stopped; preparing here", exc_info=True)
                _stop(pool)
                pool = None
                yield from _drain(out, base, nul_ok, failed=True)
                yield from _here(chunk, base, nul_ok)
                continue
            if len(out) >= window:
                sent = out.popleft()
                got = _take(sent)
                if got is None:     # the pool is broken: this chunk and those still out, here
                    _stop(pool)
                    pool = None
                    out.appendleft(sent)
                    yield from _drain(out, base, nul_ok, failed=True)
                else:
                    yield from got
        yield from _drain(out, base, nul_ok)
    finally:
        if pool is not None:
            _stop(pool)


def _stop(pool: ProcessPoolExecutor) -> None:
    pool.shutdown(wait=True, cancel_futures=True)


def _drafts(chunk: list[FileItem]) -> list[RecordDraft | None]:
    """What to prepare of each item: its draft, or None (rejected or ignored when read)."""
    return [None if i.draft is None or i.rejected is not None or i.ignored else i.draft for i in chunk]


def _chunks(items: Iterator[FileItem]) -> Iterator[list[FileItem]]:
    """Chunks of ``CHUNK`` items, cut sooner at ``CHUNK_CHARS`` of text: the window counts
    chunks, so what is out (sent, prepared, sent back: several copies of each record) stays
    about ``window * CHUNK_CHARS`` however large the records (a folder of 1 MB documents
    would otherwise have ~1,000 of them out beside the writer's batch)."""
    chunk: list[FileItem] = []
    chars = 0
    for item in items:
        chunk.append(item)
        chars += len(item.draft.body) if item.draft is not None else 0
        if len(chunk) >= CHUNK or chars >= CHUNK_CHARS:
            yield chunk
            chunk, chars = [], 0
    if chunk:
        yield chunk


def _here(chunk: list[FileItem], base: Path, nul_ok: bool) -> Iterator[tuple[FileItem, Outcome | None]]:
    yield from zip(chunk, _prepare_chunk(_drafts(chunk), base, nul_ok), strict=True)


def _take(sent: tuple[list[FileItem], Future], *, quiet: bool = False
          ) -> list[tuple[FileItem, Outcome | None]] | None:
    """A chunk's outcomes from its worker; None when they did not come back (a worker died,
    the chunk could not be sent or received): then this process prepares it."""
    chunk, fut = sent
    try:
        return list(zip(chunk, fut.result(), strict=True))
    except Exception:  # noqa: BLE001 - prepared here instead
        if not quiet:
            log.warning("import: a preparing process failed; preparing here", exc_info=True)
        return None


def _drain(out: deque[tuple[list[FileItem], Future]], base: Path, nul_ok: bool, *, failed: bool = False
           ) -> Iterator[tuple[FileItem, Outcome | None]]:
    """The chunks still out, in order (each prepared here if its worker's answer is lost;
    ``failed``: the failure was logged already)."""
    while out:
        sent = out.popleft()
        got = _take(sent, quiet=failed)
        failed = failed or got is None
        yield from got if got is not None else _here(sent[0], base, nul_ok)
