"""Keep a folder imported as it changes (``memo import FOLDER --watch``): a notes vault, a
docs checkout, a folder an agent writes to, searchable as it is now without running the
import by hand after every edit.

The watch polls: every ``interval`` seconds it lists the folder as the import walks it (the
same hidden, tool-folder and ``--exclude`` rules) and compares each file's size and
modification time with the last listing.  Only when something changed does it import:

* files added or changed, none gone: those files alone, read as the folder import reads them
  (its symlink and type rules: a link out of the folder is refused, a ``.jsonl`` stays a
  file it ignores), so a folder of PDFs is not read again for one edited note;
* a file gone (deleted, renamed, moved): the whole folder again, so every rule of a folder
  import holds as it does by hand: a moved file takes its record along, a deleted or emptied
  one is reported (forgotten with ``--prune``).

A change is imported once the folder held still for one look (a save that empties a file
and writes it again is seen whole), or after ``SETTLE_MAX`` looks of changes.  Polling needs
no platform API and sees network and synced folders, where change notifications are
unreliable; listing 10,000 files takes ~0.05 s.

Two states of the folder never run an import, because an import with ``--prune`` would
forget every record of it: the folder gone (an unmounted disk, a renamed vault) and a
folder that listed files before and lists none now (a mount point without its disk, a sync
tool between two states).  The watch says so once and waits for the files to come back.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from memo.errors import StoreBusy, ValidationError
from memo.ingest.files import kind_for, list_files
from memo.ops.importer import ImportOptions, import_path, input_format
from memo.ops.reports import ImportReport

# Seconds between two listings by default, and the bounds ``--interval`` may take.
DEFAULT_INTERVAL = 2.0
MIN_INTERVAL, MAX_INTERVAL = 0.1, 3600.0
# A change is imported when the listing held still for one interval, or after this many
# intervals of changes (a file written to without a pause).
SETTLE_MAX = 10

Listing = dict[str, tuple[int, int]]     # relative path -> (size, mtime in ns)


@dataclass(frozen=True, slots=True)
class Waiting:
    """Why a change was not imported (yet): ``gone`` or ``empty`` (module docstring; ``detail``
    the folder), or ``busy`` (the database's write lock; ``detail`` the error, tried again)."""

    state: str
    detail: str


def listing(real: Path, exclude: tuple[str, ...] = ()) -> Listing | None:
    """Size and modification time of each file the import would read (of a type it imports:
    a ``Thumbs.db`` left in an emptied folder does not make it look full); None when
    ``real`` is gone.  A file that vanishes between listing and stat is left out."""
    if not real.exists():
        return None
    if real.is_file():
        files = [(real, real.name)]
    else:
        files = list_files(real, [], [], exclude)
    out: Listing = {}
    for path, rel in files:
        if kind_for(path) is None:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def check(path: str | Path, opts: ImportOptions, interval: float) -> Path:
    """The watched path resolved, or ValidationError: an interval out of bounds, a path that
    is not files (a JSONL or an export is imported once), a path that does not exist."""
    if not MIN_INTERVAL <= interval <= MAX_INTERVAL:      # False for nan too
        raise ValidationError(f"--interval must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} seconds, got {interval:g}")
    real, fmt = input_format(path, opts)
    if fmt != "files":
        raise ValidationError(f"--watch follows files and folders; {real.name} is read as {fmt}, which is imported once",
                              hint="drop --watch")
    return real


def watch(conn: sqlite3.Connection, path: str | Path, opts: ImportOptions, *,
          interval: float = DEFAULT_INTERVAL, stop: threading.Event,
          on_import: Callable[[ImportReport], None], on_change: Callable[[], None] | None = None,
          on_wait: Callable[[Waiting], None] | None = None) -> int:
    """Import ``path`` now, then again whenever its files change, until ``stop`` is set;
    ``on_change`` is called before each import, ``on_import`` with its report (the caller
    embeds and prints), ``on_wait`` each time the watch holds an import back (module
    docstring).  Returns the number of imports.  ``check`` says what cannot be watched.

    A change is imported once the listing holds still for one interval (an editor's save
    that empties a file and writes it again, a file being copied in, is seen whole), or
    after ``SETTLE_MAX`` intervals of changes (a log written to without a pause is imported
    that often, not at every look).  An import the database's lock holds off (another
    process writing for longer than the busy timeout) is said and tried again at the next
    look."""
    real = check(path, opts, interval)
    imported = listing(real, opts.exclude)       # the folder as the last import saw it
    if on_change is not None:
        on_change()
    on_import(import_path(conn, real, opts))
    imports = 1
    held: str | None = None
    before = imported                           # the previous look
    unsettled = 0
    while not stop.wait(interval):
        now = listing(real, opts.exclude)
        if now == imported:
            held, before, unsettled = None, now, 0
            continue
        steady = now == before
        before = now
        unsettled += 1
        if not steady and unsettled < SETTLE_MAX:
            continue
        state = "gone" if now is None else "empty" if not now and imported else None
        if state is not None:
            if held != state and on_wait is not None:
                on_wait(Waiting(state, str(real)))
            held = state
            continue              # the folder as last imported stays the one to compare with
        assert now is not None and imported is not None
        changed = sorted(rel for rel, seen in now.items() if imported.get(rel) != seen)
        # A file gone, or emptied (its record is reported, and forgotten with --prune): the folder.
        whole = real.is_file() or any(rel not in now for rel in imported) or any(now[rel][0] == 0 for rel in changed)
        if on_change is not None:
            on_change()
        try:
            report = import_path(conn, real, opts if whole else replace(opts, prune=False, only=frozenset(changed)))
        except StoreBusy as exc:
            if on_wait is not None:
                on_wait(Waiting("busy", str(exc)))
            continue              # tried again at the next look
        except ValidationError:
            if real.exists():
                raise
            if on_wait is not None:             # gone between the look and the import
                on_wait(Waiting("gone", str(real)))
            held = "gone"
            continue
        held, imported, unsettled = None, now, 0
        on_import(report)
        imports += 1
    return imports
