"""Entity arm (seed: "Passages mentioning entities the query names" | "Routed: the query
names 2+ known entities, or 1 with relational phrasing").

Routing and query entities: ``memo.retrieve.route`` (decided once per search, quoted as
the reason of this arm and of the graph arm).  Runs in mode ``auto`` only.

Candidates: in-scope passages (the scope WHERE inside the SQL, before top-k) that mention
at least one query entity that *counts* (not common, not a common word, not a frequent
identifier: see route).  With D those entities, M(p) the ones p mentions, N the in-scope
passages and df(e) the in-scope passages mentioning e:

    idf(e)  = ln(1 + N / df(e))
    raw(p)  = Σ_{e in D ∩ M(p)} idf(e)         (summed in query order)

over the passages with |D ∩ M(p)| >= min(entities.min_shared, |D|) (default 2: when the
query names two or more entities, the arm's evidence is their co-mention; a passage that
names one of them is the keyword arm's business),

ranked by raw, then by the passage's keyword score for the whole query (FTS5 bm25 over
``passages_fts``, the keyword arm's match: among passages naming the same entities, the
one that also holds the question's other words), then pk.  Entities that do not count
score nothing.  ``votes`` lists the matched entities (``why``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from memo.errors import QuerySyntaxError
from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence, default_weigh
from memo.retrieve.arms.shared import plan_routed, routed
from memo.retrieve.backend import backend_of
from memo.retrieve.scope import scope_counts
from memo.store.mentions import scoped_mentions
from memo.text.fts_query import keyword_match, query_words


@dataclass(frozen=True, slots=True)
class EntityVote:
    """A query entity the passage mentions (``why.arms.entity.votes``)."""

    entity: str        # key
    name: str
    idf: float

    @property
    def voter(self) -> str:
        return self.entity


def idf(n_scope: int, df: int) -> float:
    return math.log(1.0 + max(n_scope, 1) / max(df, 1))


class EntityArm:
    name = "entity"
    evidence = frozenset({"structural"})
    reads = ("retrieve.fetch_depth", "entities")
    needs_model = False
    after: tuple[ArmName, ...] = ()

    def weigh(self, ev: Any) -> VoteEvidence:
        return default_weigh(self.evidence, ev)

    def plan(self, ctx: ArmContext) -> ArmPlan:
        return plan_routed(ctx)

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        decision = routed(ctx)
        if not decision.fired:
            return []
        ents = decision.distinctive
        in_scope, _ = scope_counts(ctx.conn, ctx.scope_sql)
        weight = {e.pk: idf(in_scope, e.df) for e in ents}
        need = min(ctx.profile.entities.min_shared, len(ents))
        by_passage: dict[int, set[int]] = {}
        for ppk, epk in scoped_mentions(ctx.conn, [e.pk for e in ents], ctx.scope_sql.where, ctx.scope_sql.params,
                                        min_entities=need):
            by_passage.setdefault(ppk, set()).add(epk)
        if not by_passage:        # scoped_mentions kept only passages naming ``need`` of them
            return []
        kw = keyword_scores(ctx, by_passage)
        scored = []
        for ppk, got in by_passage.items():
            w = 0.0
            for e in ents:
                if e.pk in got:
                    w += weight[e.pk]
            scored.append((w, kw.get(ppk, 0.0), ppk, got))
        scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
        out = []
        for rank, (w, _, ppk, got) in enumerate(scored[:ctx.fetch_depth], 1):
            votes = tuple(EntityVote(e.key, e.name, weight[e.pk]) for e in ents if e.pk in got)
            out.append(ArmHit(pk=ppk, rank=rank, raw=w, votes=votes))
        return out


def keyword_scores(ctx: ArmContext, pks: dict[int, set[int]] | list[int]) -> dict[int, float]:
    """-bm25 of the query's words (the keyword arm's match) for these passages: the entity
    arm's tiebreak.  Empty when the query has no searchable word."""
    try:
        match = keyword_match(ctx.query)
    except QuerySyntaxError:
        return {}
    return backend_of(ctx.conn).keyword_scores(ctx, match, list(pks), query_words(ctx.query))
