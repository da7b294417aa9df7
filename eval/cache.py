"""Where the harness keeps what it builds: ``$MEMO_CACHE/eval`` if set, else
``./.cache/memo-eval`` (indexes, vectors, query vectors, fetched data sets)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("MEMO_CACHE")
    return Path(env).expanduser() / "eval" if env else Path.cwd() / ".cache" / "memo-eval"
