"""After a folder import: find the live records of files that are gone, and (``--prune``)
forget them.

A record belongs to the folder when it was imported from a file under it: same namespace,
no external id (data set records are addressed by id, not by file; so are chat export
conversations, whose current version may live at another export's path:
memo.ops.chat_versions) and an import path under ``<absolute root>/``.  It is *missing* when this run's walk did not list its file,
the file is not on disk either, and no file of this run had the same text.

* The disk check keeps records the walk skips on purpose (a file in ``.git`` or another
  hidden folder imported on its own) and JSONL lines (``<file>.jsonl:<line>``) whose
  file is still there.
* The same-text rule keeps a renamed file's record: its new path is skipped as a
  duplicate of that record, so forgetting it would leave the text with no live record.
* Records imported by versions that stored paths relative to the root never start with
  the absolute prefix, so they are never counted as missing (nothing of theirs is pruned).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path

from memo.errors import ValidationError
from memo.ops.guard import store_errors
from memo.ops.records import forget_rows
from memo.store.connect import write_tx
from memo.store.records import utc_now

_JSONL_LINE = re.compile(r"(.+):(\d+)")


@dataclass(frozen=True, slots=True)
class Missing:
    paths: tuple[str, ...]            # relative to the root, sorted, one per file
    pruned: int                       # records forgotten (0 unless prune)


def folder_prefix(root: Path) -> str:
    """'<absolute root>/': the trailing slash keeps a sibling such as 'docs2' out of 'docs'."""
    return root.as_posix().rstrip("/") + "/"


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


def _still_there(path: str, seen: Set[str]) -> bool:
    if path in seen or os.path.lexists(path):
        return True
    m = _JSONL_LINE.fullmatch(path)
    return m is not None and (m[1] in seen or os.path.lexists(m[1]))


def _missing_rows(conn: sqlite3.Connection, namespace: str, prefix: str, seen: Set[str],
                  matched: Set[str]) -> list[sqlite3.Row]:
    return [r for r in _under(conn, namespace, prefix)
            if r["import_path"].startswith(prefix) and r["id"] not in matched
            and not _still_there(r["import_path"], seen)]


def _report(rows: list[sqlite3.Row], prefix: str, pruned: int) -> Missing:
    rels = sorted({r["import_path"][len(prefix):] for r in rows})
    return Missing(paths=tuple(rels), pruned=pruned)


@store_errors("checking for deleted files")
def check_missing(conn: sqlite3.Connection, namespace: str, root: Path, seen: Set[str],
                  matched: Set[str] = frozenset(), *, prune: bool) -> Missing:
    """``seen``: absolute POSIX paths of every file the walk listed (imported, skipped,
    rejected or ignored: all still exist); ``matched``: ids of records a skipped file
    duplicated (their text is still in the folder).  Call only after the whole walk succeeded and
    the last batch committed, so an incomplete run never forgets anything."""
    prefix = folder_prefix(root)
    if not prune:
        return _report(_missing_rows(conn, namespace, prefix, seen, matched), prefix, 0)
    if not seen:
        # An empty listing is more often an unmounted share or a wrong path than a folder
        # whose every file was deleted: never forget a whole folder on that evidence.
        gone = _missing_rows(conn, namespace, prefix, seen, matched)
        if gone:
            raise ValidationError(
                f"{root} lists no files; refusing to --prune all {len(gone)} records imported from it",
                hint="check that the folder is there (mounted?); to drop them on purpose use `memo forget`")
    # Found again under the write lock: a concurrent import may have superseded or
    # forgotten one of them since, and forget_rows must only touch live rows.
    with write_tx(conn):
        rows = _missing_rows(conn, namespace, prefix, seen, matched)
        done, _ = forget_rows(conn, tuple(r["id"] for r in rows), utc_now())
    return _report(rows, prefix, len(done))
