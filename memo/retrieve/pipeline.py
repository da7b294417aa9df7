"""The search pipeline, listed once, in the seed's order:

    1 scope filter ─▶ 2 arms ─▶ 3 fusion ─▶ 4 recency ─▶ 5 abstention
    ─▶ 6 cutoff ─▶ 7 limit ─▶ 8 token budget ─▶ 9 results + why + trace

Every search (library, CLI, MCP server) calls ``search``.  Stages 3-8 are pure functions
(one file each); the only I/O is the scope count, the arms' own queries, and two batched
reads (``fetch``).  Every drop is recorded in the trace with its stage and reason.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from memo import metrics
from memo.profile import Profile, load_profile
from memo.retrieve.abstention import abstain
from memo.retrieve.arms import ARMS
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.budget import pack
from memo.retrieve.cutoff import cutoff
from memo.retrieve.fetch import fetch_meta, fetch_rows
from memo.retrieve.fusion import fuse
from memo.retrieve.limit import limit as limit_stage
from memo.retrieve.narrow import narrow_hint
from memo.retrieve.recency import apply_recency
from memo.retrieve.results import build_results
from memo.retrieve.run_arms import run_arms
from memo.retrieve.scope import build_scope_sql, scope_counts
from memo.retrieve.types import ArmTrace, Drop, SearchRequest, SearchResponse, Trace
from memo.retrieve.validate import check_request
from memo.store.connect import read_tx

DEFAULT_MODEL_ID = "all-minilm-l6-v2-int8"
NOT_FOUND_HINT = "not in the knowledge base: rephrase, widen the scope, or add the information"


def search(conn: sqlite3.Connection, request: SearchRequest, profile: Profile | str = "rrf",
           services: dict[str, Any] | None = None) -> SearchResponse:
    """Run the pipeline inside one read snapshot (``read_tx``): the scope filter, every
    arm's top-k and the row fetches all see the same committed state, so a write landing
    mid-search can neither leak an out-of-scope row nor drop a live one."""
    t_start = time.perf_counter()
    with read_tx(conn):
        return _search(conn, request, profile, services, t_start)


def _search(conn: sqlite3.Connection, request: SearchRequest, profile: Profile | str,
            services: dict[str, Any] | None, t_start: float) -> SearchResponse:
    clock = _Clock(t_start)
    if not hasattr(profile, "fusion"):
        profile = load_profile(profile)
    services = services or {}
    checked = check_request(request, profile)
    model_id = _model_id(services)
    bands = profile.models.get(model_id) if model_id else None
    drops: list[Drop] = []

    # 1 scope filter: a WHERE fragment each arm applies before its top-k
    scope_sql = build_scope_sql(request.scope)
    in_scope, total = scope_counts(conn, scope_sql)  # cached; arms reuse it (fts_topk)
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

    # 3 fusion
    fused = fuse([r for r in runs if r.ran], profile.fusion.method, profile.weights, profile.fusion.k)
    meta = fetch_meta(conn, (c.pk for c in fused))
    if len(meta) < len(fused):
        # An index row without a passage (a derived index out of step with the
        # canonical rows) is not a result.
        fused = [c for c in fused if c.pk in meta]
    clock.lap("fusion")

    # 4 recency (also orders the list: best first)
    rec = profile.recency
    ranked = apply_recency(fused, meta, floor=rec.floor, half_life_days=rec.half_life_days,
                           aging_kinds=rec.aging_kinds, now=checked.now)
    clock.lap("recency")

    # 5 abstention
    ranked, abstained_pks = abstain(ranked, bands.semantic_floor if bands is not None else None)
    if abstained_pks:
        drops.append(Drop("abstention", "only evidence a semantic similarity below semantic_floor "
                          f"{bands.semantic_floor if bands else ''}", len(abstained_pks), tuple(abstained_pks)))

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
    results = build_results(packed, fetch_rows(conn, (c.pk for c in packed)), meta, bands,
                            explain=checked.explain, now=checked.now, aging_kinds=rec.aging_kinds)
    narrow = narrow_hint(ranked, packed, meta, request.scope)
    clock.lap("results")
    degraded_reason = "; ".join(f"{r.name}: {r.reason}" for r in runs if r.degraded)
    if degraded_reason:
        metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable").inc()
    metrics.SEARCHES.labels(profile=profile.name).inc()
    reason = hint = None
    if not results:
        reason, hint = _empty_reason(runs, len(fused), abstained_pks, in_scope), NOT_FOUND_HINT
    trace = Trace(
        profile=profile.name, fusion=profile.fusion.method, mode=checked.mode, model_id=model_id,
        arms=tuple(ArmTrace(r.name, r.ran, r.reason, len(r.hits), r.latency_ms, _matched(r)) for r in runs),
        filter={"in_scope": in_scope, "total": total, "out_of_scope": total - in_scope},
        candidates=len(fused), cutoff_kind=cutoff_kind,
        budget={"used": used, "max": checked.max_tokens},
        degraded={"flag": bool(degraded_reason), "reason": degraded_reason or None},
        drops=tuple(drops), latency_ms=round((time.perf_counter() - t_start) * 1000.0 - sum(startup.values()), 3),
        limit=checked.limit, stage_ms={**clock.laps, **startup}, notes=checked.notes)
    return SearchResponse(query=checked.query, results=results, abstained=not results, reason=reason,
                          hint=hint, truncated=len(budget_pks) + len(limit_pks),
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


def _matched(run: Any) -> int | None:
    """Distinct voters behind an arm's candidates (fact arm: facts; entity and graph arms:
    entities); None for arms without votes."""
    voters = {v.voter for hit in run.hits for v in hit.votes}
    return len(voters) if voters else None


def _take_startup_ms(services: dict[str, Any]) -> dict[str, float]:
    """{"model_load": ms, "matrix_load": ms} spent by the semantic service during this
    search (empty when nothing loaded: a warm process, or keyword/exact mode)."""
    take = getattr(services.get("semantic"), "take_startup_ms", None)
    return take() if take is not None else {}


def _model_id(services: dict[str, Any]) -> str | None:
    svc = services.get("semantic")
    return getattr(svc, "model_id", None) if svc is not None else None


def _empty_reason(runs: list, n_fused: int, abstained: list[int], in_scope: int) -> str:
    if in_scope == 0:
        return "no passage is in scope"
    if not any(r.ran for r in runs):
        return "no retrieval arm could run"
    if n_fused == 0:
        return "no passage matched the query"
    if abstained and len(abstained) == n_fused:
        return f"all {n_fused} candidates were only weakly similar (below semantic_floor)"
    return "every candidate was dropped"
