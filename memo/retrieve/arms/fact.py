"""Fact arm (seed: "Facts matched by keyword or meaning; a hit votes for its evidence
passage" | runs always).

1. Facts that may vote: live (or, under ``as_of`` T, recorded on or before T and not
   superseded before T; forgotten never), in the scope's namespaces and above its
   min_trust, with at least one evidence passage inside the scope (the scope WHERE over
   ``passages p JOIN records r``).  Both conditions sit inside each query, before top-k.
2. Two fact lists: keyword (FTS5 bm25 over ``facts_fts``, query compiled by
   ``memo.text.fts_query.keyword_match``) and meaning (cosine of the semantic arm's query
   vector with the fact vectors; only when the semantic service is available and the mode
   allows the semantic arm), each at most ``fetch_depth`` facts.
3. One fact ranking: ``fact_score(f) = Σ_lists norm_list(f)``, the min-max normalised raw
   score in each list (the min-max fusion's normalisation, memo.retrieve.fusion.minmax;
   a lone or all-equal list normalises to 1.0), the two lists weighted equally
   (docs/architecture.md section 5); fact rank by score desc, then fact pk.  On LoCoMo
   with observations this merge beat RRF of the two lists (k 60) (docs/eval.md "Fact arm
   variants").
4. Each matched fact votes for its in-scope evidence passages.  A passage's raw score is
   its best voting fact's ``fact_score``; passages are ranked by that, then by the number
   of voting facts (more first), then pk.  ``votes`` lists the voting facts (``why``).

The profile's ``[fact]`` keys vary steps 3-4 (docs/profiles.md): ``merge`` ("rrf": Σ
1 / (fusion.k + rank) instead of min-max).  Every matched fact votes.
(A decayed sum of votes, a meaning-list weight and votes spread to neighbouring turns were
measured on LoCoMo and never shipped; docs/eval.md keeps the figures.)

A database without facts costs one cached EXISTS: the arm runs, returns nothing and its
reason says so.  Abstention (``memo.retrieve.abstention``) drops a candidate whose only
evidence is facts matched only by meaning below ``semantic_floor``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memo.errors import ModelUnavailable, QuerySyntaxError
from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence
from memo.retrieve.arms.shared import SEMANTIC_OFF_MODES, query_vector
from memo.retrieve.backend import backend_of
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.fusion.minmax import minmax_contributions
from memo.retrieve.scope import live_filter
from memo.retrieve.types import ArmRun
from memo.text.fts_query import keyword_match
from memo.types import Scope

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class FactVote:
    """One fact's vote for a passage (listed in ``why.arms.fact.votes``)."""

    fact_id: str
    text: str
    rank: int                     # in the merged fact ranking
    score: float                  # fact_score: Σ over the two fact lists of weight x norm (fact.merge)
    keyword_rank: int | None      # in the keyword fact list (None: not matched by keyword)
    keyword_raw: float | None     # -bm25 over facts_fts
    semantic_rank: int | None     # in the meaning fact list
    semantic_raw: float | None    # cosine
    weight: float = 1.0           # 1.0: the passage is its evidence

    @property
    def voter(self) -> str:
        """Who voted (``trace.arms[].matched`` counts distinct voters)."""
        return self.fact_id


def fact_filter_sql(scope: Scope, scope_where: str, scope_params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """WHERE over ``facts f``: the fact's own live / as_of filter, namespaces and
    min_trust, and at least one evidence passage inside the passage scope."""
    live, params = live_filter("f", scope.as_of)
    where: list[str] = [live]
    ns = tuple(dict.fromkeys(scope.namespaces))
    if ns:
        where.append(f"f.namespace IN ({','.join('?' * len(ns))})")
        params += ns
    if scope.min_trust is not None:
        where.append("f.trust >= ?")
        params.append(float(scope.min_trust))
    where.append("EXISTS (SELECT 1 FROM fact_evidence e JOIN passages p ON p.pk = e.passage_pk"
                 " JOIN records r ON r.id = p.record_id WHERE e.fact_pk = f.pk AND " + (scope_where or "1") + ")")
    params += scope_params
    return " AND ".join(where), tuple(params)


def _has_facts(conn: sqlite3.Connection) -> bool:
    cache = conn_cache(conn)
    hit = cache.get("fact_any")
    if hit is None:
        hit = cache["fact_any"] = bool(conn.execute(
            "SELECT EXISTS (SELECT 1 FROM facts WHERE forgotten_at IS NULL)").fetchone()[0])
    return hit


def _semantic_service(ctx: ArmContext) -> tuple[Any | None, str]:
    if ctx.mode in SEMANTIC_OFF_MODES:
        return None, f"meaning off in mode {ctx.mode}"
    svc = ctx.services.semantic
    if svc is None or getattr(svc, "fact_index", None) is None:
        return None, "meaning: no embedding model"
    try:
        ok, why = svc.status()
    except Exception as exc:  # a broken service must not break search
        return None, f"meaning: {exc}"
    return (svc, "") if ok else (None, f"meaning: {why}")


class FactArm:
    name = "fact"
    evidence = frozenset({"lexical", "semantic"})
    reads = ("retrieve.fetch_depth", "fact", "fusion.k", "index")
    # facts by meaning embed the query
    needs_model = True
    after: tuple[ArmName, ...] = ()

    def weigh(self, ev: Any) -> VoteEvidence:
        """Facts matched by words are judged by their text's coverage; facts matched by
        meaning by their cosine (a fact's similarity, not the passage's)."""
        return VoteEvidence(fact_ids=tuple(v.fact_id for v in ev.votes if v.keyword_rank is not None),
                            fact_cosines=tuple(v.semantic_raw for v in ev.votes if v.semantic_raw is not None))

    def plan(self, ctx: ArmContext) -> ArmPlan:
        if not _has_facts(ctx.conn):
            return ArmPlan(runs=True, reason="no facts stored: nothing can vote")
        svc, why = _semantic_service(ctx)
        return ArmPlan(runs=True, reason="facts by keyword and meaning" if svc is not None
                       else f"facts by keyword ({why})")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        # Compile first: a query with no words and no meaning half is "not run", as for
        # the keyword arm (the pipeline raises QuerySyntaxError if no arm could run).
        syntax: QuerySyntaxError | None = None
        try:
            match = keyword_match(ctx.query)
        except QuerySyntaxError as err:
            syntax, match = err, None
        svc, _ = _semantic_service(ctx)
        if syntax is not None and svc is None:
            raise syntax
        if not _has_facts(ctx.conn):
            return []
        conn = ctx.conn
        where, params = fact_filter_sql(ctx.scope, ctx.scope_sql.where, ctx.scope_sql.params)
        kw: dict[int, tuple[int, float]] = {}
        if match is not None:
            rows = backend_of(conn).fact_text_topk(ctx, match, where, params)
            kw = {pk: (i, raw) for i, (pk, raw) in enumerate(rows, 1)}
        sem: dict[int, tuple[int, float]] = {}
        if svc is not None:
            allowed = _allowed_facts(conn, where, params)
            if allowed.size:
                try:
                    qvec = query_vector(ctx, svc)
                except ModelUnavailable:
                    qvec = None
                if qvec is not None:
                    hits = backend_of(conn).fact_vector_topk(ctx, svc, qvec, allowed)
                    sem = {int(pk): (i, float(cos)) for i, (pk, cos) in enumerate(hits, 1)}
        return _votes(conn, ctx, kw, sem)


def _allowed_facts(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> np.ndarray:
    """Fact pks that may vote under this scope (cached until the data changes)."""
    import numpy as np  # only meaning needs it: keyword searches start without numpy

    cache = conn_cache(conn).setdefault("fact_allowed", {})
    key = (where, params)
    hit = cache.get(key)
    if hit is None:
        rows = conn.execute("SELECT f.pk FROM facts f WHERE " + where, params).fetchall()
        if len(cache) > 64:
            cache.clear()
        hit = cache[key] = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return hit


def fact_scores(lists: tuple[dict[int, tuple[int, float]], ...], merge: str = "minmax",
                k: int = 60, weights: tuple[float, ...] | None = None) -> dict[int, float]:
    """fact pk -> Σ over the lists of weight x its min-max normalised raw score (``merge``
    "minmax") or weight / (k + rank) (``merge`` "rrf"); weights 1.0 unless given."""
    score: dict[int, float] = {}
    for j, lst in enumerate(lists):
        if not lst:
            continue
        w = 1.0 if weights is None else weights[j]
        if merge == "rrf":
            for f, (r, _) in lst.items():
                score[f] = score.get(f, 0.0) + w / (k + r)
            continue
        run = ArmRun("fact", True, "", False, tuple(ArmHit(f, r, raw) for f, (r, raw) in lst.items()), 0.0)
        for hit, norm in zip(run.hits, minmax_contributions(run, w), strict=True):
            score[hit.pk] = score.get(hit.pk, 0.0) + norm
    return score


def _fact_cfg(ctx: ArmContext) -> tuple[str, int]:
    """(merge, k) from the profile's [fact] and fusion.k (without a profile: minmax, 60)."""
    p = ctx.profile
    cfg = getattr(p, "fact", None)
    if cfg is None:
        return "minmax", 60
    return cfg.merge, p.fusion.k


def _votes(conn: sqlite3.Connection, ctx: ArmContext, kw: dict[int, tuple[int, float]],
           sem: dict[int, tuple[int, float]]) -> list[ArmHit]:
    merge, k = _fact_cfg(ctx)
    score = fact_scores((kw, sem), merge, k, (1.0, 1.0))
    if not score:
        return []
    order = sorted(score, key=lambda f: (-score[f], f))
    frank = {f: i for i, f in enumerate(order, 1)}
    fpks = list(order)
    marks = ",".join("?" * len(fpks))
    texts = {int(r[0]): (r[1], r[2]) for r in conn.execute(
        f"SELECT pk, id, text FROM facts WHERE pk IN ({marks})", fpks)}
    # Evidence passages inside the passage scope (the same WHERE every arm applies).
    # CROSS JOIN fixes the order (start from the matched facts' evidence rows): left to
    # itself SQLite walks every passage of the scope's namespace first (much slower on
    # LoCoMo: docs/results-log.md "Fact arm").
    ev = conn.execute(
        f"SELECT e.fact_pk, e.passage_pk FROM fact_evidence e CROSS JOIN passages p ON p.pk = e.passage_pk"
        f" CROSS JOIN records r ON r.id = p.record_id WHERE e.fact_pk IN ({marks}) AND "
        + (ctx.scope_sql.where or "1"), (*fpks, *ctx.scope_sql.params)).fetchall()
    by_passage: dict[int, dict[int, float]] = {}      # passage -> {fact: vote weight}
    for fpk, ppk in ev:
        by_passage.setdefault(int(ppk), {})[int(fpk)] = 1.0
    # A passage's raw score: its best voting fact's score.
    raw = {ppk: max(score[f] * w for f, w in voters.items()) for ppk, voters in by_passage.items()}
    ranked = sorted(by_passage.items(), key=lambda item: (-raw[item[0]], -len(item[1]), item[0]))
    out = []
    for i, (ppk, voters) in enumerate(ranked[:ctx.fetch_depth], 1):
        order_f = sorted(voters, key=lambda f: (-score[f] * voters[f], frank[f]))
        votes = tuple(FactVote(fact_id=texts[f][0], text=texts[f][1], rank=frank[f], score=score[f],
                               keyword_rank=kw[f][0] if f in kw else None,
                               keyword_raw=kw[f][1] if f in kw else None,
                               semantic_rank=sem[f][0] if f in sem else None,
                               semantic_raw=sem[f][1] if f in sem else None,
                               weight=voters[f]) for f in order_f)
        out.append(ArmHit(pk=ppk, rank=i, raw=raw[ppk], votes=votes))
    return out
