"""Semantic arm: cosine similarity between the query vector and passage vectors.

The arm itself is thin: the embedding model, the in-memory vector matrix and the scope
mask live in ``memo.embed`` and reach the arm through ``ctx.services.semantic`` (a
``memo.embed.service.SemanticService`` or anything with the same shape).  ``raw`` is the
cosine (vectors are unit length, so a dot product), which the pipeline reads as the
result's ``relevance`` and compares with the model's bands and ``semantic_floor``.

Degraded mode: when the arm *should* run (mode auto/semantic) but the model is missing,
corrupt, failed to load or no passage has a vector yet, ``plan`` says so with
``degraded=True`` and the pipeline runs the other arms only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence
from memo.retrieve.arms.shared import SEMANTIC_OFF_MODES, embedded_text, own_vector, query_vector
from memo.retrieve.backend import backend_of


class SemanticArm:
    name = "semantic"
    evidence = frozenset({"semantic"})
    # [index]: the int8 scan's shortlist decides which rows are rescored exactly
    reads = ("retrieve.fetch_depth", "entities", "index")
    # embeds the query: waits for the model
    needs_model = True
    after: tuple[ArmName, ...] = ()

    def weigh(self, ev: Any) -> VoteEvidence:
        """The cosine, and the query-as-typed cosine a hit carries when the arm embedded
        another text (``TypedVote``): relevance and abstention read the larger."""
        return VoteEvidence(cosines=(ev.raw, *(v.cosine for v in ev.votes)))

    def plan(self, ctx: ArmContext) -> ArmPlan:
        if ctx.mode in SEMANTIC_OFF_MODES:
            return ArmPlan(runs=False, reason=f"mode {ctx.mode}", degraded=False)
        svc = ctx.services.semantic
        if svc is None:
            return ArmPlan(runs=False, reason="no embedding model configured", degraded=True)
        try:
            available, why = svc.status()
        except Exception as exc:  # a broken service must not break search
            return ArmPlan(runs=False, reason=f"embedding model error: {exc}", degraded=True)
        if not available:
            return ArmPlan(runs=False, reason=why, degraded=True)
        _text, left_out = embedded_text(ctx)
        if left_out:
            return ArmPlan(runs=True, reason=f"model {svc.model_id}; embeds the query without "
                                             f"{', '.join(left_out)} (common in scope)")
        return ArmPlan(runs=True, reason=f"model {svc.model_id}")

    def prepare(self, ctx: ArmContext) -> None:
        """What this search will need made ready while the model's session builds: the
        tokenizer (``prepare_model``) and the vectors it will scan (the matrix loaded, its
        int8 rows' pages mapped: ``Backend.prepare_vectors``)."""
        svc = ctx.services.semantic
        if ctx.mode in SEMANTIC_OFF_MODES or svc is None or getattr(svc, "index", None) is None:
            return
        prepare_model = getattr(svc, "prepare_model", None)     # the tokenizer, parsed ahead
        if prepare_model is not None:
            prepare_model()
        backend_of(ctx.conn).prepare_vectors(ctx, svc)

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        svc = ctx.services.semantic
        text, _left_out = embedded_text(ctx)
        backend = backend_of(ctx.conn)
        # The backend scans (SQLite: the in-process index per the profile's [index];
        # PostgreSQL: pgvector, exact or HNSW), the scope applied before the top-k.
        if text == ctx.query:
            return backend.vector_topk(ctx, svc, query_vector(ctx, svc))
        hits = backend.vector_topk(ctx, svc, own_vector(ctx, svc, text))
        # Ranked by the text embedded, but abstention judges similarity on the query as typed:
        # the model's bands (semantic_floor) are measured on whole queries, and a question
        # that names its conversation's speaker is in that conversation.  Each hit the typed
        # query also finds carries that cosine as its vote (memo.retrieve.abstention reads
        # the larger of the two).
        typed = {h.pk: h.raw for h in backend.vector_topk(ctx, svc, query_vector(ctx, svc))}
        return [ArmHit(h.pk, h.rank, h.raw, (TypedVote(typed[h.pk]),)) if h.pk in typed else h for h in hits]


@dataclass(frozen=True, slots=True)
class TypedVote:
    """The cosine of the query as typed, on a hit of a semantic arm that embedded another
    text (``why.arms.semantic.votes``; ``embedded_text``)."""

    cosine: float

    @property
    def voter(self) -> None:
        return None     # not a voter: trace.arms[].matched stays None for the semantic arm
