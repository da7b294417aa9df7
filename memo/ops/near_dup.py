"""Near-identical records at write time (issue 32.5): the same note with small edits, the
same statement added twice by an agent in other words of the same sentence.

An exact duplicate (same text in the namespace) is already skipped by the dedup index
(``memo.store.records.find_live_duplicate``).  This looks further, before the write
transaction and with reads only:

1. candidates: the keyword arm's own search (``memo.retrieve.search``, mode keyword) for
   the new text within its namespace, the best ``CANDIDATES`` live records;
2. similarity: ``difflib.SequenceMatcher.ratio`` over the two texts' folded words (the
   share of words the two have in the same order; one word changed in ten -> 0.9), on at
   most ``MAX_WORDS`` words of each;
3. the best candidate at or above the profile's ``index.near_min`` is the near
   duplicate.

What happens then is the profile's ``index.near_duplicates``:

* ``link`` (the default): the record is stored, and both the report and the new record's
  ``meta`` name the older one (``near_duplicate_of``, ``near_similarity``); nothing is
  lost and a reader can merge or forget either later;
* ``skip``: the record is not stored; the report says ``skipped``, names the record it is
  near-identical to and how to replace it (``memo supersede``) -- the caller is told, so
  nothing is lost silently;
* ``off``: no check.

Bulk imports are not checked (a file's identity is its import path, and a re-import
supersedes or skips by that rule); ``memo add``, MCP ``memory_add`` and the web UI are.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from memo.errors import MemoError
from memo.retrieve import SearchRequest
from memo.retrieve import search as run_search
from memo.types import RecordDraft, Scope

CANDIDATES = 5
MAX_WORDS = 2000
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class NearDuplicate:
    record_id: str
    similarity: float


def words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)][:MAX_WORDS]


def similarity(a: list[str], b: list[str], at_least: float = 0.0) -> float:
    """SequenceMatcher's ratio of two word lists; below ``at_least`` an upper bound of it
    may be returned instead (the cheap bounds rule most candidates out)."""
    if not a or not b:
        return 0.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for bound in (matcher.real_quick_ratio, matcher.quick_ratio):
        value = bound()
        if value < at_least:
            return value
    return matcher.ratio()


def find_near_duplicate(conn: sqlite3.Connection, draft: RecordDraft, threshold: float,
                        profile: Any = None) -> NearDuplicate | None:
    """The live record of ``draft``'s namespace most like it, if at least ``threshold``."""
    mine = words(draft.body)
    if not mine:
        return None
    try:
        resp = run_search(conn, SearchRequest(query=draft.body, mode="keyword", limit=CANDIDATES,
                                              scope=Scope(namespaces=(draft.namespace,))), profile=profile)
    except MemoError:
        return None                  # nothing searchable in the text: nothing to compare
    best: NearDuplicate | None = None
    for rid in dict.fromkeys(r.record_id for r in resp.results):
        row = conn.execute("SELECT body FROM records WHERE id = ?", (rid,)).fetchone()
        if row is None:
            continue
        score = similarity(mine, words(row[0]), threshold)
        if score >= threshold and (best is None or score > best.similarity):
            best = NearDuplicate(rid, round(score, 4))
    return best
