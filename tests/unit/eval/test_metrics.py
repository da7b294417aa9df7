"""memo's metrics against trec_eval on a hand-made run, and against an independent
small implementation written here from the textbook definitions."""

from __future__ import annotations

import math

import ir_measures
import pytest
from ir_measures import RR, R, nDCG

from memo_eval.metrics import MEASURES, abstention, aggregate, per_query

QRELS = {
    "q1": {"d1": 1, "d3": 2, "d9": 1},        # graded
    "q2": {"d5": 1},                          # relevant doc never retrieved
    "q3": {"d2": 1},                          # relevant at rank 12: outside @10, inside @100
    "q4": {"d7": 1},                          # empty result list (abstained)
}
RANKED = {
    "q1": ["d3", "d4", "d1", "d8"],
    "q2": ["d1", "d2"],
    "q3": [f"x{i}" for i in range(11)] + ["d2"],
    "q4": [],
}


def _dcg(gains):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def independent(qrels, ranked):
    """Textbook definitions, written without looking at trec_eval's code."""
    out = {}
    for q, rel in qrels.items():
        ranking = ranked.get(q, [])
        gains = [rel.get(d, 0) for d in ranking[:10]]
        ideal = sorted(rel.values(), reverse=True)[:10]
        ndcg = _dcg(gains) / _dcg(ideal)
        hits10 = sum(1 for d in ranking[:10] if d in rel)
        hits100 = sum(1 for d in ranking[:100] if d in rel)
        rr = next((1 / (i + 1) for i, d in enumerate(ranking[:10]) if d in rel), 0.0)
        out[q] = {"ndcg_10": ndcg, "recall_10": hits10 / len(rel), "recall_100": hits100 / len(rel),
                  "rr_10": rr}
    return out


def test_hand_computed_values():
    got = per_query(QRELS, RANKED)
    # q1: gains (2, 0, 1, 0); ideal (2, 1, 1)
    dcg = 2 + 1 / math.log2(4)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert got["q1"]["ndcg_10"] == pytest.approx(dcg / idcg)
    assert got["q1"]["recall_10"] == pytest.approx(2 / 3)
    assert got["q1"]["rr_10"] == 1.0
    assert got["q2"] == dict.fromkeys(MEASURES, 0.0)
    assert got["q3"]["recall_10"] == 0.0 and got["q3"]["recall_100"] == 1.0
    assert got["q3"]["rr_10"] == 0.0           # rank 12 does not count for RR@10
    assert got["q4"] == dict.fromkeys(MEASURES, 0.0)


def test_matches_independent_and_ir_measures():
    got = per_query(QRELS, RANKED)
    ref = independent(QRELS, RANKED)
    for q in QRELS:
        for m in MEASURES:
            assert got[q][m] == pytest.approx(ref[q][m]), (q, m)
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in RANKED.items() if r}
    names = {"ndcg_10": nDCG @ 10, "recall_10": R @ 10, "recall_100": R @ 100, "rr_10": RR @ 10}
    for m in ir_measures.iter_calc(list(names.values()), QRELS, run):
        ours = next(k for k, v in names.items() if v == m.measure)
        assert got[m.query_id][ours] == pytest.approx(m.value)


def test_order_is_memos_not_doc_ids():
    # Two docs; memo ranks the alphabetically later one first: trec_eval must keep it.
    got = per_query({"q": {"a": 1}}, {"q": ["b", "a"]})
    assert got["q"]["rr_10"] == 0.5


def test_abstention_and_aggregate():
    answerable = {"q1": True, "q2": True, "u1": False, "u2": False}
    abstained = {"q2": True, "u1": True}
    ab = abstention(answerable, abstained)
    assert (ab.precision, ab.recall, ab.correct) == (0.5, 0.5, 1)
    metrics = {"q1": dict.fromkeys(MEASURES, 1.0), "q2": dict.fromkeys(MEASURES, 0.0),
               "u1": dict.fromkeys(MEASURES, 0.0)}
    agg = aggregate(metrics, answerable, abstained, {"q1": "1", "q2": "1", "u1": "5", "u2": "5"})
    assert agg["ndcg_10"] == 0.5 and agg["n_scored"] == 2      # unanswerable not averaged
    assert agg["by_category"]["5"]["abstain_recall"] == 0.5
    assert agg["by_category"]["1"]["recall_10"] == 0.5
    empty = abstention({"q": True}, {})
    assert (empty.precision, empty.recall) == (None, None)
