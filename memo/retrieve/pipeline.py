"""The search pipeline, listed once, in the seed's order:

    1 scope filter ─▶ 2 arms (ARMS) ─▶ 3 fusion ─▶ 4 rescorers (RESCORERS: recency, then the
    extras speaker, dates, heading, context) ─▶ 5 abstention ─▶ 6 cutoff ─▶ 7 limit
    ─▶ 8 token budget ─▶ 9 results + why + trace

Stage 4 is one interface (``memo.retrieve.rescore``): each rescorer multiplies some
candidates' scores by a factor that ``why.factors`` lists in order.  With a rescorer's boost
at 0 (base.toml, so the ``rrf`` and ``minmax`` profiles) it gives no factor: the seed's
pipeline is recency alone.

Every search (library, CLI, MCP server) calls ``search``.  Stages 3-8 are pure functions
(one file each); the only I/O is the scope count, the arms' own queries, and two batched
reads (``fetch``).  Every drop is recorded in the trace with its stage and reason.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memo import metrics
from memo.embed import (
    DEFAULT_MODEL_ID,  # noqa: F401  (re-exported: the one definition)
    NO_VECTORS_YET,
)
from memo.profile import Profile, load_profile
from memo.retrieve import context, dated, heading, recency, speaker
from memo.retrieve.abstention import abstain, abstain_weak_query
from memo.retrieve.arms import ARMS, weigh
from memo.retrieve.arms import BY_NAME as _BY_NAME
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.backend import backend_of
from memo.retrieve.budget import pack
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.cutoff import cutoff
from memo.retrieve.empty import NOT_FOUND_HINT, describe, empty_cause  # noqa: F401  (NOT_FOUND_HINT re-exported)
from memo.retrieve.evidence import facts_evidence, passages_evidence
from memo.retrieve.fusion import fuse
from memo.retrieve.fusion.adaptive import adapt
from memo.retrieve.hit_memo import hit_memo, meta_of, part, rows_of
from memo.retrieve.limit import limit as limit_stage
from memo.retrieve.narrow import narrow_hint
from memo.retrieve.rescore import RescoreInput, Rescorer, apply, sort_best_first
from memo.retrieve.results import build_table
from memo.retrieve.run_arms import run_arms
from memo.retrieve.scope import build_scope_sql, scope_counts, unknown_namespaces
from memo.retrieve.services import ArmServices
from memo.retrieve.types import ArmTrace, Drop, SearchRequest, SearchResponse, Trace
from memo.retrieve.validate import check_request
from memo.store.connect import read_tx

# Stage 4, in order: the seed's recency, then each extra factor (off at boost 0).
RESCORERS: tuple[Rescorer, ...] = (recency.RESCORER, speaker.RESCORER, dated.RESCORER, heading.RESCORER,
                                   context.RESCORER)
def search(conn: sqlite3.Connection, request: SearchRequest, profile: Profile | str | None = None,
           services: ArmServices | Mapping[str, Any] | None = None) -> SearchResponse:
    """Run the pipeline inside one read snapshot (``read_tx``): the scope filter, every
    arm's top-k and the row fetches all see the same committed state, so a write landing
    mid-search can neither leak an out-of-scope row nor drop a live one.  ``profile`` None:
    the default profile (``memo.types.default_profile``).  ``services``:
    what the arms share (``memo.retrieve.services.ArmServices``; the old dict is accepted
    during the transition)."""
    t_start = time.perf_counter()
    with read_tx(conn):
        return _search(conn, request, profile, services, t_start)


def _search(conn: sqlite3.Connection, request: SearchRequest, profile: Profile | str | None,
            services: ArmServices | Mapping[str, Any] | None, t_start: float) -> SearchResponse:
    clock = _Clock(t_start)
    if not hasattr(profile, "fusion"):
        profile = load_profile(profile)
    services = ArmServices.of(services)
    # A load before this search (a replay's warm-up, a server's background load) is not
    # this search's start-up: taken and dropped here, else its time was subtracted from this
    # search's latency (negative latency_ms on a replay's first query).
    _take_startup_ms(services)
    checked = check_request(request, profile)
    model_id = _model_id(services)
    bands = profile.models.get(model_id) if model_id else None
    drops: list[Drop] = []

    # 1 scope filter: a WHERE fragment each arm applies before its top-k
    scope_sql = build_scope_sql(request.scope)
    in_scope, total = scope_counts(conn, scope_sql)  # cached; arms reuse it (memo.retrieve.backend)
    clock.lap("scope")
    if total > in_scope:
        drops.append(Drop("scope", "outside scope or not live (superseded/forgotten)", total - in_scope))

    # 2 arms
    ctx = ArmContext(conn=conn, query=checked.query, mode=checked.mode, scope_sql=scope_sql,
                     fetch_depth=profile.retrieve.fetch_depth, services=services,
                     scope=request.scope, profile=profile)
    runs = run_arms(ctx, ARMS)
    clock.lap("arms")
    # Loading the model and the vector matrix (a cold process's first semantic search) is
    # start-up, not search: trace.stage_ms reports it as model_load / matrix_load, and
    # neither "arms" nor latency_ms include it.
    startup = _take_startup_ms(services)
    clock.exclude("arms", startup)

    # The same hits again (an eval grid's arm-hit cache): what follows from them alone is known
    memo = hit_memo(conn, runs) if services.arm_cache else None
    # The candidates' meta (one read: the fused set is the union of the hits), before fusion:
    # the extra code_queries weighs by the kinds of the semantic arm's hits
    meta = meta_of(conn, runs, memo)
    # 3 fusion, with this query's arm weights (the profile's, or adapted: extras adaptive
    # and code_queries)
    fusion = profile.fusion
    arm_weights = adapt(profile.weights, _keyword_coverage(conn, checked.query, scope_sql, runs, profile,
                                                           cached=services.arm_cache),
                        fusion.keyword_full, fusion.keyword_full_code, _code_share(runs, meta, profile))
    fused = fuse([r for r in runs if r.ran], fusion.method, arm_weights.weights, fusion.k)
    if len(meta) < len(fused):
        # An index row without a passage (a derived index out of step with the
        # canonical rows) is not a result.
        fused = [c for c in fused if c.pk in meta]
    clock.lap("fusion")

    # 4 rescorers: recency, then the extras; each re-sorts only when it gives a factor
    ranked = list(fused)
    sort_best_first(ranked)
    inp = RescoreInput(checked.query, meta, checked.now, profile)
    named: dict[str, tuple[str, ...]] = {}
    notes = list(checked.notes)
    for rescorer in RESCORERS:
        ranked, out = apply(rescorer, ranked, inp)
        if out.named:
            named[rescorer.name] = out.named
        if out.note:
            notes.append(out.note)
    clock.lap("rescore")

    # 5 abstention
    n_before_abstention = len(ranked)
    semantic_floor = bands.semantic_floor if bands is not None else None
    ranked, abstained_pks = abstain(ranked, semantic_floor, weigh, known=part(memo, ("abstain", semantic_floor)))
    if abstained_pks:
        drops.append(Drop("abstention", "only evidence a semantic similarity below semantic_floor "
                          f"{bands.semantic_floor if bands else ''}", len(abstained_pks), tuple(abstained_pks)))
    weak = abstain_weak_query(ranked, semantic_floor, profile.abstention.keyword_floor,
                              lambda pks, fact_ids: _keyword_evidence(conn, checked.query, scope_sql, pks, fact_ids),
                              weigh, similarity_measured=_measured_similarity(runs),
                              joint_floor=profile.abstention.joint_floor)
    if weak.dropped:
        drops.append(Drop("abstention", weak.reason or "", len(weak.dropped), tuple(weak.dropped)))
        abstained_pks = [*abstained_pks, *weak.dropped]
        ranked = []

    clock.lap("abstention")

    # 6 cutoff
    ranked, cut_pks, cutoff_kind = cutoff(ranked, min_results=profile.cutoff.min_results,
                                          gap=profile.cutoff.gap)
    if cut_pks:
        drops.append(Drop("cutoff", f"score dropped by more than {profile.cutoff.gap:g} from the previous result",
                          len(cut_pks), tuple(cut_pks)))

    # 7 limit
    limited, limit_pks = limit_stage(ranked, checked.limit)
    if limit_pks:
        drops.append(Drop("limit", f"beyond limit {checked.limit}", len(limit_pks), tuple(limit_pks)))

    # 8 token budget
    packed, budget_pks, used = pack(limited, meta, checked.max_tokens)
    if budget_pks:
        drops.append(Drop("budget", f"did not fit in max_tokens {checked.max_tokens}",
                          len(budget_pks), tuple(budget_pks)))

    clock.lap("cutoff_limit_budget")

    # 9 results + why + trace
    table = build_table(packed, rows_of(conn, packed, memo), meta, bands, weigh,
                        explain=checked.explain, now=checked.now, aging_kinds=profile.recency.aging_kinds,
                        cosines=_stored_cosines(conn, ctx, runs, model_id), fusion=arm_weights.as_dict(),
                        known=part(memo, ("relevance", bands)))
    results = table if request.columns else table.materialize()
    narrow = narrow_hint(ranked, packed, meta, request.scope, known=part(memo, "narrow"))
    clock.lap("results")
    degraded_parts = [f"{r.name}: {r.reason}" for r in runs if r.degraded]
    degraded_kinds = ["arm_unavailable"] if degraded_parts else []
    pending = _pending_in_scope(ctx, runs, services)
    if pending:
        degraded_parts.append(
            f"semantic: {pending} of {in_scope} in-scope passages have no vector for {model_id} yet "
            "(found by keyword only); run `memo backfill`")
        degraded_kinds.append("vectors_pending")
    degraded_reason = "; ".join(degraded_parts)
    cause = reason = hint = None
    if not results:
        semantic = next((r for r in runs if r.name == "semantic"), None)
        cause = empty_cause(in_scope=in_scope, mode=checked.mode, runs=runs, n_fused=len(fused),
                            n_abstained=len(abstained_pks), n_after_abstention=len(ranked), pending=pending,
                            no_vectors=semantic is not None and semantic.reason.startswith(NO_VECTORS_YET))
        first = meta.get(limited[0].pk) if limited else None
        syntax = next((r.reason.removeprefix("not run: ") for r in runs
                       if not r.ran and r.reason.startswith("not run:")), None)
        reason, hint = describe(
            cause, candidates=n_before_abstention,
            floor=bands.semantic_floor if bands is not None else "", max_tokens=checked.max_tokens,
            tokens=first.tokens if first is not None else "?", pending=pending, in_scope=in_scope,
            why=syntax if cause == "no_searchable_word" else (semantic.reason if semantic is not None else "?"))
        if cause == "abstained" and weak.dropped:
            reason = f"all {n_before_abstention} candidates had {weak.reason}"
        if cause == "no_scope" and total == 0:
            reason, hint = "the database holds no memories yet", "add some with `memo add` or `memo import`"
        elif cause == "no_scope":
            missing, have = unknown_namespaces(conn, request.scope)
            if missing:
                reason = (f"no memory is in namespace {', '.join(repr(n) for n in missing)}"
                          + (f"; the namespaces are {', '.join(have)}" if have else "; the database is empty"))
    trace = Trace(
        profile=profile.name, fusion=profile.fusion.method, mode=checked.mode, model_id=model_id,
        arms=tuple(ArmTrace(r.name, r.ran, r.reason, len(r.hits), r.latency_ms, _matched(r, memo)) for r in runs),
        filter={"in_scope": in_scope, "total": total, "out_of_scope": total - in_scope},
        candidates=len(fused), cutoff_kind=cutoff_kind,
        budget={"used": used, "max": checked.max_tokens},
        degraded={"flag": bool(degraded_reason), "reason": degraded_reason or None},
        drops=tuple(drops), latency_ms=round((time.perf_counter() - t_start) * 1000.0 - sum(startup.values()), 3),
        limit=checked.limit, stage_ms={**clock.laps, **startup}, notes=tuple(notes), rescore=named,
        fusion_weights=arm_weights.as_dict())
    metrics.observe_search(profile=profile.name, mode=checked.mode, latency_ms=trace.latency_ms, arms=runs,
                           degraded=degraded_kinds, empty_cause=cause)
    return SearchResponse(query=checked.query, results=results, abstained=cause == "abstained", cause=cause,
                          reason=reason, hint=hint, truncated=len(budget_pks) + len(limit_pks),
                          narrow_hint=narrow, trace=trace)


class _Clock:
    """Per-stage wall time for the trace (perf_counter: ~0.1 us per lap)."""

    __slots__ = ("laps", "_t")

    def __init__(self, t0: float) -> None:
        self.laps: dict[str, float] = {}
        self._t = t0

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.laps[stage] = round((now - self._t) * 1000.0, 3)
        self._t = now

    def exclude(self, stage: str, parts: dict[str, float]) -> None:
        """Take ``parts`` (reported on their own) out of ``stage``'s time."""
        if parts:
            self.laps[stage] = round(max(0.0, self.laps[stage] - sum(parts.values())), 3)


def _stored_cosines(conn: sqlite3.Connection, ctx: ArmContext, runs: Sequence[Any], model_id: str | None) -> Any:
    """For the returned passages no arm measured a similarity for, when the query was
    embedded (the semantic arm ran, or its hits came from the arm-hit cache): their stored
    vectors' cosines, their relevance (memo.retrieve.results).  None otherwise."""
    if model_id is None or not any(r.name == "semantic" and r.ran for r in runs):
        return None
    # Eval replay hands the query vector in (ArmServices.query_vector); a live search
    # embedded it in this search's scratch.
    qvec = ctx.services.query_vector if ctx.services.query_vector is not None else ctx.scratch.query_vector
    if qvec is None:
        return None
    import numpy as np  # the semantic arm ran, so numpy is loaded; keyword searches start without it

    qvec = np.asarray(qvec, dtype=np.float32).reshape(-1)
    backend = backend_of(conn)
    if not ctx.services.arm_cache:
        return lambda pks: backend.passage_cosines(conn, model_id, qvec, pks)
    # Eval replay (the arm-hit cache): a stored vector's cosine with this query vector is
    # the same in every run of a grid, so each is read once per connection and data state.
    known = conn_cache(conn).setdefault("passage_cosines", {}).setdefault((model_id, qvec.tobytes()), {})

    def cached(pks: list[int]) -> dict[int, float]:
        missing = [pk for pk in pks if pk not in known]
        if missing:
            got = backend.passage_cosines(conn, model_id, qvec, missing)
            known.update({pk: got.get(pk) for pk in missing})     # None: no stored vector
        return {pk: known[pk] for pk in pks if known[pk] is not None}
    return cached


def _measured_similarity(runs: list) -> bool:
    """Did an arm whose votes are similarities run (abstention rule 2 needs one)?"""
    return any(r.ran and "semantic" in _BY_NAME[r.name].evidence and "lexical" not in _BY_NAME[r.name].evidence
               for r in runs)


def _matched(run: Any, memo: dict[Any, Any] | None = None) -> int | None:
    """Distinct voters behind an arm's candidates (fact arm: facts; entity and graph arms:
    entities); None for arms without votes.  ``memo``: the hits' own (``hit_memo``)."""
    if not run.hits:
        return None
    if memo is not None:
        key = ("matched", run.name)
        if key in memo:
            return memo[key]
    voters = {v.voter for hit in run.hits for v in hit.votes} - {None}
    out = len(voters) if voters else None
    if memo is not None:
        memo[key] = out
    return out


def _keyword_coverage(conn: sqlite3.Connection, query: str, scope_sql: Any, runs: list, profile: Profile,
                      cached: bool = False) -> float | None:
    """The best idf coverage of the query by the keyword arm's hits (``memo.retrieve.evidence``),
    read only when the extra adaptive or code_queries is on; None when the arm returned nothing, or when the
    semantic arm returned nothing (mode keyword, degraded): with no other list to lean on,
    the keyword weight stays the profile's."""
    if profile.fusion.keyword_full <= 0.0 and profile.fusion.keyword_full_code <= 0.0:
        return None
    if not any(r.name == "semantic" and r.ran and r.hits for r in runs):
        return None
    run = next((r for r in runs if r.name == "keyword" and r.ran and r.hits), None)
    if run is None:
        return None
    pks = [h.pk for h in run.hits]
    # Eval replay (the arm-hit cache): the measure depends only on the query, the scope,
    # the keyword arm's hits and the data, so a grid reads it once per query.
    cache = conn_cache(conn).setdefault("keyword_coverage", {}) if cached else None
    key = (query, scope_sql.where, scope_sql.params, tuple(pks))
    if cache is not None and key in cache:
        return cache[key]
    n_passages = scope_counts(conn, scope_sql)[1]    # bm25's N: every row of passages_fts
    best = passages_evidence(conn, query, pks, n_passages).best
    if cache is not None:
        if len(cache) >= 8192:
            cache.clear()
        cache[key] = best
    return best


def _code_share(runs: list, meta: Mapping[int, Any], profile: Profile) -> float | None:
    """The share of the semantic arm's hits whose record is code (the extra code_queries'
    evidence, ``memo.retrieve.fusion.adaptive``), from the candidates' meta; None when the
    extra is off or the semantic arm returned nothing."""
    if profile.fusion.keyword_full_code <= 0.0:
        return None
    run = next((r for r in runs if r.name == "semantic" and r.ran and r.hits), None)
    if run is None:
        return None
    kinds = [meta[h.pk].kind for h in run.hits if h.pk in meta]
    return sum(1 for k in kinds if k == "code") / len(kinds) if kinds else None


def _keyword_evidence(conn: sqlite3.Connection, query: str, scope_sql: Any, pks: Any, fact_ids: Any) -> tuple:
    """Abstention rule 2's measure (memo.retrieve.evidence), in this search's snapshot."""
    n_passages = scope_counts(conn, scope_sql)[1]    # bm25's N: every row of passages_fts
    return (passages_evidence(conn, query, pks, n_passages) if pks else None,
            facts_evidence(conn, query, fact_ids) if fact_ids else None)


def _take_startup_ms(services: ArmServices) -> dict[str, float]:
    """{"model_load": ms, "matrix_load": ms} spent by the semantic service during this
    search (empty when nothing loaded: a warm process, or keyword/exact mode)."""
    take = getattr(services.semantic, "take_startup_ms", None)
    return take() if take is not None else {}


def _model_id(services: ArmServices) -> str | None:
    svc = services.semantic
    return getattr(svc, "model_id", None) if svc is not None else None


def _pending_in_scope(ctx: ArmContext, runs: list, services: ArmServices) -> int:
    """In-scope passages without a vector for the model the semantic arm ran with: the
    arm cannot see them (the keyword arms can).  Counted by the backend in the search's
    read snapshot (``vectors_pending``), cached per connection until the data changes
    (``conn_cache``); a service without ``pending_in_scope`` (test fakes) reports none."""
    svc = services.semantic
    if getattr(svc, "pending_in_scope", None) is None or not any(r.name == "semantic" and r.ran for r in runs):
        return 0
    cache = conn_cache(ctx.conn).setdefault("pending_in_scope", {})
    key = (_model_id(services), ctx.scope_sql.where, ctx.scope_sql.params)
    if key not in cache:
        if len(cache) > 64:
            cache.clear()
        cache[key] = backend_of(ctx.conn).vectors_pending(ctx, svc)
    return cache[key]
