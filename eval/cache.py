"""Where the harness keeps what it builds (indexes, vectors, query vectors, fetched data
sets: ``cache_root``) and the traces of its runs (``default_runs_dir``).

Never the current directory (issue 32.5: a user's working directory is not littered):

1. ``$MEMO_CACHE/eval`` when ``MEMO_CACHE`` is set (runs: ``$MEMO_EVAL_RUNS``), as CI's
   nightly job and the tests set them;
2. else, when the harness runs from a repository checkout (``memo_eval`` imported from
   ``<checkout>/eval``, ``pip install -e ./eval``), that checkout's own ``.cache/memo-eval``
   and ``runs/`` (both gitignored): scripts/test.sh, CI's cache of ``.cache/memo-eval`` and
   the nightly report read them there.  Anchored at the checkout, wherever the command is
   run from;
3. else (an installed harness) the user cache dir: ``platformdirs.user_cache_dir("memo-eval")``
   (``$XDG_CACHE_HOME/memo-eval``, ``~/.cache/memo-eval`` on Linux), runs in its ``runs/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "memo-eval"


def checkout_root() -> Path | None:
    """The repository checkout the harness is imported from, or None (an installed wheel:
    ``site-packages/memo_eval`` has no ``pyproject.toml`` beside memo's)."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "eval" / "pyproject.toml").is_file() \
            and (root / "memo").is_dir():
        return root
    return None


def user_dir() -> Path:
    """``platformdirs.user_cache_dir("memo-eval")``: the harness's folder outside a checkout."""
    return Path(platformdirs.user_cache_dir(APP))


def cache_root() -> Path:
    env = os.environ.get("MEMO_CACHE")
    if env:
        return Path(env).expanduser() / "eval"
    root = checkout_root()
    return root / ".cache" / APP if root is not None else user_dir()


def default_runs_dir() -> Path:
    """Where runs go without ``--runs-dir``: ``$MEMO_EVAL_RUNS``, else the checkout's
    ``runs/``, else the user cache dir's ``runs/``."""
    env = os.environ.get("MEMO_EVAL_RUNS")
    if env:
        return Path(env).expanduser()
    root = checkout_root()
    return root / "runs" if root is not None else user_dir() / "runs"
