"""``memo eval compare RUN_A RUN_B``: per-query paired comparison of two runs.

Only runs over the same questions are compared (the same ``dataset_hash``: corpus, queries
and qrels; ``same_questions``): query ids such as ``q1`` recur across data sets, and pairing
unrelated questions by id gives tests about nothing.  Each run is known by the id in its
``runs.parquet``, not by its folder's name, so a run folder copied elsewhere still compares.
Queries are paired by id (the two runs' scored queries: answerable and judged).  For each metric: means, the mean difference (B - A), a paired t-test and a
Wilcoxon signed-rank test (scipy), and wins / losses / ties of B against A.  The biggest
movers list the queries whose metric changed most, with where the first relevant result
sat in each run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memo.errors import DatasetError, ValidationError
from memo_eval.analysis import query_metric
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
    if max(diffs) - min(diffs) <= TIE_EPS * max(1.0, abs(out["delta"])):
        # B - A the same on every query (B = A + c): the differences have no spread, the
        # t statistic divides by zero and is undefined (scipy warns of catastrophic
        # cancellation and returns a meaningless huge t); the Wilcoxon test still ranks them.
        out.update(t_stat=None, t_p=None)
    else:
        t = stats.ttest_rel(b, a)
        out.update(t_stat=_p(t.statistic), t_p=_p(t.pvalue))
    try:
        w = stats.wilcoxon(b, a, zero_method="wilcox")
        out.update(wilcoxon_stat=_p(w.statistic), wilcoxon_p=_p(w.pvalue))
    except ValueError:
        out.update(wilcoxon_stat=None, wilcoxon_p=None)
    return out


_SHOWN = ("run_id", "label", "dataset", "split", "dataset_hash")    # what the result says of each run
# Besides: the query count (the refusal names it), the batch and the run's place in it (the
# report's replay order: ``memo_eval.report.replay_order``).
_INFO = (*_SHOWN, "n_queries", "batch_id", "batch_position", "db", "db_state")


def run_info(folder: Path) -> dict[str, Any]:
    """A run folder's identity, read from its ``runs.parquet`` (``_INFO``; None for a column
    an older run lacks)."""
    import pyarrow.parquet as pq

    row = pq.read_table(Path(folder) / "runs.parquet").to_pylist()[0]
    return {k: row.get(k) for k in _INFO}


def _described(info: dict[str, Any]) -> str:
    digest = str(info.get("dataset_hash") or "")[:12] or "unknown"
    return f"{info['dataset']}/{info['split']} ({info.get('n_queries')} queries, data set hash {digest})"


def same_questions(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Refuse two runs (``run_info``) that did not replay the same questions: another data
    set, split, ``--limit-queries`` or qrels.  Runs without a hash compare by data set and split."""
    if a.get("dataset_hash") and b.get("dataset_hash"):
        same = a["dataset_hash"] == b["dataset_hash"]
    else:
        same = (a["dataset"], a["split"]) == (b["dataset"], b["split"])
    if not same:
        raise DatasetError(f"A ran {_described(a)}, B ran {_described(b)}: not the same questions",
                           hint="compare runs of one data set and split, replayed with the same --limit-queries")


def _same_database(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Did both runs search the same database in the same state (``db``, ``db_state``: a
    user's database; a data set's own cached index has no state)?  None for runs that do
    not record it."""
    if not a.get("db") or not b.get("db"):
        return None
    return (a["db"], a.get("db_state")) == (b["db"], b.get("db_state"))


def _db_text(info: dict[str, Any]) -> str | None:
    if not info.get("db"):
        return None
    return f"{info['db']} ({info['db_state']})" if info.get("db_state") else str(info["db"])


def compare_runs(run_a: Path, run_b: Path, *, metric: str = "ndcg_10", movers: int = 10,
                 alpha: float = 0.05) -> dict[str, Any]:
    query_metric(metric)
    a, b = run_info(run_a), run_info(run_b)
    id_a, id_b = a["run_id"], b["run_id"]
    if id_a == id_b:
        raise ValidationError(f"A and B are the same run ({id_a})",
                              hint="compare it with another run of its data set and split")
    same_questions(a, b)
    con = duck([run_a, run_b])
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
        "a": {k: a[k] for k in _SHOWN}, "b": {k: b[k] for k in _SHOWN},
        "same_query_set": True,         # always, since same_questions (kept for readers of the JSON)
        # The same questions over another knowledge base (your own labels over two databases,
        # or one changed between the runs): compared all the same, and said (None: unknown).
        "same_database": _same_database(a, b),
        "a_db": _db_text(a), "b_db": _db_text(b),
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
    infos = {p: run_info(p) for p in dict.fromkeys([*a, *b])}

    def labels(paths: Sequence[Path]) -> dict[str, Path]:
        return {str(infos[p]["label"]): p for p in paths}

    def others(base: Path, paths: Sequence[Path]) -> list[tuple[Path, Path]]:
        pairs = [(base, p) for p in paths if infos[p]["run_id"] != infos[base]["run_id"]]
        if not pairs:
            raise ValidationError(f"run {infos[base]['run_id']} compared with itself: no other run given",
                                  hint="name another run of its data set and split, or a batch")
        return pairs

    if not b:
        if baseline is None:
            if len(a) == 2:
                return [(a[0], a[1])]
            raise DatasetError("compare needs two runs, or a batch and --baseline LABEL")
        by_label = labels(a)
        base = by_label.get(baseline) or next((p for p in a if str(infos[p]["run_id"]).startswith(baseline)), None)
        if base is None:
            raise DatasetError(f"no run labelled {baseline!r} in that batch",
                               hint="labels: " + ", ".join(sorted(by_label)))
        return others(base, a)
    if len(a) == 1:
        return others(a[0], b)
    la, lb = labels(a), labels(b)
    shared = [k for k in la if k in lb]
    if not shared:
        raise DatasetError("the two batches share no run label", hint="compare runs one by one")
    return [(la[k], lb[k]) for k in shared]
