"""Retrieval metrics from trec_eval (pytrec_eval), plus abstention precision / recall.

Memo's ranking is handed to trec_eval as scores that strictly decrease with rank, so
trec_eval's own ordering (score desc, then doc id) reproduces memo's order exactly.

* ``ndcg_10``    = trec_eval ``ndcg_cut_10`` (graded gains, log2 discount).
* ``recall_10``, ``recall_100`` = ``recall_10`` / ``recall_100``.
* ``rr_10``      = ``recip_rank`` over the top 10 only (MRR@10 per query).

Aggregates are means over the *answerable* queries that have qrels; a query with no
results scores 0 (trec_eval itself would silently skip it, inflating the mean).  A query
abstains when its response has zero results; abstention precision = unanswerable
abstentions / all abstentions, recall = unanswerable abstentions / unanswerable queries
(None when undefined).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

import pytrec_eval

MEASURES: tuple[str, ...] = ("ndcg_10", "recall_10", "recall_100", "rr_10")
_TREC = {"ndcg_10": "ndcg_cut_10", "recall_10": "recall_10", "recall_100": "recall_100"}


def as_trec_run(ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """qid -> ranked unit keys  ==>  qid -> {key: score}, score = n - rank (strictly decreasing)."""
    run: dict[str, dict[str, float]] = {}
    for qid, keys in ranked.items():
        n = len(keys)
        run[qid] = {k: float(n - i) for i, k in enumerate(keys)}
    return run


def per_query(qrels: Mapping[str, Mapping[str, int]],
              ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Metrics for every query that has qrels (missing or empty rankings score 0)."""
    judged = {q: dict(r) for q, r in qrels.items() if r}
    out = {q: dict.fromkeys(MEASURES, 0.0) for q in judged}
    run = {q: r for q, r in as_trec_run({q: ranked.get(q, ()) for q in judged}).items() if r}
    if not run:
        return out
    ev = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10", "recall.10,100"})
    for qid, vals in ev.evaluate(run).items():
        for ours, theirs in _TREC.items():
            out[qid][ours] = float(vals[theirs])
    top10 = {q: dict(sorted(r.items(), key=lambda kv: -kv[1])[:10]) for q, r in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"})
    for qid, vals in rr.evaluate(top10).items():
        out[qid]["rr_10"] = float(vals["recip_rank"])
    return out


@dataclass(frozen=True, slots=True)
class Abstention:
    unanswerable: int        # queries labelled "should abstain"
    abstained: int           # queries that returned zero results
    correct: int             # unanswerable and abstained
    precision: float | None
    recall: float | None


def abstention(answerable: Mapping[str, bool], abstained: Mapping[str, bool]) -> Abstention:
    n_un = sum(1 for q, a in answerable.items() if not a)
    n_ab = sum(1 for q in answerable if abstained.get(q, False))
    correct = sum(1 for q, a in answerable.items() if not a and abstained.get(q, False))
    return Abstention(unanswerable=n_un, abstained=n_ab, correct=correct,
                      precision=correct / n_ab if n_ab else None,
                      recall=correct / n_un if n_un else None)


def mean_metrics(values: Iterable[Mapping[str, float]]) -> dict[str, float | None]:
    rows = list(values)
    return {m: (fmean(r[m] for r in rows) if rows else None) for m in MEASURES}


def aggregate(metrics: Mapping[str, Mapping[str, float]], answerable: Mapping[str, bool],
              abstained: Mapping[str, bool], categories: Mapping[str, str | None] | None = None
              ) -> dict[str, object]:
    """The run's summary: means over answerable judged queries, abstention, per category."""
    scored = [q for q in metrics if answerable.get(q, True)]
    out: dict[str, object] = dict(mean_metrics(metrics[q] for q in scored))
    out["n_queries"] = len(answerable)
    out["n_scored"] = len(scored)
    ab = abstention(answerable, abstained)
    out.update({"abstain_precision": ab.precision, "abstain_recall": ab.recall,
                "n_unanswerable": ab.unanswerable, "n_abstained": ab.abstained})
    if categories and any(c is not None for c in categories.values()):
        per_cat: dict[str, dict[str, object]] = {}
        for cat in sorted({c for c in categories.values() if c is not None}, key=lambda c: (len(c), c)):
            qs = [q for q, c in categories.items() if c == cat]
            in_cat = {q: answerable.get(q, True) for q in qs}
            entry: dict[str, object] = {"n": len(qs)}
            judged = [q for q in qs if q in metrics and in_cat[q]]
            if judged:
                entry.update(mean_metrics(metrics[q] for q in judged))
                entry["n_scored"] = len(judged)
            # The run's rule, per category: precision whenever the category abstained (0.0
            # when only answerable queries did), recall whenever it has unanswerable ones.
            cab = abstention(in_cat, abstained)
            entry.update({"abstain_precision": cab.precision, "abstain_recall": cab.recall})
            per_cat[cat] = entry
        out["by_category"] = per_cat
    return out
