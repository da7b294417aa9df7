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

from typing import TYPE_CHECKING, Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmPlan
from memo.retrieve.backend import backend_of

if TYPE_CHECKING:
    import numpy as np

# Modes in which the semantic arm is deliberately off (not a degradation).
_OFF_MODES = ("keyword", "exact")


class SemanticArm:
    name = "semantic"

    def plan(self, ctx: ArmContext) -> ArmPlan:
        if ctx.mode in _OFF_MODES:
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
        return ArmPlan(runs=True, reason=f"model {svc.model_id}")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        svc = ctx.services.semantic
        qvec = query_vector(ctx, svc)
        # The backend scans (SQLite: the in-process index per the profile's [vectors];
        # PostgreSQL: pgvector, exact or HNSW), the scope applied before the top-k.
        return backend_of(ctx.conn).vector_topk(ctx, svc, qvec)


def query_vector(ctx: ArmContext, svc: Any) -> np.ndarray:
    """The query's unit vector, embedded once per search (the fact arm reuses it)."""
    import numpy as np  # only the meaning arms need it: keyword searches start without numpy

    # Eval replay precomputes query vectors once per data set (ArmServices.query_vector).
    pre = ctx.services.query_vector
    if pre is not None:
        return np.asarray(pre, dtype=np.float32).reshape(-1)
    vec = ctx.memo.get("query_vector")
    if vec is None:
        vec = ctx.memo["query_vector"] = svc.embed_query(ctx.query)
    return vec
