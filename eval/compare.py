"""``memo eval compare RUN_A RUN_B``: per-query paired comparison of two runs.

Queries are paired by id (intersection of the two runs' scored queries: answerable and
judged).  For each metric: means, the mean difference (B - A), a paired t-test and a
Wilcoxon signed-rank test (scipy), and wins / losses / ties of B against A.  The biggest
movers list the queries whose metric changed most, with where the first relevant result
sat in each run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo_eval.traces import METRIC_COLUMNS, duck

TIE_EPS = 1e-9


def _p(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def paired_tests(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    from scipy import stats

    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    out: dict[str, Any] = {"n": n, "mean_a": sum(a) / n if n else None, "mean_b": sum(b) / n if n else None,
                           "delta": sum(diffs) / n if n else None,
                           "wins": sum(1 for d in diffs if d > TIE_EPS),
                           "losses": sum(1 for d in diffs if d < -TIE_EPS),
                           "ties": sum(1 for d in diffs if abs(d) <= TIE_EPS)}
    if n < 2 or all(abs(d) <= TIE_EPS for d in diffs):
        # Identical runs: no evidence of any difference.
        out.update(t_stat=None, t_p=1.0 if n else None, wilcoxon_stat=None, wilcoxon_p=1.0 if n else None)
        return out
    t = stats.ttest_rel(b, a)
    out.update(t_stat=_p(t.statistic), t_p=_p(t.pvalue))
    try:
        w = stats.wilcoxon(b, a, zero_method="wilcox")
        out.update(wilcoxon_stat=_p(w.statistic), wilcoxon_p=_p(w.pvalue))
    except ValueError:
        out.update(wilcoxon_stat=None, wilcoxon_p=None)
    return out


def compare_runs(run_a: Path, run_b: Path, *, metric: str = "ndcg_10", movers: int = 10,
                 alpha: float = 0.05) -> dict[str, Any]:
    if metric not in METRIC_COLUMNS:
        raise DatasetError(f"unknown metric {metric!r}", hint=f"one of {', '.join(METRIC_COLUMNS)}")
    con = duck([run_a, run_b])
    meta = con.execute("SELECT run_id, label, dataset, split, dataset_hash FROM runs").fetchall()
    ids = {Path(run_a).name, Path(run_b).name}
    info = {r[0]: {"label": r[1], "dataset": r[2], "split": r[3], "dataset_hash": r[4]} for r in meta}
    id_a, id_b = Path(run_a).name, Path(run_b).name
    if id_a == id_b or len(ids) != 2 or id_a not in info or id_b not in info:
        raise DatasetError("compare needs two different runs")
    cols = ", ".join(f"a.{m} AS a_{m}, b.{m} AS b_{m}" for m in METRIC_COLUMNS)
    rows = con.execute(f"""
        SELECT a.qid, a.query, a.category, a.first_relevant_rank, b.first_relevant_rank, {cols}
        FROM queries a JOIN queries b ON a.qid = b.qid
        WHERE a.run_id = ? AND b.run_id = ? AND a.answerable AND a.n_relevant > 0
          AND a.{metric} IS NOT NULL AND b.{metric} IS NOT NULL
        ORDER BY a.qid""", [id_a, id_b]).fetchall()
    if not rows:
        raise DatasetError("the two runs share no scored query", hint="compare runs of the same data set and split")
    names = ["qid", "query", "category", "first_a", "first_b"] + [f"{s}_{m}" for m in METRIC_COLUMNS for s in "ab"]
    recs = [dict(zip(names, r, strict=True)) for r in rows]
    per_metric = {}
    for m in METRIC_COLUMNS:
        res = paired_tests([r[f"a_{m}"] for r in recs], [r[f"b_{m}"] for r in recs])
        p = res.get("wilcoxon_p") if res.get("wilcoxon_p") is not None else res.get("t_p")
        res["significant"] = bool(p is not None and p < alpha)
        per_metric[m] = res
    moved = sorted(recs, key=lambda r: -abs(r[f"b_{metric}"] - r[f"a_{metric}"]))[:movers]
    return {
        "a": {"run_id": id_a, **info[id_a]}, "b": {"run_id": id_b, **info[id_b]},
        "same_query_set": info[id_a]["dataset_hash"] == info[id_b]["dataset_hash"],
        "paired_queries": len(recs), "metric": metric, "alpha": alpha, "metrics": per_metric,
        "movers": [{"qid": r["qid"], "query": r["query"], "category": r["category"],
                    "a": r[f"a_{metric}"], "b": r[f"b_{metric}"], "delta": r[f"b_{metric}"] - r[f"a_{metric}"],
                    "first_relevant_a": r["first_a"], "first_relevant_b": r["first_b"]}
                   for r in moved if abs(r[f"b_{metric}"] - r[f"a_{metric}"]) > TIE_EPS],
    }


def pair_runs(a: Sequence[Path], b: Sequence[Path], baseline: str | None = None) -> list[tuple[Path, Path]]:
    """(baseline, candidate) pairs from two references that may each be a run or a batch.

    * one run A, runs B...: A against each B;
    * a batch alone (``b`` empty) with ``baseline`` = a label or run id in it: that run
      against every other run of the batch;
    * two batches: runs paired by label (the same profile and overrides in both).
    """
    from memo_eval.traces import duck

    def labels(paths: Sequence[Path]) -> dict[str, Path]:
        con = duck(list(paths))
        got = dict(con.execute("SELECT run_id, label FROM runs").fetchall())
        return {str(got[p.name]): p for p in paths}

    if not b:
        if baseline is None:
            if len(a) == 2:
                return [(a[0], a[1])]
            raise DatasetError("compare needs two runs, or a batch and --baseline LABEL")
        by_label = labels(a)
        base = by_label.get(baseline) or next((p for p in a if p.name == baseline or p.name.startswith(baseline)),
                                              None)
        if base is None:
            raise DatasetError(f"no run labelled {baseline!r} in that batch",
                               hint="labels: " + ", ".join(sorted(by_label)))
        return [(base, p) for p in a if p != base]
    if len(a) == 1:
        return [(a[0], p) for p in b if p != a[0]]
    la, lb = labels(a), labels(b)
    shared = [k for k in la if k in lb]
    if not shared:
        raise DatasetError("the two batches share no run label", hint="compare runs one by one")
    return [(la[k], lb[k]) for k in shared]
