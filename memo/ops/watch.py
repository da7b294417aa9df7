"""Keep a folder imported as it changes (``memo import FOLDER --watch``): a notes vault, a
docs checkout, a folder an agent writes to, searchable as it is now without running the
import by hand after every edit.

The watch polls: every ``interval`` seconds it lists the folder as the import walks it (the
same hidden, tool-folder and ``--exclude`` rules) and compares each file's size and
modification time with the last listing.  Only when something changed does it import:

* files added or changed, none gone: those files alone, each imported as the folder import
  reads it (``--format files``: a ``.jsonl`` in the folder stays a file the folder import
  ignores), so a folder of PDFs is not read again for one edited note;
* a file gone (deleted, renamed, moved): the whole folder again, so every rule of a folder
  import holds as it does by hand: a moved file takes its record along, a deleted or emptied
  one is reported (forgotten with ``--prune``).

Polling needs no platform API and sees network and synced folders, where change
notifications are unreliable; listing 10,000 files takes ~0.05 s.

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

from memo.errors import ValidationError
from memo.ingest.files import list_files
from memo.ops.importer import ImportOptions, import_path, input_format
from memo.ops.reports import ImportReport

# Seconds between two listings by default, and the bounds ``--interval`` may take.
DEFAULT_INTERVAL = 2.0
MIN_INTERVAL, MAX_INTERVAL = 0.1, 3600.0

Listing = dict[str, tuple[int, int]]     # relative path -> (size, mtime in ns)


@dataclass(frozen=True, slots=True)
class Waiting:
    """Why a changed listing did not run an import: ``gone`` or ``empty`` (module docstring)."""

    state: str
    path: str


def listing(real: Path, exclude: tuple[str, ...] = ()) -> Listing | None:
    """Size and modification time of each file the import would read; None when ``real``
    is gone.  A file that vanishes between listing and stat is left out."""
    if not real.exists():
        return None
    if real.is_file():
        files = [(real, real.name)]
    else:
        files = list_files(real, [], [], exclude)
    out: Listing = {}
    for path, rel in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def watch(conn: sqlite3.Connection, path: str | Path, opts: ImportOptions, *,
          interval: float = DEFAULT_INTERVAL, stop: threading.Event,
          on_import: Callable[[ImportReport], None], on_change: Callable[[], None] | None = None,
          on_wait: Callable[[Waiting], None] | None = None) -> int:
    """Import ``path`` now, then again whenever its files change, until ``stop`` is set;
    ``on_change`` is called before each import, ``on_import`` with its report (the caller
    embeds and prints), ``on_wait`` each time the watch holds an import back (module
    docstring).  Returns the number of imports.  Only files and folders read as files can
    be watched (a JSONL or an export is imported once: ValidationError before any read)."""
    if not MIN_INTERVAL <= interval <= MAX_INTERVAL:
        raise ValidationError(f"--interval must be {MIN_INTERVAL} to {MAX_INTERVAL:g} seconds, got {interval:g}")
    real, fmt = input_format(path, opts)
    if fmt != "files":
        raise ValidationError(f"--watch follows files and folders; {real.name} is read as {fmt}, which is imported once",
                              hint="drop --watch")
    last = listing(real, opts.exclude)
    if on_change is not None:
        on_change()
    on_import(import_path(conn, real, opts))
    imports = 1
    held: str | None = None
    while not stop.wait(interval):
        now = listing(real, opts.exclude)
        if now == last:
            held = None
            continue
        state = "gone" if now is None else "empty" if not now and last else None
        if state is not None:
            if held != state and on_wait is not None:
                on_wait(Waiting(state, str(real)))
            held = state
            continue              # the last listing stays the one to compare with
        held = None
        changed = sorted(rel for rel, seen in now.items() if last.get(rel) != seen)
        # A file gone, or emptied (its record is reported, and forgotten with --prune): the folder.
        whole = real.is_file() or any(rel not in now for rel in last) or any(now[rel][0] == 0 for rel in changed)
        last = now
        one = replace(opts, format="files", prune=False)
        for target, how in ([(real, opts)] if whole else [(real / rel, one) for rel in changed]):
            if on_change is not None:
                on_change()
            on_import(import_path(conn, target, how))
            imports += 1
    return imports
