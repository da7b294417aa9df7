"""Replay a labelled query set through ``memo.retrieve.search`` for every run spec.

Work is split over worker processes (both cores): each worker opens its own read
connection to the cached index and its own semantic service (the in-memory vector matrix
loads once per worker), then answers chunks of (run, queries).  Query vectors are
precomputed (``memo_eval.index.query_vectors``) and handed to the pipeline as
``ArmServices.query_vector``, so a replay costs only the searches.  Every search asks
for ``limit=100`` and an unbounded token budget with ``response_format="explain"``, so the
traces hold the why columns for every result.

Workers ask the pipeline for its arm-hit cache (``memo.retrieve.run_arms``): a grid varies
fusion/recency constants, never what the arms return, so each arm runs once per query
instead of once per run: a task takes a few queries through every run of its group
(``plan_tasks``), so one worker sees all of a query's runs.  ``MEMO_EVAL_ARM_CACHE=0`` turns it off (to time the
arms themselves in every run).  Each query row says which arms were served from the cache
(``<arm>_cached``, ``arm_cached``): such a search's latency is not a real search's, so its
arm latency is null and the latency of the search that produced the hits is kept apart
(``<arm>_source_latency_ms``); latency tables and charts read uncached searches only.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memo.errors import DatasetError
from memo.retrieve.services import ArmServices
from memo.spawn import worker_context
from memo.store.connect import read_tx
from memo.types import ARM_NAMES
from memo_eval.datasets import EvalQuery, EvalSet
from memo_eval.grid import RunSpec
from memo_eval.partials import Merged, PartBuilder, RunPart, build_parts, hand_over_via, merge, warm_arrow

EVAL_LIMIT = 100
EVAL_MAX_TOKENS = 100_000_000   # "no budget": the eval measures ranking, not packing
CHUNK = 24                      # searches per task: small enough to balance, big enough to amortise IPC
# ... but at least this many queries per task: each task hands back one part per run (an
# Arrow table built, pickled, unpickled and concatenated), so a 12-run grid cut into tasks
# of 2 queries made 1,800 parts of ~200 rows for 300 queries; 8 makes 456, and 38 tasks
# still balance two workers.
QUERIES_MIN = 8
# Runs replayed together (a task takes a chunk of queries through all of them): at most
# this many result rows of a group are held before its runs are scored and written (~1 KB
# each in the parent: ~0.5 GB).  Later groups find most queries' hits in the cache of the
# worker that took them before, so a query's arms run at most once per worker.
GROUP_ROWS_MAX = 500_000
# Finished runs are scored and written (``on_run``) on this many threads of the parent:
# a grid's runs all end with its group's last task, and one after another they kept the
# parent busy ~90 ms each (a 12-run grid: ~1 s) while the workers had nothing left to do;
# Parquet encoding, most of a finish now (the workers score), releases the GIL, so two
# threads overlap them.
FINISH_THREADS = 2

Tick = Callable[[int], None]


@dataclass(frozen=True)
class ReplayConfig:
    db_path: Path
    unit_keys: dict[int, str] | None     # None: computed per worker from the index
    es: EvalSet
    model_id: str | None                 # None: keyword/exact only (no semantic service)
    query_vecs: np.ndarray | None        # (n_queries, dim) in es.queries order


# --- worker side -------------------------------------------------------------------------
_W: dict[str, Any] = {}


# Replay allocates ~100 results with their why per search and frees them at once; at
# CPython's default gen-0 threshold (700) the collector ran ~4,000 times in a 2,700-search
# grid and walked the worker's caches (arm hits, rows) each time it reached gen 2: 6.8 of
# 42.8 s.  Few of these objects form cycles, so collections are made rarer, not disabled.
GC_THRESHOLDS = (50_000, 20, 20)


def _init_worker(cfg: ReplayConfig, barrier: Any = None, keyword_index: bool = True,
                 handover: str | None = None) -> None:
    """Open what a worker searches with.  ``keyword_index`` False: the parent's pre-flight
    check (it closes the connection at once; building the index there would only delay
    the workers).  ``handover``: the folder its parts' tables travel through
    (``memo_eval.partials.hand_over_via``)."""
    hand_over_via(handover)
    os.environ.setdefault("MEMO_ONNX_THREADS", "1")
    gc.set_threshold(*GC_THRESHOLDS)
    from memo.store.db import open_db
    from memo.store.dialect import is_postgres
    from memo_eval.index import unit_keys

    conn = open_db(cfg.db_path, write=False)
    services = ArmServices()
    if cfg.model_id is not None:
        from memo.embed.service import semantic_services

        services = ArmServices.of(semantic_services(conn, cfg.model_id))
        svc = services.semantic
        svc.status()                       # loads the model check + the vector matrix now
        if getattr(svc, "index", None) is not None and not is_postgres(conn):
            svc.index.refresh(conn)        # PostgreSQL searches its vectors in the server
    if keyword_index and not is_postgres(conn):
        # The keyword arm's impact index, built now rather than in the background thread
        # the first search would start (memo.retrieve.impact: meanwhile FTS5 answers, ~2x
        # slower, and the build competes for the same cores); setup, like the matrix load.
        from memo.retrieve.impact import ensure_index

        ensure_index(conn)
    if keyword_index:       # a worker, not the pre-flight: its first part builds a table
        warm_arrow()
    if os.environ.get("MEMO_EVAL_ARM_CACHE", "1") != "0":
        services = services.with_(arm_cache=True)
    _W.clear()
    _W.update(cfg=cfg, conn=conn, services=services, profiles={},
              keys=cfg.unit_keys if cfg.unit_keys is not None else unit_keys(conn, cfg.es))
    if barrier is not None:
        barrier.wait(timeout=600)


def _pool_worker(cfg: ReplayConfig, barrier: Any, handover: str | None) -> None:
    """A spawned worker's initializer.  Its searches are not anyone's traffic and nothing
    scrapes its metrics, so it counts none (``memo.metrics.stop_recording``); a replay in
    the caller's own process (one worker) leaves the caller's counters as they are."""
    import signal

    from memo import metrics

    # Ctrl-C reaches the whole process group: the parent keeps what had finished and ends
    # the pool; a worker's own KeyboardInterrupt would only print its traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    metrics.stop_recording()
    _init_worker(cfg, barrier, True, handover)


def _noop(_: int) -> int:
    return os.getpid()


def _profile(spec: RunSpec):
    cache = _W["profiles"]
    if spec not in cache:
        cache[spec] = spec.load()
    return cache[spec]


def _search_one(spec: RunSpec, qi: int, q: EvalQuery) -> tuple[dict[str, Any], Sequence[Any]]:
    """(the query row, the response's results: stage 9's table, whose columns the part
    builder reads without building a ``Result`` per row)."""
    from memo.retrieve import SearchRequest, search
    from memo.types import Scope

    cfg: ReplayConfig = _W["cfg"]
    profile = _profile(spec)
    services: ArmServices = _W["services"]
    if cfg.query_vecs is not None and services.semantic is not None:
        services = services.with_(query_vector=cfg.query_vecs[qi])
    req = SearchRequest(query=q.text, scope=Scope(namespaces=(q.namespace,)) if q.namespace else Scope(),
                        mode=spec.mode, limit=min(EVAL_LIMIT, profile.limit.max), max_tokens=EVAL_MAX_TOKENS,
                        response_format="explain", now=q.now, columns=True)
    conn = _W["conn"]
    # One read snapshot around the search and the arm-cache bookkeeping: the search's own
    # read_tx joins it, and the per-connection caches read the data version once.
    with read_tx(conn):
        before = _arm_cache(conn) if services.arm_cache else None
        n_before = len(before) if before is not None else 0
        t0 = time.perf_counter()
        resp = search(conn, req, profile, services)
        wall = (time.perf_counter() - t0) * 1000.0
        fresh: set[str] | None = None
        if before is not None:
            after = _arm_cache(conn)
            if after is before and len(after) >= n_before:
                new = len(after) - n_before
                fresh = {key[0] for key in itertools.islice(reversed(after), new)} if new else set()
            else:              # emptied (full) or replaced (data changed): every entry is this search's
                fresh = {key[0] for key in after}
    return _query_row(q, resp, wall, fresh), resp.results


def _arm_cache(conn: Any) -> dict:
    from memo.retrieve.conn_cache import conn_cache

    return conn_cache(conn).setdefault("arm_hits", {})


def _query_row(q: EvalQuery, resp: Any, wall_ms: float, fresh: set[str] | None = None) -> dict[str, Any]:
    """``fresh``: the arms this search really ran (None: no arm cache, every arm ran)."""
    from memo_eval.traces import stage_struct

    tr = resp.trace
    row: dict[str, Any] = {
        "qid": q.qid, "query": q.text, "category": q.category, "answerable": q.answerable,
        "namespace": q.namespace, "n_results": len(resp.results), "abstained": not resp.results,
        "reason": resp.reason, "degraded": bool(tr.degraded.get("flag")),
        "degraded_reason": tr.degraded.get("reason"), "cutoff_kind": tr.cutoff_kind,
        "truncated": int(resp.truncated), "candidates": int(tr.candidates),
        "latency_ms": float(tr.latency_ms), "wall_ms": round(wall_ms, 3),
        "stage_ms": stage_struct(getattr(tr, "stage_ms", None)),
    }
    any_cached = False
    for arm in tr.arms:
        if arm.name in ARM_NAMES:
            cached = bool(arm.ran) and fresh is not None and arm.name not in fresh
            any_cached |= cached
            row[f"{arm.name}_ran"] = bool(arm.ran)
            row[f"{arm.name}_candidates"] = int(arm.candidates)
            row[f"{arm.name}_cached"] = cached
            row[f"{arm.name}_latency_ms"] = None if cached else float(arm.latency_ms)
            row[f"{arm.name}_source_latency_ms"] = float(arm.latency_ms)
        if arm.name == "fact":
            row["fact_matched"] = arm.matched
    row["arm_cached"] = any_cached
    fw = getattr(tr, "fusion_weights", None) or {}
    for arm, w in fw.get("weights", {}).items():
        if arm in ARM_NAMES:
            row[f"{arm}_weight"] = float(w)
    row["keyword_coverage"] = fw.get("evidence", {}).get("keyword_coverage")
    row["keyword_multiplier"] = fw.get("multipliers", {}).get("keyword")
    row["code_share"] = fw.get("evidence", {}).get("code_share")
    row["rescore"] = [{"name": k, "named": list(v)} for k, v in getattr(tr, "rescore", {}).items()]
    return row


def _task(task: tuple[list[tuple[int, RunSpec]], list[int]]) -> tuple[list[tuple[int, RunPart]], float]:
    """One chunk of queries through every run of a group, query by query: a query's arms
    run at its first run and every later run of the group takes them from this worker's
    arm-hit cache (a chunk of one run per task let both workers run the arms of most
    queries: tasks of one chunk went to either).  Each run's share comes back summarised
    (``memo_eval.partials``): graded rows as one Arrow table, the unit rankings and the
    coverage figures, not a list per result row for the parent to walk."""
    runs, qidx = task
    es = _W["cfg"].es
    queries = es.queries
    t0 = time.perf_counter()
    row_columns: dict[int, tuple] = {}      # a task's queries' rows recur in each of its runs
    builders = [PartBuilder(es.qrels, _W["keys"], row_columns) for _ in runs]
    for i in qidx:
        q = queries[i]
        for (_, spec), b in zip(runs, builders, strict=True):
            b.add(*_search_one(spec, i, q))
    # qidx is one contiguous range (plan_tasks): a part starts at its first query
    out = [(ri, part) for (ri, _), part in zip(runs, build_parts(builders, qidx[0]), strict=True)]
    return out, time.perf_counter() - t0


# --- driver side -------------------------------------------------------------------------
@dataclass
class RunOutput:
    spec: RunSpec
    queries: list[dict[str, Any]]
    parts: list[RunPart]           # the workers' summaries; ``merged`` once the run is complete
    busy_s: float = 0.0
    merged: Merged | None = None


@dataclass(frozen=True)
class ReplayStats:
    queries: int           # searches run (runs x queries)
    seconds: float         # wall time of the searches (after the workers warmed up)
    qps: float
    workers: int
    warmup_s: float


def plan_tasks(specs: Sequence[RunSpec], n_q: int) -> list[tuple[list[tuple[int, RunSpec]], list[int]]]:
    """Tasks of (runs, query indices): runs in groups of at most GROUP_ROWS_MAX result rows,
    in order (each group is scored and written as it ends), and per group the queries in
    chunks of about CHUNK searches, at least QUERIES_MIN queries (one query through every run of its group)."""
    per_group = max(1, min(len(specs), GROUP_ROWS_MAX // max(1, n_q * EVAL_LIMIT)))
    tasks = []
    for g in range(0, len(specs), per_group):
        runs = [(ri, specs[ri]) for ri in range(g, min(g + per_group, len(specs)))]
        step = max(1, QUERIES_MIN, CHUNK // len(runs))
        tasks.extend((runs, list(range(s, min(s + step, n_q)))) for s in range(0, n_q, step))
    return tasks


# The workers fill the cores between them, so each does its linear algebra on one thread:
# with OpenBLAS's default (a thread per core) the semantic arm's mat-vec over SciFact's
# 7k passages took 5.4 ms in a worker next to another, 0.46 ms on one thread.  Spawned
# workers read these at their numpy import; a value the user set is kept.
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    added = [v for v in _BLAS_THREAD_VARS if v not in os.environ]
    for v in added:
        os.environ[v] = "1"
    try:
        yield
    finally:
        for v in added:
            os.environ.pop(v, None)


def default_workers() -> int:
    env = os.environ.get("MEMO_EVAL_WORKERS")
    if env:
        if not env.strip().isdigit() or int(env) < 1:
            from memo.errors import ValidationError

            raise ValidationError(f"MEMO_EVAL_WORKERS={env!r}: expected a number of workers, 1 or more")
        return int(env)
    return max(1, min(os.cpu_count() or 1, 8))


def replay(cfg: ReplayConfig, specs: Sequence[RunSpec], *, workers: int | None = None,
           tick: Tick | None = None, on_run: Callable[[RunOutput], Any] | None = None
           ) -> tuple[list[Any], ReplayStats]:
    """Run every spec over every query of ``cfg.es``; results keep query order per run.

    Tasks are queued group by group (``plan_tasks``), so runs complete roughly in order.
    With ``on_run`` each run is handed over (to be scored and written) as soon as its last chunk is in, and
    only ``on_run``'s return value is kept: a 46-point grid over 809 queries x 100 results
    would otherwise hold millions of rows in memory."""
    n_q = len(cfg.es.queries)
    if n_q == 0 or not specs:
        raise DatasetError("nothing to replay: no queries or no run specs")
    workers = default_workers() if workers is None else max(1, workers)
    total = n_q * len(specs)
    workers = min(workers, max(1, total // CHUNK))
    tasks = plan_tasks(specs, n_q)
    outs: list[Any] = [RunOutput(spec, [None] * n_q, []) for spec in specs]  # type: ignore[list-item]
    pending = [0] * len(specs)
    for runs, _ in tasks:
        for ri, _ in runs:
            pending[ri] += 1
    t_warm = time.perf_counter()
    finishing = ThreadPoolExecutor(FINISH_THREADS, thread_name_prefix="memo-eval-finish")
    finished: list[Future] = []

    def finish_one(ri: int) -> None:
        out = outs[ri]
        out.merged = merge(out.parts)
        out.parts = []
        if on_run is not None:
            outs[ri] = on_run(out)

    def finish(ri: int) -> None:
        for f in finished:          # a run that failed to finish stops the replay now
            if f.done() and f.exception() is not None:
                f.result()
        finished.append(finishing.submit(finish_one, ri))

    def collect(item: tuple[list[tuple[int, RunPart]], float]) -> None:
        per_run, busy = item
        share = busy / len(per_run)
        for ri, part in per_run:
            out = outs[ri]
            out.busy_s += share
            out.queries[part.first:part.first + len(part.queries)] = part.queries
            out.parts.append(part)
            pending[ri] -= 1
            if pending[ri] == 0:
                finish(ri)
            if tick:
                tick(len(part.queries))

    try:
        with _collector_paused(workers > 1):
            warm, t0 = _run_tasks(cfg, tasks, workers, collect, t_warm)
            for f in finished:          # in submission order: the first error is raised
                f.result()
    finally:
        finishing.shutdown(wait=True, cancel_futures=True)
    secs = time.perf_counter() - t0
    stats = ReplayStats(queries=total, seconds=round(secs, 3), qps=round(total / secs, 1) if secs > 0 else 0.0,
                        workers=workers, warmup_s=round(warm, 2))
    return outs, stats


@contextlib.contextmanager
def _collector_paused(pause: bool) -> Iterator[None]:
    """The parent's cyclic collector off while the workers search and its threads write
    the finished runs (``pause``: the searches run in other processes).  What the parent
    allocates then (the parts' query rows, rankings and tables) lives until each run is
    written and holds no cycles; a collection walked all of it: ~0.1 s of a 12-run
    SciFact grid's ~3 s replay, on the cores the workers search on."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run_tasks(cfg: ReplayConfig, tasks: list, workers: int, collect: Callable[[Any], None],
               t_warm: float) -> tuple[float, float]:
    """Run ``tasks`` in this process (one worker) or a spawned pool, handing each result
    to ``collect``; (seconds of warm-up, the replay's start on perf_counter)."""
    if workers == 1:
        thresholds = gc.get_threshold()     # this process is the caller's: put them back
        _init_worker(cfg)
        warm = time.perf_counter() - t_warm
        t0 = time.perf_counter()
        try:
            for t in tasks:
                collect(_task(t))
        finally:
            gc.set_threshold(*thresholds)
    else:
        # Pre-flight in this process: a broken index or model fails here with a clear error
        # (a failing pool initializer would only respawn).  Workers are *spawned*, not
        # forked: the caller may hold SQLite connections and onnxruntime / BLAS thread pools
        # (a test process, a notebook), and a forked child that inherits them crashed
        # (segfaults in a clean-clone CI run).  Each worker opens its own connection and
        # loads the vector matrix itself (well under a second for SciFact).
        thresholds = gc.get_threshold()     # _init_worker sets a worker's: not the caller's
        _init_worker(cfg, keyword_index=False)
        _W.pop("conn").close()
        gc.set_threshold(*thresholds)
        _W.clear()
        ctx = worker_context()      # workers never run the caller's __main__ again (memo/spawn.py)
        barrier = ctx.Barrier(workers)
        with _one_blas_thread(), _handover_folder() as handover, \
                ctx.Pool(workers, initializer=_pool_worker, initargs=(cfg, barrier, handover)) as pool:
            warm_arrow()        # while the workers start: the finishes' first table needs it
            pool.map(_noop, range(workers), chunksize=1)     # every worker passed the barrier
            warm = time.perf_counter() - t_warm
            t0 = time.perf_counter()
            for item in pool.imap_unordered(_task, tasks, chunksize=1):
                collect(item)
    return warm, t0


@contextlib.contextmanager
def _handover_folder() -> Iterator[str | None]:
    """A private folder in memory (``/dev/shm``) for the workers' part tables, removed
    with whatever is left in it when the replay ends; None (tables inside the pickles)
    where there is no such file system."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    try:
        folder = tempfile.mkdtemp(prefix="memo-eval-", dir=shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    except OSError:
        folder = None
    try:
        yield folder
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
