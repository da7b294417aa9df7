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

from memo.search_api import search  # noqa: E402

__version__ = "0.1.0"
__all__ = ["search", "__version__"]
