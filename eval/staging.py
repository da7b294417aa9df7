"""The staging folders of batches (``<runs dir>/.incomplete/<batch id>/``): who owns one,
and pruning those whose batch is gone (``memo eval cache --prune``).

A batch writes its runs into its staging folder and renames each into the runs dir once
whole (``memo_eval.traces``); at its end, Ctrl-C included, it removes the folder.  A batch
killed outright (``kill -9``, the OOM killer, a power cut) leaves it behind.

**Who owns a folder: a lock, not a pid.**  A batch makes its folder, creates
``<folder>/.lock`` in it and holds an exclusive ``flock`` on that file for as long as it
writes (``claim``).  The kernel drops the lock when the process ends, however it ends, so
"the lock is held" means "a live process is writing this batch".  A pid written into the
folder would be wrong both ways: a dead batch's pid is reused by an unrelated process (kept
forever), and a pid from another host sharing the runs dir, or from another pid namespace
(a container), looks dead while its batch is alive (deleted under it).  ``flock`` rather
than ``fcntl``/``lockf`` record locks: those belong to the process, so a prune run by the
process that owns a batch would be granted the lock, and closing its descriptor would drop
the batch's own lock; a ``flock`` belongs to the open file, and a second open of it, in the
same process or not, sees it held.  The pid and host written into the lock file are for
people only (``memo eval cache -v``), never trusted.  Workers are spawned and the
descriptor is close-on-exec: only the batch's own process holds it.

``scan`` sorts each folder of ``.incomplete`` into:

* ``live``: its lock is held.  Kept.
* ``abandoned``: its lock is free (its batch is gone), or it has no lock file (left by a
  harness older than this lock) and nothing in it changed for ``UNOWNED_AGE_S`` (7 days:
  such a harness stages a run when it finishes and publishes it when the batch ends, so a
  live batch of it touches its folder far more often).  Pruned.
* ``unowned``: no lock file, changed within ``UNOWNED_AGE_S`` (an older harness's batch
  that may be running; or a batch between making its folder and its lock).  Kept.

A prune takes the lock (never waiting) before it deletes and checks that the file it locked
is still the one at ``.lock``; a batch that finds, once it holds the lock, that its
``.lock`` was deleted under it (a prune got there between its ``open`` and its ``flock``)
makes the folder and the lock again.  So a prune never deletes a folder whose batch holds
its lock, and a batch never writes into a folder without holding it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

STAGING = ".incomplete"     # <runs dir>/.incomplete/<batch id>/<run id>: runs being written
LOCK = ".lock"              # <runs dir>/.incomplete/<batch id>/.lock: flock-held by the batch
UNOWNED_AGE_S = 7 * 24 * 3600
STATUSES = ("live", "abandoned", "unowned")


@dataclass(slots=True)
class BatchLock:
    """The lock a batch holds on its staging folder (``claim``) until ``release``."""

    folder: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)                 # closing the last descriptor drops the flock


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    own = os.fstat(fd)
    return (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino)


def claim(folder: Path, attempts: int = 50) -> BatchLock:
    """Make ``folder`` (a batch's staging folder) and hold the lock on its ``.lock``."""
    for _ in range(attempts):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            continue                     # a prune removed the folder just made: again
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)   # only a prune holds it, for as long as it deletes
            if _same_file(fd, folder / LOCK):
                os.ftruncate(fd, 0)
                os.write(fd, f"pid {os.getpid()} host {socket.gethostname()} since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode())
                return BatchLock(folder, fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)                     # the file locked was unlinked by a prune: again
    raise OSError(f"could not lock the staging folder {folder}")


def _walk(folder: Path) -> tuple[int, float]:
    """Bytes of the files under ``folder`` and the newest mtime in it (the folder's own too)."""
    size, newest = 0, 0.0
    with contextlib.suppress(OSError):
        newest = folder.lstat().st_mtime
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue                 # removed while we looked
            newest = max(newest, st.st_mtime)
            if name in filenames:
                size += st.st_size
    return size, newest


@dataclass(frozen=True, slots=True)
class StagedBatch:
    batch_id: str
    status: str          # one of STATUSES
    bytes: int
    owner: str | None    # what the lock file says (pid, host, since), for people
    path: Path


def _lock_state(folder: Path) -> tuple[bool | None, str | None]:
    """(held, owner text): held is None when the folder has no lock file."""
    try:
        fd = os.open(folder / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError:
        return True, None                # cannot look: keep it
    try:
        owner = os.read(fd, 200).decode(errors="replace").strip() or None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, owner
        except OSError:
            return True, owner           # no locks on this file system: keep it
        return False, owner
    finally:
        os.close(fd)


def scan(runs_dir: Path, now: float | None = None) -> list[StagedBatch]:
    """Every batch folder under ``<runs_dir>/.incomplete``, sorted by batch id."""
    root = runs_dir / STAGING
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []                        # none, or not ours to read
    now = time.time() if now is None else now
    out: list[StagedBatch] = []
    for folder in folders:
        held, owner = _lock_state(folder)
        size, newest = _walk(folder)
        if held:
            status = "live"
        elif held is False or now - newest >= UNOWNED_AGE_S:
            status = "abandoned"
        else:
            status = "unowned"
        out.append(StagedBatch(folder.name, status, size, owner, folder))
    return out


def _remove_abandoned(batch: StagedBatch, now: float) -> bool:
    """Delete one abandoned batch folder, after taking its lock (or, without a lock file,
    after seeing it still old); False when it turned out live or is already gone."""
    folder = batch.path
    try:
        # read-write: a flock over NFS is a write lock there, refused on a read-only descriptor
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        if (folder / LOCK).exists() or not folder.is_dir() or now - _walk(folder)[1] < UNOWNED_AGE_S:
            return False                 # a lock appeared, the folder went, or it changed
        shutil.rmtree(folder, ignore_errors=True)
        return not folder.exists()
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False                 # held (the batch is alive), or no locks here
        if not _same_file(fd, folder / LOCK):
            return False                 # replaced since we opened it: its batch's now
        # Deleted with the lock held: a batch claiming this folder meanwhile waits, then
        # sees its lock file gone and makes the folder again.
        shutil.rmtree(folder, ignore_errors=True)
        return not folder.exists()
    finally:
        os.close(fd)


def prune(runs_dir: Path, batches: list[StagedBatch] | None = None,
          now: float | None = None) -> list[StagedBatch]:
    """Delete the abandoned batch folders (of ``batches`` when a caller has just scanned,
    else of a fresh ``scan``), and ``.incomplete`` once empty; the batches deleted."""
    now = time.time() if now is None else now
    found = scan(runs_dir, now) if batches is None else batches
    gone = [b for b in found if b.status == "abandoned" and _remove_abandoned(b, now)]
    with contextlib.suppress(OSError):
        (runs_dir / STAGING).rmdir()
    return gone
