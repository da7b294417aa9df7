"""What the harness's cache holds, and pruning what this code will never read again
(``memo eval cache [--prune]``).

The index cache is keyed by the code that builds an index (``memo_eval.index.index_suffix``):
every change to a splitter, the store or the importer builds a new one beside the old,
and a nightly job or a developer moving between commits piles them up (tens to hundreds
of MB each for SciFact or LoCoMo).  Each file of the cache root is one of:

* ``current``: an index this code reads (its name ends with ``index_suffix()``), the
  passage, fact and query vectors (content-addressed: a file is reused whenever the
  texts it was computed from come back, and they are small), fetched data sets.  Kept.
* ``stale``: an index built by other code or another schema, with its -wal, -shm and
  writer lock.  Pruned.

  memo's derived files beside a database (the mention graph's sidecar and its title and
  section indexes, ``<db>-graph*.bin``; vector sidecars, ``<db>-vectors-*.bin``) count
  with their database: current beside a current index, stale beside a stale one, and
  stale when the database itself is gone (nothing reads them again).
* ``orphan``: a build's temporary file (``<name>.tmp<pid>...``) whose process is gone
  (a crash or an interrupt mid-build).  Pruned.  One whose process is alive is
  ``building`` and kept.

Pruning never touches the current code's indexes.  An index that another checkout's
code is reading at that moment is stale to this code: prune when no other eval runs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from memo.embed import sidecar as vector_sidecar
from memo.graph import sidecar as graph_sidecar
from memo.ops.maintenance import DB_FILES  # the files SQLite and memo keep beside a database
from memo.store.temp_names import TEMP_PID
from memo_eval.cache import cache_root
from memo_eval.index import index_suffix

_TMP = re.compile(r"\.tmp(\d+)")
STATUSES = ("current", "stale", "orphan", "building")


@dataclass(frozen=True, slots=True)
class CacheEntry:
    kind: str            # the cache folder: index, vectors, queries, datasets, ...
    name: str            # path relative to the cache root (a database's sidecars are counted in)
    status: str          # one of STATUSES
    bytes: int
    files: tuple[Path, ...]


def _size(files: list[Path]) -> int:
    total = 0
    for f in files:
        try:
            total += sum(p.stat().st_size for p in f.rglob("*") if p.is_file()) if f.is_dir() else f.stat().st_size
        except OSError:
            pass   # removed while we looked
    return total


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True    # someone else's live process
    return True


def _derived_names() -> tuple[re.Pattern[str], ...]:
    """The names memo gives the files it derives from a database, as patterns capturing the
    database's name.  Built from memo's own naming functions (a placeholder database and
    subject name in, the file name out), so the pattern lives in memo alone."""
    db, any_name = "\x00", "\x01"          # no file name holds either
    made = (graph_sidecar.sidecar_path(db), graph_sidecar.subject_path(db, any_name),
            vector_sidecar.sidecar_path(db, any_name))
    return tuple(re.compile(re.escape(p.name).replace(re.escape(db), "(.+)").replace(re.escape(any_name), "[^/]+"))
                 for p in made)


_DERIVED = _derived_names()


def _main_name(name: str) -> str:
    """A database's name without its sidecar suffix (``x.db-wal`` -> ``x.db``,
    ``x.db-graph-titles.bin`` -> ``x.db``)."""
    for side in DB_FILES:
        if name.endswith(side):
            return name[: -len(side)]
    for pattern in _DERIVED:
        m = pattern.fullmatch(name)
        if m is not None:
            return m.group(1)
    return name


def scan(root: Path | None = None) -> list[CacheEntry]:
    """Every entry of the cache, sorted by kind and name (a database with its sidecars is one)."""
    root = root or cache_root()
    if not root.is_dir():
        return []
    suffix = index_suffix()
    out: list[CacheEntry] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        groups: dict[str, list[Path]] = {}
        for f in sorted(folder.iterdir()):
            groups.setdefault(_main_name(f.name) if folder.name == "index" else f.name, []).append(f)
        for name, files in groups.items():
            tmp = _TMP.search(name) or TEMP_PID.search(name)    # a build's, or a sidecar's being written
            if tmp:
                status = "building" if _alive(int(tmp.group(1))) else "orphan"
            elif folder.name == "index":
                # without the database itself, its sidecars are never read again
                status = "current" if name.endswith(suffix) and folder / name in files else "stale"
            else:
                status = "current"
            out.append(CacheEntry(folder.name, f"{folder.name}/{name}", status, _size(files), tuple(files)))
    return out


def prune(root: Path | None = None, entries: list[CacheEntry] | None = None) -> list[CacheEntry]:
    """Delete the stale and orphan entries (of ``entries`` when a caller has just scanned,
    else of a fresh ``scan``); the entries deleted."""
    gone = [e for e in (scan(root) if entries is None else entries) if e.status in ("stale", "orphan")]
    for e in gone:
        for f in e.files:
            if f.is_file() or f.is_symlink():
                f.unlink(missing_ok=True)
    return gone


def summary(entries: list[CacheEntry]) -> dict[str, dict[str, int]]:
    """Per status: how many entries and their bytes."""
    out = {s: {"entries": 0, "bytes": 0} for s in STATUSES}
    for e in entries:
        out[e.status]["entries"] += 1
        out[e.status]["bytes"] += e.bytes
    return out
