"""Work several arms share, done once per search and kept in the search's typed scratch
(``ArmContext.scratch``): the entity/graph routing decision, the query's vector, and the
text the semantic arm embeds.  Arms import this module and ``base``, never each other.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memo.retrieve.arms.base import ArmContext, ArmPlan
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.route import Route, route
from memo.retrieve.scope import scope_counts

if TYPE_CHECKING:
    import numpy as np

AUTO_ONLY = "auto"                     # the routed arms (entity, graph) run in mode auto only
SEMANTIC_OFF_MODES = ("keyword", "exact")   # modes in which the meaning arms are deliberately off
ROUTE_CACHE_MAX = 8192                 # routing decisions kept per connection (arm-hit cache on), then cleared


def routed(ctx: ArmContext) -> Route:
    """The search's routing decision (computed once, kept in ``ctx.scratch``)."""
    hit = ctx.scratch.route
    if hit is None:
        if ctx.profile is None:
            raise ValueError("the entity and graph arms need ArmContext.profile ([entities], [graph])")
        cfg = ctx.profile.entities
        # With the arm-hit cache (eval replay) the decision is kept per connection like the
        # arms' hits: it is a pure function of the query, the scope, the data and
        # [entities], and its word counts are most of a search whose arms are cached.
        cache = conn_cache(ctx.conn).setdefault("route", {}) if ctx.services.arm_cache else None
        key = (ctx.query, ctx.scope_sql.where, ctx.scope_sql.params, cfg)
        hit = cache.get(key) if cache is not None else None
        if hit is None:
            in_scope, _ = scope_counts(ctx.conn, ctx.scope_sql)
            hit = route(ctx.conn, ctx.query, ctx.scope_sql.where, ctx.scope_sql.params, in_scope,
                        max_words=cfg.max_words, common_share=cfg.common_share,
                        common_min_passages=cfg.common_min_passages, cues=cfg.relational_cues,
                        name_share=cfg.name_share, identifier_share=cfg.identifier_share,
                        min_query_share=cfg.min_query_share)
            if cache is not None:
                if len(cache) >= ROUTE_CACHE_MAX:
                    cache.clear()
                cache[key] = hit
        ctx.scratch.route = hit
    return hit


def plan_routed(ctx: ArmContext) -> ArmPlan:
    if ctx.mode != AUTO_ONLY:
        return ArmPlan(runs=False, reason=f"mode {ctx.mode}: routed arms run in mode auto only")
    decision = routed(ctx)
    return ArmPlan(runs=decision.fired, reason=decision.reason)


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
    hit = ctx.scratch.embedded
    if hit is None:
        hit = ctx.scratch.embedded = _embedded_text(ctx)
    return hit


def _embedded_text(ctx: ArmContext) -> tuple[str, tuple[str, ...]]:
    if ctx.profile is None or not ctx.profile.entities.strip_common:
        return ctx.query, ()
    common = [e for e in routed(ctx).entities if e.common and written_as_name(ctx.query, e.span)]
    if not common:
        return ctx.query, ()
    text = strip_spans(ctx.query, [e.span for e in common])
    if text == ctx.query or not _WORD.search(text):
        return ctx.query, ()
    return text, tuple(e.name for e in common)


_WORD = re.compile(r"\w")


def written_as_name(query: str, span: str) -> bool:
    """Does ``query`` write the words ``span`` (case-folded) capitalised, as a name (pure)?
    "What did Caroline paint?" names a speaker; "make git blame skip ..." uses a word that
    the corpus also holds as a name ("GIT" in every release-notes heading of git's), and
    that word says which passages answer: ``strip_common`` leaves it in the embedded query
    (relnotes train: 0.7449 with "git" stripped, 0.7771 kept)."""
    words = span.split()
    if not words:
        return False
    pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words) + r"(?!\w)"
    return any(m.group(0)[:1].isupper() for m in re.finditer(pattern, query, flags=re.IGNORECASE))


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


def own_vector(ctx: ArmContext, svc: Any, text: str) -> np.ndarray:
    """The vector of the text this arm embeds when it is not the query as typed (the fact
    arm keeps the typed query's vector: facts name their subject)."""
    vec = ctx.scratch.own_vector
    if vec is None:
        vec = ctx.scratch.own_vector = svc.embed_query(text)
    return vec


def query_vector(ctx: ArmContext, svc: Any) -> np.ndarray:
    """The query's unit vector, embedded once per search (the fact arm reuses it)."""
    import numpy as np  # only the meaning arms need it: keyword searches start without numpy

    # Eval replay precomputes query vectors once per data set (ArmServices.query_vector).
    pre = ctx.services.query_vector
    if pre is not None:
        return np.asarray(pre, dtype=np.float32).reshape(-1)
    vec = ctx.scratch.query_vector
    if vec is None:
        vec = ctx.scratch.query_vector = svc.embed_query(ctx.query)
    return vec
