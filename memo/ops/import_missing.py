"""After a folder import: find the live records of files that are gone or now empty, and
(``--prune``) forget them.

A record belongs to the folder, and its file is gone, as ``memo.ops.file_moves.Walked``
says (one test for this report and for the import's moves).  It is *missing* when its
file is gone and no file of this run was skipped as a duplicate of it.

* A renamed or moved file is no longer missing: the import moved its record to the new
  path (``memo.ops.file_moves``).  The same-text rule stays as a guard: a record that a
  skipped file duplicated is never forgotten, since it is the only live copy of that
  file's text.
* A file still there but **emptied** (or whitespace only: the walk ignores it, there is no
  text to import) whose path holds a live record is missing too, reason 'now empty': its
  old text would otherwise stay searchable under a file that no longer says it, with
  nothing to tell the user.  It is counted in ``paths`` (and forgotten with ``prune``) and
  named in ``emptied``, with a notice.  An empty file without a record (a package's empty
  ``__init__.py``) is only ignored, on every import, without a notice.  An emptied file
  whose record another file of the run duplicated keeps it (the same-text rule), with a
  notice naming that file.
* Records imported by versions that stored paths relative to the root never start with
  the absolute prefix, so they are never counted as missing (nothing of theirs is pruned).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from memo.errors import ValidationError
from memo.ops.file_moves import Walked
from memo.ops.guard import store_errors
from memo.ops.records import forget_rows
from memo.ops.reports import Rejection
from memo.store.connect import write_tx
from memo.store.records import utc_now


@dataclass(frozen=True, slots=True)
class Missing:
    paths: tuple[str, ...]            # relative to the root, sorted, one per file (deleted or now empty)
    pruned: int                       # records forgotten (0 unless prune)
    emptied: tuple[str, ...] = ()     # those of paths that are still there, now empty
    notices: tuple[Rejection, ...] = ()   # one per emptied file holding a live record


def _under(conn: sqlite3.Connection, namespace: str, prefix: str) -> list[sqlite3.Row]:
    # A half-open range instead of LIKE: paths may contain '%' and '_', and the range
    # can use the (namespace, import_path) index.  Every string that starts with
    # '<root>/' sorts at or after it and before '<root>0' ('0' is the byte after '/').
    upper = prefix[:-1] + "0"
    return conn.execute(
        """SELECT id, import_path FROM records
           WHERE namespace = ? AND import_path >= ? AND import_path < ?
             AND ext_id IS NULL AND superseded_at IS NULL AND forgotten_at IS NULL
           ORDER BY import_path, id""",
        (namespace, prefix, upper)).fetchall()


@dataclass(frozen=True, slots=True)
class _Found:
    gone: list[sqlite3.Row]           # file deleted
    emptied: list[sqlite3.Row]        # file now empty
    kept: list[sqlite3.Row]           # file now empty, its text in a skipped file (matched)


def _find(conn: sqlite3.Connection, namespace: str, walked: Walked, matched: Mapping[str, str],
          emptied: Set[str]) -> _Found:
    found = _Found([], [], [])
    for r in _under(conn, namespace, walked.prefix):
        if not r["import_path"].startswith(walked.prefix):
            continue
        if r["import_path"] in emptied:
            (found.kept if r["id"] in matched else found.emptied).append(r)
        elif r["id"] not in matched and walked.gone(r["import_path"], None):
            found.gone.append(r)
    return found


def _report(found: _Found, walked: Walked, matched: Mapping[str, str], pruned: int, *, prune: bool) -> Missing:
    rels = sorted({walked.rel(r["import_path"]) for r in (*found.gone, *found.emptied)})
    notices = []
    for r in found.emptied:
        rid = r["id"]
        what = (f"record {rid}, its old text, was forgotten (--prune; `memo purge` deletes it for good)" if prune
                else f"record {rid} still holds its old text, which stays searchable; "
                     f"`memo import --prune` forgets it")
        notices.append((walked.rel(r["import_path"]), f"now empty: {what}"))
    for r in found.kept:
        rid, other = r["id"], matched[r["id"]]
        notices.append((walked.rel(r["import_path"]),
                        f"now empty, but {other} has the same text (skipped as a duplicate of record {rid}), so "
                        f"{rid} stays live under this path; to store it from {other}, `memo forget {rid}` "
                        f"and import again"))
    return Missing(paths=tuple(rels), pruned=pruned,
                   emptied=tuple(sorted({walked.rel(r["import_path"]) for r in found.emptied})),
                   notices=tuple(Rejection(p, why) for p, why in sorted(notices)))


@store_errors("checking for deleted files")
def check_missing(conn: sqlite3.Connection, namespace: str, root: Path, seen: Set[str],
                  matched: Mapping[str, str] | None = None, emptied: Set[str] = frozenset(), *,
                  prune: bool) -> Missing:
    """``seen``: absolute POSIX paths of every file the walk listed (imported, skipped,
    rejected or ignored: all still exist); ``matched``: ids of records a skipped file
    duplicated (their text is still in the folder) -> that file's path relative to the
    root; ``emptied``: absolute paths of the listed files ignored as empty.  Call only after
    the whole walk succeeded and the last batch committed, so an incomplete run never
    forgets anything."""
    walked = Walked.of(root, seen)
    matched = matched or {}
    if not prune:
        return _report(_find(conn, namespace, walked, matched, emptied), walked, matched, 0, prune=False)
    if not seen:
        # An empty listing is more often an unmounted share or a wrong path than a folder
        # whose every file was deleted: never forget a whole folder on that evidence.
        gone = _find(conn, namespace, walked, matched, emptied).gone
        if gone:
            raise ValidationError(
                f"{root} lists no files; refusing to --prune all {len(gone)} records imported from it",
                hint="check that the folder is there (mounted?); to drop them on purpose use `memo forget`")
    # Found again under the write lock: a concurrent import may have superseded or
    # forgotten one of them since, and forget_rows must only touch live rows.
    with write_tx(conn):
        found = _find(conn, namespace, walked, matched, emptied)
        done, _ = forget_rows(conn, tuple(r["id"] for r in (*found.gone, *found.emptied)), utc_now())
    return _report(found, walked, matched, len(done), prune=True)
