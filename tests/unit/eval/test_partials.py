"""memo_eval.partials against the walk over every row the replay's parent did before
(issue 34.1): the same grades, unit rankings, arm and factor coverage (bit for bit) and
result table, whichever way a run's queries are cut into tasks and in whatever order the
tasks come back."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.types import ARM_NAMES
from memo_eval.partials import fill_run_columns, merge, summarise
from memo_eval.traces import RESULT_FIELDS, RESULT_INDEX, results_table
from tests.fast_examples import examples

DOCS = ("d1", "d2", "d3", "d4", "d5")
FACTORS = ("recency", "speaker", "context")


def _rows(rng: random.Random, n_q: int) -> list[tuple[dict, list[list]]]:
    searched = []
    for qi in range(n_q):
        qid = f"q{qi}"
        rows = []
        for rank in range(1, rng.randint(0, 14) + 1):
            r = [None] * len(RESULT_FIELDS)
            r[RESULT_INDEX["qid"]], r[RESULT_INDEX["rank"]] = qid, rank
            r[RESULT_INDEX["doc_id"]] = rng.choice(DOCS)         # units repeat: passages of one doc
            r[RESULT_INDEX["pk"]] = rng.randint(1, 99)
            r[RESULT_INDEX["score"]] = rng.random()
            r[RESULT_INDEX["factors"]] = [{"name": f, "value": rng.choice((1.0, rng.random() + 0.5)), "label": None}
                                          for f in FACTORS if rng.random() < 0.5] or None
            for a in ARM_NAMES:
                if rng.random() < 0.6:
                    i = RESULT_INDEX[f"{a}_rank"]
                    r[i:i + 3] = (rng.randint(1, 50), rng.random(), rng.choice((0.0, rng.random() / 7)))
            rows.append(r)
        searched.append(({"qid": qid, "abstained": not rows}, rows))
    return searched


def _reference(searched, qrels):
    """The parent's walk before (memo_eval.run.score_run / arm_coverage / factor_coverage)."""
    rows = [list(r) for _, rr in searched for r in rr]
    ranked: dict[str, list[str]] = {}
    seen: dict[str, set[str]] = {}
    for r in rows:
        q, d = r[RESULT_INDEX["qid"]], r[RESULT_INDEX["doc_id"]]
        r[RESULT_INDEX["relevant"]] = int(qrels.get(q, {}).get(d, 0))
        if d not in seen.setdefault(q, set()):
            seen[q].add(d)
            ranked.setdefault(q, []).append(d)
    voted = {a: set() for a in ARM_NAMES}
    sums = dict.fromkeys(ARM_NAMES, 0.0)
    hit: dict[str, set[str]] = {}
    vals: dict[str, list[float]] = {}
    for r in rows:
        if r[RESULT_INDEX["rank"]] > 10:
            continue
        for a in ARM_NAMES:
            c = r[RESULT_INDEX[f"{a}_contribution"]]
            if c is not None and c > 0:
                voted[a].add(r[RESULT_INDEX["qid"]])
                sums[a] += c
        for f in r[RESULT_INDEX["factors"]] or ():
            if f["value"] != 1.0:
                hit.setdefault(f["name"], set()).add(r[RESULT_INDEX["qid"]])
                vals.setdefault(f["name"], []).append(f["value"])
    return rows, ranked, voted, sums, hit, vals


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 10_000), n_q=st.integers(1, 12), cuts=st.lists(st.integers(1, 11), max_size=5),
       order_seed=st.integers(0, 100))
def test_parts_merge_to_the_walk_over_every_row(seed, n_q, cuts, order_seed) -> None:
    rng = random.Random(seed)
    searched = _rows(rng, n_q)
    qrels = {f"q{i}": {d: rng.randint(0, 2) for d in rng.sample(DOCS, 2)} for i in range(n_q) if rng.random() < 0.8}
    ref_rows, ranked, voted, sums, hit, vals = _reference(searched, qrels)
    bounds = sorted({0, n_q, *(c for c in cuts if c < n_q)})
    parts = [summarise(lo, [(dict(q), [list(r) for r in rr]) for q, rr in searched[lo:hi]], qrels)
             for lo, hi in zip(bounds, bounds[1:], strict=False)]
    random.Random(order_seed).shuffle(parts)               # tasks come back in any order
    m = merge(parts)
    assert m.ranked == ranked and list(m.ranked) == list(ranked)
    assert m.voted == voted
    got = dict.fromkeys(ARM_NAMES, 0.0)
    for a in ARM_NAMES:
        for c in m.contributions[a]:
            got[a] += c
    assert got == sums                                      # same adds in the same order
    assert m.factor_qids == hit and m.factor_values == vals
    assert m.table.to_pylist() == results_table(ref_rows).to_pylist()
    full = fill_run_columns(m.table, "run-1", "lbl", "rrf")
    assert set(full.column("run_id").to_pylist()) <= {"run-1"} and full.schema == m.table.schema
    assert full.num_rows == len(ref_rows)
