"""memo.metrics loads prometheus_client on first need (issue 31.2): searches observed
before that are replayed, in order, when the metrics are made, so every figure is what it
would have been; a process that only searches (``memo search``) never imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, sys
from types import SimpleNamespace as Arm
from memo import metrics
arms = [Arm(name="keyword", ran=True, degraded=False, latency_ms=2.0),
        Arm(name="semantic", ran=False, degraded=True, latency_ms=0.0)]
n, stop_after = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    if i == stop_after:
        metrics.stop_recording()
    metrics.observe_search(profile="zscore", mode="keyword", latency_ms=3.0 + i, arms=arms,
                           degraded=["arm_unavailable", "arm_unavailable"], empty_cause=None if i else "no_match")
loaded = "prometheus_client" in sys.modules
snap = metrics.snapshot()
print(json.dumps({"loaded_before": loaded, "snap": snap}))
"""


def _run(n: int, stop_after: int = -1) -> dict:
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(n), str(stop_after)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _value(snap: dict, name: str, **labels: str) -> float:
    return next(s["value"] for s in snap[name] if s["labels"] == labels)


def test_observations_wait_for_the_metrics_and_count_once_made() -> None:
    for n, loaded in ((3, False), (300, True)):      # past _PENDING_MAX (256) the metrics are made
        out = _run(n)
        assert out["loaded_before"] is loaded
        snap = out["snap"]
        assert _value(snap, "memo_searches_total", profile="zscore") == n
        assert _value(snap, "memo_search_degraded_total", reason="arm_unavailable") == n   # once per search
        assert _value(snap, "memo_search_empty_total", cause="no_match") == 1
        assert _value(snap, "memo_arm_runs_total", arm="keyword", outcome="ran") == n
        assert _value(snap, "memo_arm_runs_total", arm="semantic", outcome="degraded") == n
        latency = next(s for s in snap["memo_search_latency_seconds"] if s["labels"] == {"mode": "keyword"})
        assert latency["count"] == n
        assert abs(latency["sum"] - sum(3.0 + i for i in range(n)) / 1000.0) < 1e-9
        assert _value(snap, "memo_arm_runs_total", arm="graph", outcome="skipped") == 0   # known series at zero


def test_a_process_that_stops_recording_counts_no_later_search() -> None:
    """An eval replay's spawned workers (memo_eval.replay._pool_worker) count nothing."""
    snap = _run(5, stop_after=2)["snap"]
    assert _value(snap, "memo_searches_total", profile="zscore") == 2
    assert _value(snap, "memo_arm_runs_total", arm="keyword", outcome="ran") == 2


def _stats_metrics(tmp_path, **env: str) -> dict:
    """``memo stats --json``'s ``metrics`` from a fresh process (no search run)."""
    from memo.store.db import open_db

    db = tmp_path / "m.db"
    if not db.exists():
        open_db(db).close()
    res = subprocess.run([sys.executable, "-m", "memo", "stats", "--json"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "MEMO_DB": str(db), **env})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["metrics"]


def test_every_known_series_is_at_zero_before_the_first_search(tmp_path) -> None:
    """memo_searches_total (default + shipped profiles) and memo_search_empty_total (every
    cause) exist at zero like the other counters: `memo stats --json` lists them, rate() sees
    the first increment."""
    from memo.profile import shipped_profile_dir
    from memo.retrieve.empty import EMPTY_CAUSES

    snap = _stats_metrics(tmp_path)
    shipped = {p.stem for p in shipped_profile_dir().glob("*.toml")}
    assert {"zscore", "rrf"} <= shipped
    searches = {s["labels"]["profile"]: s["value"] for s in snap["memo_searches_total"]}
    assert searches == dict.fromkeys(shipped, 0.0)
    assert next(iter(searches)) == "zscore"                          # the default profile first
    assert {s["labels"]["cause"]: s["value"] for s in snap["memo_search_empty_total"]} == \
        dict.fromkeys(EMPTY_CAUSES, 0.0)
    # $MEMO_PROFILE's profile (a user's name, or a path: its stem) is known from the start too
    for chosen, label in (("mine", "mine"), (str(tmp_path / "team.toml"), "team")):
        snap = _stats_metrics(tmp_path, MEMO_PROFILE=chosen)
        assert snap["memo_searches_total"][0] == {"labels": {"profile": label}, "value": 0.0}
