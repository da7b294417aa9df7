"""Prometheus metrics (prometheus-client).  Counters live in the process registry; the
MCP/web servers expose them, the CLI reports them in ``--json`` traces."""

from __future__ import annotations

from prometheus_client import Counter

SEARCH_DEGRADED = Counter(
    "memo_search_degraded",  # exported as memo_search_degraded_total
    "Searches that ran without an arm they should have used (e.g. no embedding model).",
    ["reason"],
)
SEARCHES = Counter("memo_searches", "Searches run through the pipeline.", ["profile"])
