"""Entity arm (seed: "Passages mentioning entities the query names" | "Routed: the query
names 2+ known entities, or 1 with relational phrasing").

Routing and query entities: ``memo.retrieve.route`` (decided once per search, quoted as
the reason of this arm and of the graph arm).  Runs in mode ``auto`` only.

Candidates: in-scope passages (the scope WHERE inside the SQL, before top-k) that mention
at least one *distinctive* query entity (not common: see route).  With Q the recognised
query entities (common ones included), M(p) those p mentions, N the in-scope passages and
df(e) the in-scope passages mentioning e:

    idf(e)  = ln(1 + N / df(e))
    n(p)    = |M(p)|                           distinct query entities mentioned
    w(p)    = Σ_{e in M(p)} idf(e)             (summed in query order)
    raw(p)  = n(p) + w(p) / (1 + Σ_{e in Q} idf(e))

so passages rank by n, then by w (rarer entities first), then pk; raw < n + 1 keeps that
order under min-max fusion.  ``votes`` lists the matched entities (``why``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmPlan
from memo.retrieve.route import Route, route
from memo.retrieve.scope import scope_counts
from memo.store.mentions import scoped_mentions

AUTO_ONLY = "auto"


@dataclass(frozen=True, slots=True)
class EntityVote:
    """A query entity the passage mentions (``why.arms.entity.votes``)."""

    entity: str        # key
    name: str
    idf: float

    @property
    def voter(self) -> str:
        return self.entity


def routed(ctx: ArmContext) -> Route:
    """The search's routing decision (computed once, kept in ``ctx.memo``)."""
    hit = ctx.memo.get("route")
    if hit is None:
        if ctx.profile is None:
            raise ValueError("the entity and graph arms need ArmContext.profile ([entities], [graph])")
        cfg = ctx.profile.entities
        in_scope, _ = scope_counts(ctx.conn, ctx.scope_sql)
        hit = ctx.memo["route"] = route(ctx.conn, ctx.query, ctx.scope_sql.where, ctx.scope_sql.params, in_scope,
                                        max_words=cfg.max_words, common_share=cfg.common_share,
                                        common_min_passages=cfg.common_min_passages, cues=cfg.relational_cues)
    return hit


def plan_routed(ctx: ArmContext) -> ArmPlan:
    if ctx.mode != AUTO_ONLY:
        return ArmPlan(runs=False, reason=f"mode {ctx.mode}: routed arms run in mode auto only")
    decision = routed(ctx)
    return ArmPlan(runs=decision.fired, reason=decision.reason)


def idf(n_scope: int, df: int) -> float:
    return math.log(1.0 + max(n_scope, 1) / max(df, 1))


class EntityArm:
    name = "entity"

    def plan(self, ctx: ArmContext) -> ArmPlan:
        return plan_routed(ctx)

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        decision = routed(ctx)
        if not decision.fired:
            return []
        ents = decision.entities
        in_scope, _ = scope_counts(ctx.conn, ctx.scope_sql)
        weight = {e.pk: idf(in_scope, e.df) for e in ents}
        total = sum(weight[e.pk] for e in ents)
        distinctive = {e.pk for e in decision.distinctive}
        by_passage: dict[int, set[int]] = {}
        for ppk, epk in scoped_mentions(ctx.conn, [e.pk for e in ents], ctx.scope_sql.where, ctx.scope_sql.params):
            by_passage.setdefault(ppk, set()).add(epk)
        scored = []
        for ppk, got in by_passage.items():
            if not got & distinctive:
                continue
            w = 0.0
            for e in ents:
                if e.pk in got:
                    w += weight[e.pk]
            scored.append((len(got), w, ppk, got))
        scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
        out = []
        for rank, (n, w, ppk, got) in enumerate(scored[:ctx.fetch_depth], 1):
            votes = tuple(EntityVote(e.key, e.name, weight[e.pk]) for e in ents if e.pk in got)
            out.append(ArmHit(pk=ppk, rank=rank, raw=n + w / (1.0 + total), votes=votes))
        return out
