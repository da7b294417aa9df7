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

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmPlan
from memo.retrieve.arms.entity import routed  # the search's routing, computed once per search
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
        _text, left_out = embedded_text(ctx)
        if left_out:
            return ArmPlan(runs=True, reason=f"model {svc.model_id}; embeds the query without "
                                             f"{', '.join(left_out)} (common in scope)")
        return ArmPlan(runs=True, reason=f"model {svc.model_id}")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        svc = ctx.services.semantic
        text, _left_out = embedded_text(ctx)
        backend = backend_of(ctx.conn)
        # The backend scans (SQLite: the in-process index per the profile's [vectors];
        # PostgreSQL: pgvector, exact or HNSW), the scope applied before the top-k.
        if text == ctx.query:
            return backend.vector_topk(ctx, svc, query_vector(ctx, svc))
        hits = backend.vector_topk(ctx, svc, _own_vector(ctx, svc, text))
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


def embedded_text(ctx: ArmContext) -> tuple[str, tuple[str, ...]]:
    """(the text this arm embeds, the names left out of it).

    With ``entities.strip_common`` the query is embedded without the words of the *common*
    entities it names (``memo.retrieve.route``: mentioned in more than
    ``entities.common_share`` of the in-scope passages; a conversation's speakers).  Why:
    such a name is in most passages, so it tells the embedding nothing about which one
    answers, yet it pulls the query vector toward every turn that names that person
    ("What are Nate's favorite desserts?" lands on the turns where Joanna says "Nate").
    The speaker stage (4b) carries the speaker; the keyword arm keeps the name (bm25 gives
    it idf ~0 anyway).  A query of nothing but such names is embedded as typed.  Computed
    once per search (plan and run both ask)."""
    hit = ctx.memo.get("embedded_text")
    if hit is None:
        hit = ctx.memo["embedded_text"] = _embedded_text(ctx)
    return hit


def _embedded_text(ctx: ArmContext) -> tuple[str, tuple[str, ...]]:
    if ctx.profile is None or not ctx.profile.entities.strip_common:
        return ctx.query, ()
    common = [e for e in routed(ctx).entities if e.common]
    if not common:
        return ctx.query, ()
    text = strip_spans(ctx.query, [e.span for e in common])
    if text == ctx.query or not _WORD.search(text):
        return ctx.query, ()
    return text, tuple(e.name for e in common)


_WORD = re.compile(r"\w")


def strip_spans(query: str, spans: list[str]) -> str:
    """``query`` without the word sequences ``spans`` (case-folded query words, as
    ``route.query_words`` gives them), whole words only, a possessive 's with them; spaces
    squeezed (pure)."""
    out = query
    for span in spans:
        words = span.split()
        if not words:
            continue
        pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words) + r"(?:['\u2019]s)?(?!\w)"
        out = re.sub(pattern, " ", out, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", out).strip()


def _own_vector(ctx: ArmContext, svc: Any, text: str) -> np.ndarray:
    """The vector of the text this arm embeds when it is not the query as typed (the fact
    arm keeps the typed query's vector: facts name their subject)."""
    vec = ctx.memo.get("semantic_vector")
    if vec is None:
        vec = ctx.memo["semantic_vector"] = svc.embed_query(text)
    return vec


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
