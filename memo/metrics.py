"""Prometheus metrics (prometheus-client), defined once here.

Every search through the pipeline (``memo.retrieve.search``, called by the CLI, MCP and
the web UI alike) calls ``observe_search``.  The values live in this process's registry:

* ``memo web`` serves them at ``GET /metrics`` (Prometheus text exposition);
* ``memo-mcp`` (stdio, or Streamable HTTP with ``--http``, which serves MCP only: no
  ``/metrics`` route) returns them in
  ``memory_stats`` (``metrics``) and as the MCP resource ``memo://metrics`` (the same text
  exposition);
* ``memo stats --json`` prints ``metrics`` too: a CLI process has run no search, so its
  counters are zero there, but ``memo_vectors_pending`` is read from the database.

| metric | type | labels |
|---|---|---|
| ``memo_searches_total`` | counter | ``profile`` (``known_profiles()`` at zero from the start) |
| ``memo_search_degraded_total`` | counter | ``reason``: ``arm_unavailable`` (an arm that should run could not: no model), ``vectors_pending`` (some in-scope passages have no vector yet) |
| ``memo_search_empty_total`` | counter | ``cause`` (memo.types.EMPTY_CAUSES) |
| ``memo_search_latency_seconds`` | histogram | ``mode`` |
| ``memo_arm_runs_total`` | counter | ``arm``, ``outcome`` (``ran``, ``skipped``, ``degraded``) |
| ``memo_arm_latency_seconds`` | histogram | ``arm`` (arms that ran) |
| ``memo_vectors_pending`` | gauge | ``model``: live passages without a vector (set by ``set_pending``) |
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from memo.profile import shipped_profile_dir
from memo.types import ARM_NAMES, EMPTY_CAUSES, MODES, default_profile

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

# Search latency: 1 ms .. 10 s (a keyword search is a few ms, a cold semantic one ~100 ms).
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_ARM_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

DEGRADED_REASONS = ("arm_unavailable", "vectors_pending")
ARM_OUTCOMES = ("ran", "skipped", "degraded")

_FAMILIES = ("memo_searches", "memo_search_degraded", "memo_search_empty", "memo_search_latency_seconds",
             "memo_arm_runs", "memo_arm_latency_seconds", "memo_vectors_pending")

# prometheus_client (with the http.server, email and wsgiref it imports) is loaded on first
# need: a scrape, a snapshot, an attribute below (``metrics.SEARCHES``...), or
# ``_PENDING_MAX`` searches.  Until then a search's observation waits in ``_PENDING`` and is
# replayed, in order, into the metrics when they are made, so every figure is what it would
# have been; a one-shot ``memo search`` process never pays the import (issue 31.2).
_METRICS = ("SEARCHES", "SEARCH_DEGRADED", "SEARCH_EMPTY", "SEARCH_LATENCY", "ARM_RUNS", "ARM_LATENCY",
            "VECTORS_PENDING", "CONTENT_TYPE", "REGISTRY")
SEARCHES: Any          # declared for type checkers; made by _load
SEARCH_DEGRADED: Any
SEARCH_EMPTY: Any
SEARCH_LATENCY: Any
ARM_RUNS: Any
ARM_LATENCY: Any
VECTORS_PENDING: Any
CONTENT_TYPE: str
REGISTRY: CollectorRegistry
_PENDING: list[dict[str, Any]] = []
_PENDING_MAX = 256
_LOADED = False
_LOAD_LOCK = threading.RLock()


def __getattr__(name: str) -> Any:
    # Load-time deferral (see _load), not a cycle: prometheus_client imports nothing of memo's.
    if name in _METRICS:
        _load()
        return globals()[name]
    raise AttributeError(f"module 'memo.metrics' has no attribute {name!r}")


def _load() -> None:
    """Make the metrics (once), then replay the observations that waited."""
    global _LOADED, SEARCHES, SEARCH_DEGRADED, SEARCH_EMPTY, SEARCH_LATENCY, ARM_RUNS, ARM_LATENCY
    global VECTORS_PENDING, CONTENT_TYPE, REGISTRY
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram
        from prometheus_client import REGISTRY as _REGISTRY

        CONTENT_TYPE, REGISTRY = CONTENT_TYPE_LATEST, _REGISTRY   # re-exported for the servers
        SEARCHES = Counter("memo_searches", "Searches run through the pipeline.", ["profile"])
        SEARCH_DEGRADED = Counter(
            "memo_search_degraded",  # exported as memo_search_degraded_total
            "Searches that ran without an arm they should have used (e.g. no embedding model), or "
            "whose semantic arm could not see every in-scope passage (vectors pending).",
            ["reason"],
        )
        SEARCH_EMPTY = Counter("memo_search_empty", "Searches that returned no result, by cause.", ["cause"])
        SEARCH_LATENCY = Histogram("memo_search_latency_seconds",
                                   "Search latency (trace.latency_ms: model and matrix loading excluded).",
                                   ["mode"], buckets=_LATENCY_BUCKETS)
        ARM_RUNS = Counter("memo_arm_runs", "Retrieval arm runs per search, by outcome.", ["arm", "outcome"])
        ARM_LATENCY = Histogram("memo_arm_latency_seconds", "Latency of the arms that ran.", ["arm"],
                                buckets=_ARM_BUCKETS)
        VECTORS_PENDING = Gauge("memo_vectors_pending", "Live passages without a vector for the model "
                                "(memo backfill embeds them).", ["model"])
        # Every known series starts at zero, so a scrape (and ``memo stats --json``) lists them
        # all before the first search, and rate() sees the first increment.
        for profile in known_profiles():
            SEARCHES.labels(profile=profile)
        for cause in EMPTY_CAUSES:
            SEARCH_EMPTY.labels(cause=cause)
        for reason in DEGRADED_REASONS:
            SEARCH_DEGRADED.labels(reason=reason)
        for mode in MODES:
            SEARCH_LATENCY.labels(mode=mode)
        for arm in ARM_NAMES:
            ARM_LATENCY.labels(arm=arm)
            for outcome in ARM_OUTCOMES:
                ARM_RUNS.labels(arm=arm, outcome=outcome)
        for waiting in _PENDING:
            _observe(**waiting)
        _PENDING.clear()
        _LOADED = True


def known_profiles() -> tuple[str, ...]:
    """The ``profile`` values of ``memo_searches_total`` that exist at zero from the start: the
    default profile (``$MEMO_PROFILE``, else zscore) then every shipped profile.  Another
    profile (a user's file, a path) gets its series when a search counts one."""
    default = default_profile()
    if default.endswith(".toml") or "/" in default or "\\" in default:   # a path: the profile is named by its stem
        default = PurePath(default).stem
    return tuple(dict.fromkeys([default, *sorted(p.stem for p in shipped_profile_dir().glob("*.toml"))]))


# Labelled children, resolved once: ``Metric.labels`` validates and locks on every call, and
# every search (thousands a second in an eval grid) asks for ~10 of them.
_CHILDREN: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *values: str) -> Any:
    key = (metric, *values)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*values)
    return child


# False in a process whose searches are not anyone's traffic (``stop_recording``).
_RECORDING = True


def stop_recording() -> None:
    """Count no more searches in this process: an eval replay's workers run thousands of
    searches a second that no scrape ever reads, and counting each cost ~4% of a cached one."""
    global _RECORDING
    _RECORDING = False


def observe_search(*, profile: str, mode: str, latency_ms: float, arms: Iterable[Any],
                   degraded: Iterable[str] = (), empty_cause: str | None = None) -> None:
    """Count one search.  ``arms``: the pipeline's ArmRun values (name, ran, degraded,
    latency_ms); ``degraded``: the ``memo_search_degraded_total`` reasons this search
    counts (once each)."""
    if not _RECORDING:
        return
    seen = {"profile": profile, "mode": mode, "latency_ms": latency_ms, "degraded": tuple(degraded),
            "empty_cause": empty_cause,
            "arms": tuple((a.name, a.ran, bool(getattr(a, "degraded", False)), a.latency_ms) for a in arms)}
    if not _LOADED:
        with _LOAD_LOCK:
            if not _LOADED and len(_PENDING) < _PENDING_MAX:
                _PENDING.append(seen)
                return
        _load()
    _observe(**seen)


def _observe(*, profile: str, mode: str, latency_ms: float, arms: tuple[tuple[str, bool, bool, float], ...],
             degraded: tuple[str, ...], empty_cause: str | None) -> None:
    _child(SEARCHES, profile).inc()
    _child(SEARCH_LATENCY, mode).observe(max(0.0, latency_ms) / 1000.0)
    for reason in dict.fromkeys(degraded):
        _child(SEARCH_DEGRADED, reason).inc()
    for name, ran, was_degraded, arm_ms in arms:
        if ran:
            _child(ARM_RUNS, name, "ran").inc()
            _child(ARM_LATENCY, name).observe(max(0.0, arm_ms) / 1000.0)
        else:
            _child(ARM_RUNS, name, "degraded" if was_degraded else "skipped").inc()
    if empty_cause is not None:
        _child(SEARCH_EMPTY, empty_cause).inc()


def set_pending(pending: Mapping[str, int]) -> None:
    """``memo_vectors_pending`` from a stats report's ``pending_vectors`` (model -> count)."""
    _load()
    for model, count in pending.items():
        VECTORS_PENDING.labels(model=model).set(count)


def stats_metrics(pending: Mapping[str, int]) -> dict[str, Any]:
    """``metrics`` of a stats document (``memo stats --json``, ``memory_stats``,
    ``/api/stats``): ``set_pending`` from the report's ``pending_vectors``, then ``snapshot``."""
    set_pending(pending)
    return snapshot()


def exposition(registry: CollectorRegistry | None = None) -> bytes:
    """The Prometheus text exposition of every metric in the process (``/metrics``)."""
    _load()
    from prometheus_client import generate_latest

    return generate_latest(REGISTRY if registry is None else registry)


def snapshot(registry: CollectorRegistry | None = None) -> dict[str, Any]:
    """memo's metrics as JSON (``memo stats --json``, ``memory_stats``), by exported name:
    counters and gauges ``[{"labels": {...}, "value": x}]``; histograms
    ``[{"labels": {...}, "count": n, "sum": seconds, "buckets": {"<le>": cumulative count}}]``."""
    _load()
    out: dict[str, list[dict[str, Any]]] = {}
    for family in (REGISTRY if registry is None else registry).collect():
        if family.name not in _FAMILIES:
            continue
        if family.type == "histogram":
            series: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
            for smp in family.samples:
                labels = {k: v for k, v in smp.labels.items() if k != "le"}
                entry = series.setdefault(tuple(sorted(labels.items())),
                                          {"labels": labels, "count": 0, "sum": 0.0, "buckets": {}})
                if smp.name.endswith("_bucket"):
                    entry["buckets"][smp.labels["le"]] = int(smp.value)
                elif smp.name.endswith("_count"):
                    entry["count"] = int(smp.value)
                elif smp.name.endswith("_sum"):
                    entry["sum"] = smp.value
            out[family.name] = list(series.values())
            continue
        for smp in family.samples:
            if not smp.name.endswith("_created"):
                out.setdefault(smp.name, []).append({"labels": dict(smp.labels), "value": smp.value})
    return out
