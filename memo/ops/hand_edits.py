"""A version of an imported file written by hand (``memo supersede`` / ``memory_supersede``),
and what importing the file again does to it.

An import supersedes the current record at a file's path whenever the file's text differs
from it, so re-importing an unchanged folder silently took back every correction made with
``memo supersede`` since: the file's text (the version the correction replaced) became
current again.  A version written by hand is marked in its meta (``HAND_EDIT``), and an
import of its file

* keeps it when the file still holds the text the correction replaced (the file has not
  changed since it was imported): skipped, with a note saying how to take the file's text;
* supersedes it when the file changed since (the file is newer than the correction), with a
  note naming the hand-written version, which stays in the history (``--as-of``).
"""

from __future__ import annotations

import sqlite3

from memo.ops.chat_versions import meta_of

# The meta key and value of a version written by hand over a record imported from a file.
HAND_EDIT_KEY = "written_by"
HAND_EDIT = "supersede"
_MAX_CHAIN = 64     # hand edits in a row followed back to the imported version


def hand_edit_meta(meta: dict[str, object], import_path: str | None) -> dict[str, object]:
    """The meta of a version written by hand over a record with ``meta``: marked when the
    record came from a file (``import_path``), unchanged otherwise."""
    if not import_path:
        return meta
    return {**meta, HAND_EDIT_KEY: HAND_EDIT}


def _is_hand_edit(meta: object) -> bool:
    return (meta_of(meta) or {}).get(HAND_EDIT_KEY) == HAND_EDIT


def imported_before(conn: sqlite3.Connection, record_id: str) -> tuple[str, str] | None:
    """When ``record_id`` was written by hand: (id, content hash) of the version an import
    wrote that the hand edits replaced (followed back through hand edits in a row), else None."""
    row = conn.execute("SELECT meta FROM records WHERE id = ?", (record_id,)).fetchone()
    if row is None or not _is_hand_edit(row[0]):
        return None
    current = record_id
    for _ in range(_MAX_CHAIN):
        prev = conn.execute("SELECT id, content_hash, meta FROM records WHERE superseded_by = ? "
                            "ORDER BY recorded_at DESC LIMIT 1", (current,)).fetchone()
        if prev is None:
            return None
        if not _is_hand_edit(prev[2]):
            return prev[0], prev[1]
        current = prev[0]
    return None


def kept_note(edited: str, path: str) -> str:
    return (f"kept {edited}, written with `memo supersede` after {path} was imported; the file has not "
            f"changed since. To take the file's text, `memo forget {edited}` and import it again")


def replaced_note(edited: str) -> str:
    return (f"the file changed since {edited} was written with `memo supersede`: the file's text is "
            f"current now, the hand-written version stays in the history (--as-of)")
