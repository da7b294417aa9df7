"""Stage 2, arms: ask every registered arm whether it runs (its ``plan``), run those that
do, and time each one.  Each arm applies the scope filter inside its own SQL.

The arms run one after another in this thread: each is a single SQLite query or one
matrix-vector product, a few milliseconds, and a thread pool's hand-off would cost about
as much as it saves on 2 cores (docs/results-log.md "Arms in one thread, the arm-hit cache,
the candidate fetch").

Order: first the arms that need neither the model nor another arm's hits (``Arm.needs_model``,
``Arm.after``), then the others' ``prepare`` (what of them needs neither), then the others,
each group in ``ARMS`` order; the runs are reported in ``ARMS`` order.  A cold ``memo search``
starts building the model's session on a helper thread, and the semantic arm waits for it
(~100 ms at 1M passages): the keyword, exact and entity arms and the graph arm's walk now
fill that wait instead of following it.  No arm reads what a later one writes, so the hits
are the same in any order (``tests/unit/retrieve/test_run_arms_order.py``).

Each arm's hits go into ``ctx.scratch.hits`` as it finishes, so an arm later in ``ARMS``
may read those of the arms before it: the graph arm's title hop reads the keyword and
semantic arms' best (``graph.title_hits``), and declares their keys in its ``reads``.

Failures: a query an arm cannot compile (``QuerySyntaxError``, e.g. "???" has no words)
only skips that arm; if no arm ran at all, the error reaches the caller.  A model that
fails mid-query (``ModelUnavailable``) marks the arm degraded.  SQLite errors are store
errors, never swallowed.

Arm-hit cache (opt-in: ``ArmServices.arm_cache``): an arm's hits depend only on
the query, mode, scope, query vector, model, data and the profile keys the arm declares it
reads (``Arm.reads``: keys or whole sections), so each arm's entry is keyed by those values
and never by the profile's fusion/recency/cutoff constants or another arm's keys.  Eval replay runs the same queries under a grid of those
constants, so it asks for the cache and each arm runs once per query per worker: the
keyword arm's bm25 top-k is most of a search and cannot be made cheaper (FTS5 scores every
match; figures: docs/results-log.md, the same heading).  Entries live
in ``conn_cache``, so any write empties them.  A cached run reports the latency it had
when it ran (the arm's cost for that query); ``trace.stage_ms`` shows the time actually
spent.  Interactive searches do not opt in: their latency stays real.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from memo.errors import ModelUnavailable, QuerySyntaxError, StoreBusy, StoreError
from memo.retrieve.arms.base import Arm, ArmContext
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.types import ArmRun

ARM_CACHE_MAX = 8192   # entries per connection (~10 KB each at fetch_depth 100), then cleared


def run_arms(ctx: ArmContext, arms: Sequence[Arm]) -> list[ArmRun]:
    cache = conn_cache(ctx.conn).setdefault("arm_hits", {}) if ctx.services.arm_cache else None
    request_key = _request_key(ctx) if cache is not None else None

    def cached(arm: Arm) -> tuple[tuple[Any, ...], tuple | None]:
        if cache is None:
            return (), None
        key = (arm.name, request_key, reads_key(arm, ctx.profile))
        return key, cache.get(key)

    free = [a for a in arms if not _waits(a)]
    rest = [a for a in arms if _waits(a)]
    done: dict[str, ArmRun] = {}
    errors: dict[str, QuerySyntaxError] = {}
    for arm in free:
        done[arm.name] = _run_one(ctx, arm, arm.plan(ctx), cached(arm), cache, errors)
    for arm in rest:
        prepare = getattr(arm, "prepare", None)
        if prepare is None or cached(arm)[1] is not None:
            continue
        try:
            prepare(ctx)
        except Exception:  # noqa: BLE001 - only a head start: its run() does it again and reports the error
            ctx.scratch.prepared.pop(arm.name, None)
    for arm in rest:
        done[arm.name] = _run_one(ctx, arm, arm.plan(ctx), cached(arm), cache, errors)
    runs = [done[a.name] for a in arms]
    if errors and not any(r.ran for r in runs):
        raise [errors[a.name] for a in arms if a.name in errors][-1]     # the last arm's, in ARMS order
    return runs


def _waits(arm: Arm) -> bool:
    """The arm needs the embedding model or another arm's hits."""
    return bool(getattr(arm, "needs_model", False) or getattr(arm, "after", ()))


def _run_one(ctx: ArmContext, arm: Arm, plan: Any, cached: tuple[tuple[Any, ...], tuple | None],
             cache: dict | None, errors: dict[str, QuerySyntaxError]) -> ArmRun:
    if not plan.runs:
        return ArmRun(arm.name, False, plan.reason, plan.degraded, (), 0.0)
    key, hit = cached
    if hit is not None:
        ctx.scratch.hits[arm.name] = hit[0]
        return ArmRun(arm.name, True, plan.reason, False, hit[0], hit[1])
    t0 = time.perf_counter()
    try:
        hits = arm.run(ctx)
    except QuerySyntaxError as err:
        errors[arm.name] = err
        return ArmRun(arm.name, False, f"not run: {err}", False, (), _ms(t0))
    except ModelUnavailable as err:
        return ArmRun(arm.name, False, f"model unavailable: {err}", True, (), _ms(t0))
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):
            raise StoreBusy(f"{arm.name} arm: {err}") from err
        raise StoreError(f"{arm.name} arm: {err}") from err
    except sqlite3.DatabaseError as err:
        raise StoreError(f"{arm.name} arm: {err}") from err
    run = ArmRun(arm.name, True, plan.reason, False, tuple(hits[:ctx.fetch_depth]), _ms(t0))
    if cache is not None:
        if len(cache) >= ARM_CACHE_MAX:
            cache.clear()
        cache[key] = (run.hits, run.latency_ms)
    ctx.scratch.hits[arm.name] = run.hits
    return run


def _request_key(ctx: ArmContext) -> tuple[Any, ...]:
    """What every arm's hits depend on besides the data (``conn_cache`` covers that) and
    the profile keys it reads (``reads_key``)."""
    svc = ctx.services.semantic
    vec = ctx.services.query_vector
    return (ctx.query, ctx.mode, ctx.scope_sql.where, ctx.scope_sql.params, ctx.fetch_depth,
            getattr(svc, "model_id", None),
            None if vec is None else vec.tobytes() if hasattr(vec, "tobytes") else tuple(vec))


def reads_key(arm: Arm, profile: Any) -> tuple[Any, ...]:
    """The values of the profile keys and sections an arm declares it reads (``Arm.reads``)."""
    if profile is None:
        return ()
    out = []
    for name in arm.reads:
        if "." in name:
            out.append(profile.value(name))
        else:
            out.append(getattr(profile, name))
    return tuple(out)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
