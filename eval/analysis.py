"""Analysis over run folders: SQL with DuckDB over the Parquet traces, frames with Polars.

Every function takes a DuckDB connection from ``memo_eval.traces.duck(folders)`` (views
``runs``, ``queries``, ``results``) and returns a Polars DataFrame, so ``memo eval report``,
the notebook (notebooks/eval_report.ipynb) and a user's own session share the same code::

    from memo_eval.traces import duck, resolve_runs
    from memo_eval import analysis as A
    con = duck(resolve_runs(["20261201T0506"]))       # a batch id, run ids or folders
    A.bootstrap_ci(A.per_query(con, "ndcg_10"), "ndcg_10")
    A.recall_at_k(con).filter(pl.col("k") == 10)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from memo.errors import ValidationError
from memo_eval.traces import METRIC_COLUMNS

RECALL_KS: tuple[int, ...] = (1, 2, 3, 5, 10, 20, 30, 50, 100)


def columns(con: Any, table: str) -> set[str]:
    return {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}


def query_metric(metric: str) -> str:
    """``metric`` if the query rows have it (``METRIC_COLUMNS``), else a ``ValidationError``
    naming them: abstention precision and recall are per run only, there is no per-query figure
    to pair, bootstrap or plot."""
    if metric not in METRIC_COLUMNS:
        raise ValidationError(f"--metric {metric!r} has no per-query values to compare or plot",
                              hint=f"use one of {', '.join(METRIC_COLUMNS)}")
    return metric


def per_query(con: Any, metric: str = "ndcg_10") -> pl.DataFrame:
    """run_id, qid, category, <metric> over the scored queries (answerable, with qrels)."""
    query_metric(metric)
    return con.sql(f"""SELECT run_id, qid, category, {metric} FROM queries
                       WHERE answerable AND n_relevant > 0 AND {metric} IS NOT NULL
                       ORDER BY run_id, qid""").pl()


def bootstrap_ci(frame: pl.DataFrame, metric: str, *, resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> pl.DataFrame:
    """Per run: mean and a percentile bootstrap CI over queries (resampled with
    replacement, ``resamples`` times, seeded: the same figures every time).  Each run draws
    from its own generator seeded with ``seed``, so its CI depends on its own per-query
    values only, not on which other runs are in the frame or in what order."""
    out = []
    for (run_id,), part in frame.group_by(["run_id"], maintain_order=True):
        vals = part[metric].to_numpy().astype(float)
        n = len(vals)
        if n == 0:
            continue
        rng = np.random.default_rng(seed)
        means = vals[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
        out.append({"run_id": run_id, "n": n, "mean": float(vals.mean()), "ci_low": float(lo), "ci_high": float(hi)})
    return pl.DataFrame(out, schema={"run_id": pl.Utf8, "n": pl.Int64, "mean": pl.Float64,
                                     "ci_low": pl.Float64, "ci_high": pl.Float64})


def query_deltas(frame: pl.DataFrame, metric: str, baseline: str) -> pl.DataFrame:
    """run_id, qid, delta = run - baseline per query (paired by qid; the baseline excluded)."""
    base = frame.filter(pl.col("run_id") == baseline).select("qid", pl.col(metric).alias("_base"))
    return (frame.filter(pl.col("run_id") != baseline).join(base, on="qid", how="inner")
            .select("run_id", "qid", (pl.col(metric) - pl.col("_base")).alias("delta")))


def recall_at_k(con: Any, ks: Sequence[int] = RECALL_KS) -> pl.DataFrame:
    """run_id, k, recall: mean over scored queries of the share of their relevant units in
    the top k of the de-duplicated unit ranking (k up to the eval's 100 results)."""
    karr = "[" + ", ".join(str(int(k)) for k in ks) + "]"
    return con.sql(f"""
        WITH units AS (          -- first (best) rank of each unit: the scoring order
            SELECT run_id, qid, doc_id, min(rank) AS best, max(relevant) AS relevant
            FROM results GROUP BY run_id, qid, doc_id),
        ranked AS (
            SELECT run_id, qid, relevant, row_number() OVER (PARTITION BY run_id, qid ORDER BY best) AS urank
            FROM units),
        scored AS (SELECT run_id, qid, n_relevant FROM queries WHERE answerable AND n_relevant > 0),
        ks AS (SELECT unnest({karr}) AS k),
        hits AS (SELECT r.run_id, r.qid, ks.k, count(*) AS n FROM ranked r JOIN ks ON r.urank <= ks.k
                 WHERE r.relevant > 0 GROUP BY r.run_id, r.qid, ks.k)
        SELECT s.run_id, ks.k, avg(coalesce(h.n, 0) / s.n_relevant) AS recall
        FROM scored s CROSS JOIN ks LEFT JOIN hits h ON h.run_id = s.run_id AND h.qid = s.qid AND h.k = ks.k
        GROUP BY s.run_id, ks.k ORDER BY s.run_id, ks.k""").pl()


def by_category(con: Any, metric: str = "recall_10") -> pl.DataFrame:
    """run_id, category, n, <metric> (answerable with evidence), abstentions."""
    return con.sql(f"""
        SELECT run_id, category, count(*) AS n,
               avg(CASE WHEN answerable AND n_relevant > 0 THEN {metric} END) AS {metric},
               sum(CASE WHEN NOT answerable THEN 1 ELSE 0 END) AS unanswerable,
               sum(CASE WHEN NOT answerable AND abstained THEN 1 ELSE 0 END) AS correct_abstentions,
               sum(CASE WHEN abstained THEN 1 ELSE 0 END) AS abstained
        FROM queries WHERE category IS NOT NULL GROUP BY run_id, category ORDER BY run_id, category""").pl()


def uncached_latency(con: Any) -> pl.DataFrame:
    """run_id, latency_ms of the searches whose arms really ran: a search served from the
    replay's arm cache (``arm_cached``) did not pay for its arms and is left out.  Traces
    written before the flag existed have no way to tell and are kept."""
    cached = "coalesce(arm_cached, false)" if "arm_cached" in columns(con, "queries") else "false"
    return con.sql(f"SELECT run_id, latency_ms FROM queries WHERE NOT {cached} ORDER BY run_id").pl()


def latency_table(frame: pl.DataFrame) -> pl.DataFrame:
    """run_id, n, p50, p95, max over ``uncached_latency``."""
    return (frame.group_by("run_id").agg(pl.len().alias("n"), pl.col("latency_ms").median().alias("p50_ms"),
                                         pl.col("latency_ms").quantile(0.95, "linear").alias("p95_ms"),
                                         pl.col("latency_ms").max().alias("max_ms"))
            .sort("run_id"))
