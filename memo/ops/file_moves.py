"""Which records of an imported folder have lost their file, and the rule that makes a
record follow its text when the file was renamed or moved inside the folder, or the whole
folder was moved.

A record belongs to the folder when it was imported from a file under it: no external id
(data set records and chat export conversations are addressed by id, not by file) and an
import path under ``<absolute root>/``.  Its file is **gone** when this run's walk did not
list it and it is not on disk either (``Walked.gone``: the one test, used by the import's
decisions here and by ``memo.ops.import_missing``'s report of deleted files).

**Moved** (``memo.ops.store_batch.store_items`` and ``memo.ops.add.store_draft`` both ask
``Walked.gone``): a file of the walk whose text is that of a live record of the namespace
whose file is gone (the folder's, or one under another folder no longer on disk: the vault
was moved to a new place) is that file renamed or moved, so its draft becomes the record's new
version ('updated': the new import path and title, a code file's sections split anew from
its new module name; facts citing its passages follow, ``memo.store.facts.carry_evidence``)
instead of being skipped as a duplicate of a record that names a deleted file.  A record
whose file is still there (two identical files) is not moved: the file is skipped as a
duplicate as before.  The walk's listing is complete before the first record is stored, so
the decision does not depend on the batch size or the order files are stored in; a walk
that could not list a folder is not trusted to say what is gone, and moves nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path

_JSONL_LINE = re.compile(r"(.+):(\d+)")


def folder_prefix(root: Path) -> str:
    """'<absolute root>/': the trailing slash keeps a sibling such as 'docs2' out of 'docs'."""
    return root.as_posix().rstrip("/") + "/"


@dataclass(frozen=True, slots=True)
class Walked:
    """What a complete folder walk listed: its root's prefix and every file's absolute path."""

    prefix: str
    seen: Set[str]

    @classmethod
    def of(cls, root: Path, seen: Set[str]) -> Walked:
        return cls(folder_prefix(root), seen)

    def gone(self, import_path: str | None, ext_id: str | None) -> bool:
        """A record with this import path and external id came from a file that is gone:
        the folder's, not listed and not on disk; or another folder's (an absolute path
        outside this one), not on disk: the whole folder was moved or renamed, and its
        files' records follow them here.  The disk check keeps records the walk skips on
        purpose (a file in a hidden folder imported on its own) and JSONL lines
        (``<file>.jsonl:<line>``) whose file is still there."""
        if import_path is None or ext_id is not None:
            return False
        if not import_path.startswith(self.prefix) and not os.path.isabs(import_path):
            return False
        if import_path in self.seen or os.path.lexists(import_path):
            return False
        m = _JSONL_LINE.fullmatch(import_path)
        return m is None or not (m[1] in self.seen or os.path.lexists(m[1]))

    def rel(self, import_path: str) -> str:
        return import_path[len(self.prefix):] if import_path.startswith(self.prefix) else import_path

    def moved_note(self, old_id: str, old_path: str, previous: str | None) -> str:
        """The notice of an item that took over a moved file's record (``previous``: the
        record of another text at the item's own path, superseded too)."""
        note = (f"moved from {self.rel(old_path)}: the same text as record {old_id}, whose file is gone, "
                f"so this file's version supersedes it")
        if previous is not None:
            note += f"; it also supersedes {previous}, the earlier text at this path"
        return note
