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
   most ``MAX_WORDS`` words of each; each CJK character counts as a word;
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

Facts (``find_near_fact``): the same check on the live facts of the draft's namespace, with
the same keys.  The candidates are the fact keyword list (bm25 over the fact index, the
fact arm's first list); the measure is the same word-sequence ratio, on the fact's text
alone: the same fact restated with other evidence is still the same fact, and the report
says so (its evidence may be worth keeping: ``memo fact supersede`` the older one with
it).  Every surface that adds facts checks: ``memo fact add``, MCP ``memory_fact_add``
and fact imports (JSONL lines of type fact, LoCoMo observations), where a fact is also
compared with the facts added earlier in the same import.  An exact duplicate (same text
and evidence) is still skipped by the dedup index first.
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
from memo.retrieve.backend import backend_of
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import read_tx
from memo.stored import FactDraft, RecordDraft
from memo.text.cjk import CJK_CHARS, CJK_CLASS
from memo.text.fts_query import keyword_match
from memo.text.limits import clip_query
from memo.types import Scope

CANDIDATES = 5
MAX_WORDS = 2000
# A word: a run of letters and digits, except that each Chinese, Japanese or Korean
# character is a word of its own (those scripts write no spaces: a sentence would be one
# "word", and one character changed in it would make two notes share nothing).
_WORD = re.compile(f"{CJK_CLASS}|[^\\W{CJK_CHARS}]+", re.UNICODE)


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


def _keyword_context(conn: sqlite3.Connection, text: str, namespace: str, profile: Any) -> ArmContext:
    """A keyword search for ``text`` in its namespace: where notes and facts find candidates."""
    scope = Scope(namespaces=(namespace,))
    return ArmContext(conn=conn, query=clip_query(text), mode="keyword", scope_sql=build_scope_sql(scope),
                      fetch_depth=CANDIDATES * 4, scope=scope, profile=profile)


def find_near_duplicate(conn: sqlite3.Connection, draft: RecordDraft, threshold: float,
                        profile: Any = None) -> NearDuplicate | None:
    """The live record of ``draft``'s namespace most like it, if at least ``threshold``."""
    mine = words(draft.body)
    if not mine:
        return None
    ctx = _keyword_context(conn, draft.body, draft.namespace, profile)
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
    return best_of(mine, bodies.items(), threshold)


_LIVE_FACT = "f.namespace = ? AND f.forgotten_at IS NULL AND f.superseded_at IS NULL"


def find_near_fact(conn: sqlite3.Connection, draft: FactDraft, threshold: float,
                   profile: Any = None) -> NearDuplicate | None:
    """The live fact of ``draft``'s namespace most like it (``NearDuplicate.record_id`` is
    the fact id), if at least ``threshold``.  Reads only, in one snapshot."""
    mine = words(draft.text)
    if not mine:
        return None
    ctx = _keyword_context(conn, draft.text, draft.namespace, profile)
    try:
        match = keyword_match(draft.text)
        with read_tx(conn):
            hits = backend_of(conn).fact_text_topk(ctx, match, _LIVE_FACT, (draft.namespace,))[:CANDIDATES]
            pks = [pk for pk, _ in hits]
            rows = conn.execute(f"SELECT id, text FROM facts WHERE pk IN ({','.join('?' * len(pks))})",
                                tuple(pks)).fetchall() if pks else []
    except MemoError:
        return None                  # nothing searchable in the text: nothing to compare
    return best_of(mine, rows, threshold)


def best_of(mine: list[str], candidates: Any, threshold: float) -> NearDuplicate | None:
    """The (id, text) of ``candidates`` most like the words ``mine``, at least ``threshold``;
    ties: the first given."""
    best: NearDuplicate | None = None
    for cid, text in candidates:
        score = similarity(mine, words(text), threshold)
        if score >= threshold and (best is None or score > best.similarity):
            best = NearDuplicate(cid, round(score, 4))
    return best
