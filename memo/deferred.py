"""Imports a long-running server defers past its start-up, one thread at a time.

memo-mcp answers ``initialize`` before it imports the search pipeline, the write path, the
model's modules or the graph's (issue 31.2); they are imported afterwards by whichever
thread needs them first: the warm-up, the background embedder, or a tool call on one of the
SDK's worker threads.  Python's import system is thread-safe for one module, but a first
import of a package whose modules import each other (memo.retrieve and its arms, memo.ops)
running in two threads at once can hand one of them a partially initialised module
("cannot import name ... from partially initialized module") or a ``_DeadlockError``.
Every such deferred import therefore goes through ``load``, under one process-wide lock:
the second thread waits for the first import to finish, then finds the modules loaded.
"""

from __future__ import annotations

import importlib
import threading

_lock = threading.RLock()
_loaded: set[str] = set()     # imported through ``load`` and finished (sys.modules has a module
                              # from the moment its import starts, so it cannot tell)


def load(*names: str) -> None:
    """Import ``names`` (in order) unless ``load`` already did; one thread at a time."""
    if _loaded.issuperset(names):
        return
    with _lock:
        for name in names:
            if name not in _loaded:
                importlib.import_module(name)
                _loaded.add(name)
