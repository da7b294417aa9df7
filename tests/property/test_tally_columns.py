"""Fusion's tally (memo.retrieve.fusion.tally) builds each arm's evidence from cached columns
of its hits (issue 34.1); the candidates must be those of the hit-by-hit pass it replaced,
bit for bit, for any runs: passages repeated within an arm, an arm repeated, empty runs,
votes, any fusion, and the same hits tuples fused again and again (the eval grid's case)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve.fusion import FUSIONS
from memo.retrieve.fusion.tally import tally
from memo.retrieve.types import ArmHit, ArmRun, Candidate, Evidence
from tests.fast_examples import examples


def reference(runs, weights, k, score, tiebreak):
    """The tally as it was before the columns (2026-12-04), frozen here."""
    by_pk, ties = {}, {}
    for run in runs:
        if not run.hits:
            continue
        w = weights.get(run.name, 0.0)
        for hit, c, t in zip(run.hits, score(run, w, k), tiebreak(run, w, k), strict=True):
            ev = Evidence(hit.rank, hit.raw, c, hit.votes)
            if hit.pk not in by_pk:
                by_pk[hit.pk] = {run.name: ev}
                ties[hit.pk] = t
            else:
                by_pk[hit.pk][run.name] = ev
                ties[hit.pk] += t
    out = []
    for pk, arms in by_pk.items():
        fused = 0.0
        for ev in arms.values():
            fused += ev.contribution
        out.append(Candidate(pk, arms, fused, fused, ties[pk], ()))
    return out


@st.composite
def arm_runs(draw):
    out = []
    for name in draw(st.lists(st.sampled_from(["semantic", "keyword", "exact", "fact"]), max_size=4)):
        pks = draw(st.lists(st.integers(1, 15), max_size=12))          # repeats allowed
        raws = sorted(draw(st.lists(st.floats(-30, 30, allow_nan=False), min_size=len(pks), max_size=len(pks))),
                      reverse=True)
        votes = draw(st.sampled_from([(), ("f1",), ("f1", "f2")]))
        hits = tuple(ArmHit(pk, i, r, votes) for i, (pk, r) in enumerate(zip(pks, raws, strict=True), 1))
        out.append(ArmRun(name, True, "", False, hits, 0.0))
    return out


@settings(max_examples=examples(300), deadline=None)
@given(arm_runs(), st.sampled_from(sorted(FUSIONS)), st.integers(1, 100),
       st.fixed_dictionaries({"semantic": st.floats(0, 2), "keyword": st.floats(0, 2), "fact": st.floats(0, 2)}))
def test_tally_equals_the_hit_by_hit_pass(runs, method, k, weights):
    score, tiebreak = FUSIONS[method]
    want = reference(runs, weights, k, score, tiebreak)
    for _ in range(3):                       # the same hits tuples again: the columns from the cache
        got = tally(runs, weights, k, score, tiebreak)
        assert got == want
        assert [list(c.arms) for c in got] == [list(c.arms) for c in want]     # arm order: why's order
