"""Temporary files of backups and restores, and the ones a killed run leaves behind.

``memo backup`` and ``memo restore`` write their copy under a hidden private name beside
its destination (``temp_path_beside``: ``.<name>.<tag>-<pid>-<8 hex>``, plus SQLite's and
memo's sidecar files) and remove it in a ``finally``.  A process killed with SIGKILL (or a
power cut) never runs that ``finally``: the copy, as large as the database, stayed there,
and nothing cleaned or reported it (issue 33.5).  Now:

* the next backup (in its destination's folder) and the next restore (in the database's
  folder) remove the leftovers of processes that are gone (``clean_leftovers``);
* ``memo doctor`` lists those in the database's folder with the command that removes them
  (``doctor_notes``).

A file whose process is still running is never touched: that backup or restore is in
progress.  The process is looked up by the pid in the name, on this machine; a pid reused
since by another process only makes a leftover wait for a later run.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
from pathlib import Path

from memo.store.write_queue import SUFFIX as WRITER_LOCK_SUFFIX

SIDECARS = ("-wal", "-shm", "-journal")                # SQLite's own files beside a database
DB_FILES = (*SIDECARS, WRITER_LOCK_SUFFIX)              # ... and memo's writers' queue lock
TEMP_TAGS = ("backup", "restore", "safety", "export")  # safety: restore's snapshot of the live file; export: memo export's file

_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.(?P<tag>{tags})-(?P<pid>[0-9]{{1,10}})-[0-9a-f]{{8}}(?:{sidecars})?".format(
    tags="|".join(TEMP_TAGS), sidecars="|".join(re.escape(s) for s in DB_FILES)))


def temp_path_beside(target: Path, tag: str) -> Path:
    """A fresh hidden name in ``target``'s folder (same file system: os.replace is atomic).
    ``tag`` is one of ``TEMP_TAGS`` (a name ``clean_leftovers`` recognises)."""
    return target.with_name(f".{target.name}.{tag}-{os.getpid()}-{secrets.token_hex(4)}")


def pid_alive(pid: int) -> bool:
    """True unless no process ``pid`` exists here (a process of another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # EPERM: it exists, owned by someone else; anything else: assume alive
        return True
    return True


def leftovers(folder: Path) -> list[Path]:
    """Temporary files of backups and restores in ``folder`` whose process is gone, sorted."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        m = _TEMP_NAME.fullmatch(name)
        if m is not None and int(m["pid"]) != os.getpid() and not pid_alive(int(m["pid"])):
            found.append(folder / name)
    return sorted(found)


def clean_leftovers(folder: Path) -> list[Path]:
    """Remove ``leftovers(folder)``; never raises (a file that cannot be removed stays, and
    ``memo doctor`` keeps listing it).  Returns what was removed."""
    removed = []
    for path in leftovers(folder):
        try:
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed


def doctor_notes(db_path: Path) -> list[tuple[str, str]]:
    """(problem, action) for ``memo doctor``: the leftovers beside the database, if any."""
    found = leftovers(db_path.absolute().parent)
    if not found:
        return []
    size = 0
    for p in found:
        try:
            size += p.stat().st_size
        except OSError:
            pass
    names = ", ".join(p.name for p in found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [(f"{len(found)} temporary file(s) left by a killed backup or restore ({size:,} bytes): {names}",
             "rm -f -- " + " ".join(shlex.quote(str(p)) for p in found)
             + "  (or run any `memo backup` / `memo restore`, which removes them)")]
