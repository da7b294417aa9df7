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
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.scope import scope_stats
from memo.store.dialect import is_postgres
from memo.store.postgres.vectors import vector_topk

if TYPE_CHECKING:
    import numpy as np

# Modes in which the semantic arm is deliberately off (not a degradation).
_OFF_MODES = ("keyword", "exact")
_NO_CFG = object()


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
        # memo's own index takes the profile's [vectors] section (exact or int8 +
        # rescoring, the sidecar) and, when few passages are out of scope (the usual case:
        # a few superseded records), those pks instead of every allowed one (reading 1M
        # allowed pks costs more than the scan).  Fakes keep the plain call.
        cfg = ctx.profile.vectors if ctx.profile is not None else None
        if is_postgres(ctx.conn) and getattr(svc.index, "cfg", _NO_CFG) is not _NO_CFG:
            # memo's own index on PostgreSQL: pgvector, scope in the statement
            # (memo.store.postgres.vectors).  Fakes keep the plain call.
            hits = vector_topk(ctx.conn, svc.model_id, qvec, ctx.scope_sql.where, ctx.scope_sql.params,
                               ctx.fetch_depth, in_scope=scope_stats(ctx.conn, ctx.scope_sql).in_scope, cfg=cfg,
                               cache=conn_cache(ctx.conn))
        elif getattr(svc.index, "cfg", _NO_CFG) is not _NO_CFG:
            stats = scope_stats(ctx.conn, ctx.scope_sql)
            if stats.excluded is not None:
                hits = svc.index.search(ctx.conn, qvec, None, ctx.fetch_depth, cfg, excluded=stats.excluded)
            else:
                hits = svc.index.search(ctx.conn, qvec, _allowed_pks(ctx, svc), ctx.fetch_depth, cfg)
        else:
            hits = svc.index.search(ctx.conn, qvec, _allowed_pks(ctx, svc), ctx.fetch_depth)
        return [ArmHit(pk=int(pk), rank=i + 1, raw=float(cos)) for i, (pk, cos) in enumerate(hits)]


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


def _allowed_pks(ctx: ArmContext, svc: Any) -> np.ndarray | None:
    """Passage pks the scope filter allows (None = no filter at all).  The index caches
    the answer per (data generation, where, params), so a replay of many queries under
    one scope runs the filter query once."""
    scoped = getattr(svc.index, "scope_pks", None)
    if scoped is not None:
        return scoped(ctx.conn, ctx.scope_sql.where, ctx.scope_sql.params)
    sql = ("SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE "
           + (ctx.scope_sql.where or "1"))
    rows = ctx.conn.execute(sql, ctx.scope_sql.params).fetchall()
    import numpy as np

    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
