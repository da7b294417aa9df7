"""Exact arm: identifiers kept whole (``net/http``, ``ERR_CONN_RESET``, ``2.31.0``).

Runs for mode ``exact``, and in ``auto`` when the query looks like an identifier
(``memo.text.identifiers.query_looks_like_identifier``).  ``raw`` = -bm25 over ``exact_fts``.
"""

from __future__ import annotations

import functools
from typing import Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence, default_weigh
from memo.retrieve.backend import backend_of
from memo.text.fts_query import exact_match
from memo.text.identifiers import query_looks_like_identifier


class ExactArm:
    name = "exact"
    evidence = frozenset({"lexical"})
    reads = ("retrieve.fetch_depth", "exact.min_share")
    needs_model = False
    after: tuple[ArmName, ...] = ()

    def weigh(self, ev: Any) -> VoteEvidence:
        return default_weigh(self.evidence, ev)

    def plan(self, ctx: ArmContext) -> ArmPlan:
        if ctx.mode == "exact":
            return ArmPlan(runs=True, reason="mode exact")
        if ctx.mode != "auto":
            return ArmPlan(runs=False, reason=f"mode {ctx.mode}")
        share = ctx.profile.exact.min_share if ctx.profile is not None else 1 / 3
        if _names_identifier(ctx.query[:10_000], share):
            return ArmPlan(runs=True, reason="query looks like an identifier")
        return ArmPlan(runs=False, reason="query names no identifier")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        return backend_of(ctx.conn).text_topk(ctx, "exact_fts", exact_match(ctx.query), None)


# Pure, and asked before the arm-hit cache is: once per search, so an eval grid asked it
# once per run of every query (0.2 ms a search, a sixth of a cached search's pipeline).
_names_identifier = functools.lru_cache(maxsize=4096)(query_looks_like_identifier)
