"""Worker processes that start from memo's modules alone, never from the caller's program.

memo starts worker processes in two places: an import's preparing workers
(``memo.ops.prepare_pool``) and the evaluation harness's replay workers (``memo_eval.replay``).
Both are *spawned* (a fork would copy the caller's threads, SQLite handles and thread
pools).  The standard spawn starts each child by running the caller's ``__main__`` module
again, as ``__mp_main__``: a script that calls memo outside an ``if __name__ == "__main__":``
block ran once more in every worker.  For an import that meant the script's output twice,
the whole input imported by a worker (after a RuntimeError about its bootstrapping phase)
and the importing process's report "added 0, skipped N"; for an evaluation, workers that
died at start and were started again forever: the run hung.

The workers run memo's own functions (pickled by module and name), so they need nothing of
the caller's main module: ``worker_context()`` is a spawn context whose processes are launched
while ``__main__`` is a bare module (no path, no module name), so the child has no main
module to run.  The swap lasts the launch only (the parent's ``Process.start``).
"""

from __future__ import annotations

import multiprocessing
import sys
import types

_SPAWN = multiprocessing.get_context("spawn")


class _Process(_SPAWN.Process):  # type: ignore[misc,name-defined]
    def start(self) -> None:
        real = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            super().start()
        finally:
            if real is None:
                sys.modules.pop("__main__", None)
            else:
                sys.modules["__main__"] = real


class _Context(type(_SPAWN)):  # type: ignore[misc]
    Process = _Process


def worker_context() -> multiprocessing.context.BaseContext:
    """A spawn context (``multiprocessing.get_context("spawn")``'s queues, pools, barriers)
    whose processes do not run the caller's main module."""
    return _Context()
