"""Near-identical records at write time (issue 32.5): the same note with small edits, the
same statement added twice by an agent in other words of the same sentence.

An exact duplicate (same text in the namespace) is already skipped by the dedup index
(``memo.store.records.find_live_duplicate``).  This looks further, before the write
transaction and with reads only:

1. candidates: the keyword arm alone (``memo.retrieve.arms.keyword``: bm25 over the
   keyword index, the scope filter inside the query) for the new text within its
   namespace, in one read snapshot: the best ``CANDIDATES`` live records.  Not the whole
   pipeline: its fact arm reads every evidence row of the facts a text matches (100 facts
   citing 1,000 passages each made an add take 266 ms instead of 12);
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
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import read_tx
from memo.text.limits import clip_query
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
    scope = Scope(namespaces=(draft.namespace,))
    ctx = ArmContext(conn=conn, query=clip_query(draft.body), mode="keyword", scope_sql=build_scope_sql(scope),
                     fetch_depth=CANDIDATES * 4, scope=scope, profile=profile)
    best: NearDuplicate | None = None
    try:
        with read_tx(conn):
            hits = KeywordArm().run(ctx)
            order = {h.pk: i for i, h in enumerate(hits)}
            rows = conn.execute(
                "SELECT p.pk, r.id, r.body FROM passages p JOIN records r ON r.id = p.record_id "
                f"WHERE p.pk IN ({','.join('?' * len(order))})", tuple(order)).fetchall() if order else []
    except MemoError:
        return None                  # nothing searchable in the text: nothing to compare
    bodies: dict[str, str] = {}
    for _pk, rid, body in sorted(rows, key=lambda r: order[r[0]]):
        if rid not in bodies and len(bodies) < CANDIDATES:
            bodies[rid] = body
    for rid, body in bodies.items():
        score = similarity(mine, words(body), threshold)
        if score >= threshold and (best is None or score > best.similarity):
            best = NearDuplicate(rid, round(score, 4))
    return best
