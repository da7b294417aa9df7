"""memo: a local-first memory and knowledge base for AI agents.

The library is the product; the CLI (``memo``), the MCP server and the web UI are skins.
"""

import os as _os

# One BLAS thread per process: the semantic arm does one small (N x 384) mat-vec per
# query, where OpenBLAS's thread pool costs more than it saves (measured on 2 cores:
# docs/results-log.md "Search speed on SciFact").  Eval replay uses processes for parallelism.
# setdefault: a user who sets it explicitly wins.  Must run before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

# Before any memo module (or typer, which memo.cli imports) defines a dataclass: their
# methods' compiled code comes from a cache in memo's __pycache__ (memo/dc_code_cache.py).
from memo import dc_code_cache as _dc_code_cache  # noqa: E402

_dc_code_cache.install()

from memo.version import __version__  # noqa: E402

__all__ = ["search", "__version__"]


def __getattr__(name: str) -> object:
    # Load-time deferral (not a cycle): ``memo.search`` is the whole search pipeline
    # (memo.retrieve, its arms, prometheus), ~0.3 s of imports that every ``import memo.x``
    # paid before; memo-mcp imports memo modules before it answers ``initialize`` and must
    # not (issue 31.2).  ``memo.search`` and ``from memo import search`` load it on first use.
    if name == "search":
        from memo.search_api import search
        return search
    raise AttributeError(f"module 'memo' has no attribute {name!r}")
