"""memo_eval.partials against the walk over every row the replay's parent did before
(issue 34.1): the same grades, unit rankings, arm and factor coverage (bit for bit) and
result table, whichever way a run's queries are cut into tasks and in whatever order the
tasks come back."""

from __future__ import annotations

import random
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.types import ARM_NAMES
from memo_eval.metrics import per_query
from memo_eval.partials import PartBuilder, build_parts, fill_run_columns, merge
from memo_eval.traces import RESULT_FIELDS, RESULT_INDEX, results_table
from tests.fast_examples import examples

DOCS = ("d1", "d2", "d3", "d4", "d5")
FACTORS = ("recency", "speaker", "context")


def _responses(rng: random.Random, n_q: int) -> list[tuple[dict, list]]:
    """Per query: its query row and a response's results (memo.retrieve.Result's fields
    that the trace reads; why None for some, as without explain)."""
    searched = []
    for qi in range(n_q):
        results = []
        for _ in range(rng.randint(0, 14)):
            why = None
            if rng.random() < 0.9:
                arms = {a: SimpleNamespace(rank=rng.randint(1, 50), raw=rng.random(),
                                           contribution=rng.choice((0.0, rng.random() / 7)))
                        for a in ARM_NAMES if rng.random() < 0.6}
                factors = [SimpleNamespace(name=f, value=rng.choice((1.0, rng.random() + 0.5)), label=None)
                           for f in FACTORS if rng.random() < 0.5]
                why = SimpleNamespace(fused=rng.random(), factors=factors, final=rng.random(), tiebreak=rng.random(),
                                      arms=arms)
            results.append(SimpleNamespace(
                passage_id=f"p{rng.randint(1, 99)}", pk=rng.randint(1, 99), record_id=rng.choice(DOCS),
                namespace=rng.choice(("a", None)), kind="doc", score=rng.random(),
                relevance=rng.choice((None, rng.random())), band=rng.choice(("high", None)),
                tokens=rng.randint(1, 500), why=why))
        searched.append(({"qid": f"q{qi}", "abstained": not results}, results))
    return searched


def _old_rows(qid: str, results, keys) -> list[list]:
    """memo_eval.replay._result_rows as it was (one list per result, RESULT_FIELDS order)."""
    rows = []
    for rank, r in enumerate(results, start=1):
        row = [None] * len(RESULT_FIELDS)
        why = r.why
        vals = {"qid": qid, "rank": rank, "passage_id": r.passage_id, "pk": r.pk, "record_id": r.record_id,
                "doc_id": keys.get(r.pk, r.record_id), "namespace": r.namespace, "kind": r.kind,
                "score": float(r.score), "relevance": r.relevance, "band": r.band, "tokens": int(r.tokens)}
        if why is not None:
            vals.update(fused=float(why.fused), final=float(why.final), tiebreak=float(why.tiebreak),
                        factors=[{"name": f.name, "value": float(f.value), "label": f.label} for f in why.factors])
            for arm, ev in why.arms.items():
                vals.update({f"{arm}_rank": int(ev.rank), f"{arm}_raw": float(ev.raw),
                             f"{arm}_contribution": float(ev.contribution)})
        for k, v in vals.items():
            row[RESULT_INDEX[k]] = v
        rows.append(row)
    return rows


def _reference(searched, qrels, keys):
    """The parent's walk before (memo_eval.run.score_run / arm_coverage / factor_coverage)."""
    rows = [r for q, results in searched for r in _old_rows(q["qid"], results, keys)]
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
    searched = _responses(rng, n_q)
    keys = {pk: f"d{pk % 7}" for pk in range(1, 99) if pk % 3}     # unit keys: several passages per unit
    qrels = {f"q{i}": {d: rng.randint(0, 2) for d in rng.sample(DOCS, 2)} for i in range(n_q) if rng.random() < 0.8}
    ref_rows, ranked, voted, sums, hit, vals = _reference(searched, qrels, keys)
    bounds = sorted({0, n_q, *(c for c in cuts if c < n_q)})
    parts = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        b = PartBuilder(qrels, keys)
        for qrow, results in searched[lo:hi]:
            b.add(dict(qrow), results)
        parts.append(b.part(lo))
    random.Random(order_seed).shuffle(parts)               # tasks come back in any order
    m = merge(parts)
    assert m.ranked == ranked and list(m.ranked) == list(ranked)
    # each part scored its own judged queries: the same figures as trec_eval over the run
    whole = per_query(qrels, ranked)
    assert m.metrics == {q: v for q, v in whole.items() if q in {f"q{i}" for i in range(n_q)}}
    assert m.voted == voted
    got = dict.fromkeys(ARM_NAMES, 0.0)
    for a in ARM_NAMES:
        for c in m.contributions[a]:
            got[a] += c
    assert got == sums                                      # same adds in the same order
    assert m.factor_qids == hit and m.factor_values == vals
    assert m.table.to_pylist() == results_table(ref_rows).to_pylist()
    assert [q["qid"] for p in sorted(parts, key=lambda p: p.first) for q in p.queries] == [f"q{i}" for i in range(n_q)]
    full = fill_run_columns(m.table, "run-1", "lbl", "rrf")
    assert set(full.column("run_id").to_pylist()) <= {"run-1"} and full.schema == m.table.schema
    assert full.num_rows == len(ref_rows)


def test_a_part_pickled_with_a_handover_folder_travels_as_a_file_and_comes_back_whole(tmp_path) -> None:
    """The replay's workers leave their parts' tables in a folder (memo_eval.partials.
    hand_over_via): the pickle holds a path, unpickling maps the file and removes it."""
    import pickle

    from memo_eval import partials

    rng = random.Random(7)
    b = PartBuilder({"q0": {"d1": 1}}, {pk: f"d{pk % 7}" for pk in range(1, 99)})
    for qrow, results in _responses(rng, 4):
        b.add(dict(qrow), results)
    part = b.part(0)
    assert part.table.num_rows
    partials.hand_over_via(tmp_path)
    try:
        blob = pickle.dumps(part)
    finally:
        partials.hand_over_via(None)
    assert len(blob) < part.table.nbytes and len(list(tmp_path.iterdir())) == 1
    back = pickle.loads(blob)
    assert list(tmp_path.iterdir()) == []                      # mapped, then unlinked
    assert back.table.equals(part.table) and back.ranked == part.ranked and back.queries == part.queries
    assert pickle.loads(pickle.dumps(part)).table.equals(part.table)   # no folder: inside the pickle


def _builder(searched, qrels, keys, row_columns=None) -> PartBuilder:
    b = PartBuilder(qrels, keys, row_columns)
    for qrow, results in searched:
        b.add(dict(qrow), results)
    return b


def _same_part(got, want) -> None:
    assert got.table.equals(want.table) and got.first == want.first and got.queries == want.queries
    assert got.ranked == want.ranked and got.metrics == want.metrics
    assert got.contributions == want.contributions and got.voted == want.voted
    assert got.factor_values == want.factor_values and got.factor_qids == want.factor_qids


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), n_q=st.integers(1, 8), n_runs=st.integers(1, 5), first=st.integers(0, 50))
def test_a_tasks_runs_built_together_equal_each_run_built_alone(seed, n_q, n_runs, first) -> None:
    """build_parts converts a task's runs in one go (one array per column, each run a slice,
    one trec_eval call): each part equals the one its builder makes alone, and after a trip
    through the hand-over folder too."""
    rng = random.Random(seed)
    keys = {pk: f"d{pk % 7}" for pk in range(1, 99) if pk % 3}
    qrels = {f"q{i}": {d: rng.randint(0, 2) for d in rng.sample(DOCS, 2)} for i in range(n_q) if rng.random() < 0.8}
    runs = [_responses(rng, n_q) for _ in range(n_runs)]      # the same qids, other results per run
    shared_rows: dict[int, tuple] = {}
    together = build_parts([_builder(s, qrels, keys, shared_rows) for s in runs], first)
    alone = [_builder(s, qrels, keys).part(first) for s in runs]
    assert len(together) == n_runs
    for got, want in zip(together, alone, strict=True):
        _same_part(got, want)
    assert merge(together[:1]).table.to_pylist() == merge(alone[:1]).table.to_pylist()


def test_a_tasks_parts_travel_through_the_handover_folder_as_one_file(tmp_path) -> None:
    import pickle

    from memo_eval import partials

    rng = random.Random(11)
    keys = {pk: f"d{pk % 7}" for pk in range(1, 99)}
    qrels = {"q0": {"d1": 1}, "q2": {"d3": 2}}
    runs = [_responses(rng, 4) for _ in range(3)]
    parts = build_parts([_builder(s, qrels, keys) for s in runs], 0)
    assert all(p.table.num_rows for p in parts)
    partials.hand_over_via(tmp_path)
    try:
        blob = pickle.dumps([(ri, p) for ri, p in enumerate(parts)])     # as the pool returns a task's parts
    finally:
        partials.hand_over_via(None)
    assert len(list(tmp_path.iterdir())) == 1                             # one file for the task
    back = pickle.loads(blob)
    assert list(tmp_path.iterdir()) == []
    for (ri, got), want in zip(back, parts, strict=True):
        assert ri == parts.index(want)
        _same_part(got, want)
    again = pickle.loads(pickle.dumps(parts))                              # no folder: inside the pickle
    for got, want in zip(again, parts, strict=True):
        _same_part(got, want)
