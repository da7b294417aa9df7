"""Keyword arm: FTS5 bm25 over ``passages_fts`` (text and its section header, Porter stemmer).

``raw`` = -bm25 so that higher is better (FTS5's bm25() is negative, best = most negative).
The scope filter sits in the same query, before ``LIMIT fetch_depth`` (seed section 1).
From ``index.impact_min_passages`` passages on, the persistent keyword postings
(``memo.retrieve.kw_search``, current after every write) or, without them, the in-memory
impact index (``memo.retrieve.impact``) answer instead with the same ranking
(``memo.retrieve.backend_sqlite`` decides), and below that count a current in-memory index
the process already holds (the eval's workers build one).  On PostgreSQL the same bm25 over postings tables (``memo.retrieve.backend``).
"""

from __future__ import annotations

from typing import Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence, default_weigh
from memo.retrieve.backend import backend_of
from memo.text.fts_query import keyword_match, query_words


class KeywordArm:
    name = "keyword"
    evidence = frozenset({"lexical"})
    reads = ("retrieve.fetch_depth", "retrieve.keyword_section_weight")
    needs_model = False
    after: tuple[ArmName, ...] = ()

    def weigh(self, ev: Any) -> VoteEvidence:
        return default_weigh(self.evidence, ev)

    def plan(self, ctx: ArmContext) -> ArmPlan:
        if ctx.mode == "semantic":
            return ArmPlan(runs=False, reason="mode semantic")
        # Seed section 2: keyword runs always, except in mode semantic (mode exact too).
        return ArmPlan(runs=True, reason=f"mode {ctx.mode}")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        match = keyword_match(ctx.query)            # raises QuerySyntaxError for a query without words
        return backend_of(ctx.conn).text_topk(ctx, "passages_fts", match, query_words(ctx.query))
