"""Fusion invariants over random arm runs."""

from __future__ import annotations

import math
import statistics

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memo.profile import load_profile
from memo.retrieve.arms.base import ArmHit
from memo.retrieve.fusion import fuse
from memo.retrieve.fusion.zscore import spread
from memo.retrieve.types import ArmRun
from tests.fast_examples import examples

ARMS = ("semantic", "keyword", "exact")


@st.composite
def runs(draw):
    out = []
    for name in draw(st.lists(st.sampled_from(ARMS), unique=True, max_size=3)):
        pks = draw(st.lists(st.integers(1, 60), unique=True, max_size=30))
        raws = sorted(draw(st.lists(st.floats(-50, 50, allow_nan=False), min_size=len(pks), max_size=len(pks))),
                      reverse=True)
        out.append(ArmRun(name, True, "", False, tuple(ArmHit(pk, i, r) for i, (pk, r) in
                                                       enumerate(zip(pks, raws, strict=True), 1)), 0.0))
    return out


WEIGHTS = load_profile("rrf").weights


@settings(max_examples=examples(300), deadline=None)
@given(runs(), st.sampled_from(["rrf", "minmax", "zscore"]), st.integers(1, 100))
def test_fusion_invariants(rs, method, k):
    cands = fuse(rs, method, WEIGHTS, k)
    pks = {h.pk for r in rs for h in r.hits}
    assert {c.pk for c in cands} == pks                    # every candidate, once
    for c in cands:
        total = 0.0
        for ev in c.arms.values():
            total += ev.contribution
        assert total == c.fused                             # explain reproduces fused exactly
        assert list(c.arms) == [r.name for r in rs if c.pk in {h.pk for h in r.hits}]  # arm order
        if method != "zscore":
            assert 0.0 <= c.fused <= sum(WEIGHTS[a] for a in c.arms) + 1e-12
        if method == "rrf":
            assert all(ev.contribution == WEIGHTS[a] / (k + ev.rank) for a, ev in c.arms.items())


@settings(max_examples=examples(200), deadline=None)
@given(runs())
def test_rrf_rank_one_everywhere_wins(rs):
    cands = fuse(rs, "rrf", WEIGHTS, 60)
    if not cands:
        return
    best = max(cands, key=lambda c: c.fused)
    tops = [r.hits[0].pk for r in rs if r.hits]
    if len(set(tops)) == 1 and all(r.hits for r in rs):
        assert best.pk == tops[0]


@settings(max_examples=examples(300), deadline=None)
@given(runs())
@example([ArmRun(name="semantic", ran=True, reason="", degraded=False,   # found by a CI run: subnormal raws
                 hits=(ArmHit(pk=1, rank=1, raw=5e-324), ArmHit(pk=2, rank=2, raw=0.0)), latency_ms=0.0)])
def test_zscore_is_minmax_times_range_over_sigma(rs):
    """norm = (raw - min) / sigma: never negative, never above sqrt(2n) (the largest range of
    n numbers in standard deviations: two extremes, the rest at their midpoint), min-max times
    the arm's confidence (max - min) / sigma, and the order of each arm's own list."""
    by = {c.pk: c for c in fuse(rs, "zscore", WEIGHTS, 60)}
    for r in rs:
        if not r.hits:
            continue
        raws = [h.raw for h in r.hits]
        w, n, lo, hi = WEIGHTS[r.name], len(raws), min(raws), max(raws)
        sigma = statistics.pstdev(raws)                  # exact (fractions): the reference
        for h in r.hits:
            got = by[h.pk].arms[r.name].contribution
            assert got >= 0.0
            if spread(raws) == 0 or hi == lo:           # no spread (or none a float can hold: 1e-167²)
                assert got == w
                continue
            assert got <= w * math.sqrt(2 * n) * (1 + 1e-9)
            if sigma == 0.0:    # the exact sigma underflows a float (raws 5e-324 and 0.0): no reference to divide by
                continue
            assert math.isclose(got, w * (h.raw - lo) / (hi - lo) * ((hi - lo) / sigma), rel_tol=1e-9, abs_tol=1e-12)
        contribs = [by[h.pk].arms[r.name].contribution for h in r.hits]
        assert contribs == sorted(contribs, reverse=True)      # raws are sorted: so are their norms
