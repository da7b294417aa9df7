"""Stage 2, arms: ask every registered arm whether it runs (its ``plan``), run those that
do, and time each one.  Each arm applies the scope filter inside its own SQL.

The arms run one after another in this thread: each is a single SQLite query or one
matrix-vector product, ~1-3 ms, and a thread pool's hand-off would cost about as much as
it saves on 2 cores.

Failures: a query an arm cannot compile (``QuerySyntaxError``, e.g. "???" has no words)
only skips that arm; if no arm ran at all, the error reaches the caller.  A model that
fails mid-query (``ModelUnavailable``) marks the arm degraded.  SQLite errors are store
errors, never swallowed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from memo.errors import ModelUnavailable, QuerySyntaxError, StoreBusy, StoreError
from memo.retrieve.arms.base import Arm, ArmContext
from memo.retrieve.types import ArmRun


def run_arms(ctx: ArmContext, arms: Sequence[Arm]) -> list[ArmRun]:
    runs: list[ArmRun] = []
    syntax_error: QuerySyntaxError | None = None
    for arm in arms:
        plan = arm.plan(ctx)
        if not plan.runs:
            runs.append(ArmRun(arm.name, False, plan.reason, plan.degraded, (), 0.0))
            continue
        t0 = time.perf_counter()
        try:
            hits = arm.run(ctx)
        except QuerySyntaxError as err:
            syntax_error = err
            runs.append(ArmRun(arm.name, False, f"not run: {err}", False, (), _ms(t0)))
            continue
        except ModelUnavailable as err:
            runs.append(ArmRun(arm.name, False, f"model unavailable: {err}", True, (), _ms(t0)))
            continue
        except sqlite3.OperationalError as err:
            if "locked" in str(err) or "busy" in str(err):
                raise StoreBusy(f"{arm.name} arm: {err}") from err
            raise StoreError(f"{arm.name} arm: {err}") from err
        except sqlite3.DatabaseError as err:
            raise StoreError(f"{arm.name} arm: {err}") from err
        runs.append(ArmRun(arm.name, True, plan.reason, False, tuple(hits[:ctx.fetch_depth]), _ms(t0)))
    if syntax_error is not None and not any(r.ran for r in runs):
        raise syntax_error
    return runs


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
