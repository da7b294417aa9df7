"""Stage 3: weighted RRF and min-max score fusion, hand-computed."""

from __future__ import annotations

import statistics

import pytest

from memo.errors import ProfileError
from memo.retrieve.arms.base import ArmHit
from memo.retrieve.fusion import FUSIONS, fuse, fusion_switch
from memo.retrieve.types import ArmRun

W = {"semantic": 0.5, "keyword": 0.5, "exact": 0.3}


def run(name, *pairs):
    return ArmRun(name, True, "", False, tuple(ArmHit(pk, i, raw) for i, (pk, raw) in enumerate(pairs, 1)), 0.0)


def by_pk(cands):
    return {c.pk: c for c in cands}


def test_rrf_sums_weight_over_k_plus_rank():
    runs = [run("semantic", (1, 0.9), (2, 0.8)), run("keyword", (2, 5.0), (3, 4.0))]
    got = by_pk(fuse(runs, "rrf", W, 60))
    assert got[1].fused == 0.5 / 61
    assert got[2].fused == 0.0 + 0.5 / 62 + 0.5 / 61
    assert got[3].fused == 0.5 / 62
    assert list(got[2].arms) == ["semantic", "keyword"]
    assert got[2].arms["keyword"].rank == 1 and got[2].arms["keyword"].raw == 5.0


def test_minmax_normalises_per_arm():
    runs = [run("semantic", (1, 0.9), (2, 0.7), (3, 0.5)), run("keyword", (3, 10.0), (1, 2.0))]
    got = by_pk(fuse(runs, "minmax", W, 60))
    assert got[1].fused == 0.5 * 1.0 + 0.5 * 0.0
    assert got[2].fused == 0.5 * ((0.7 - 0.5) / (0.9 - 0.5))
    assert got[3].fused == 0.5 * 0.0 + 0.5 * 1.0


def test_minmax_all_equal_scores_normalise_to_one():
    runs = [run("keyword", (7, 3.0)), run("exact", (7, 2.0), (8, 2.0))]
    got = by_pk(fuse(runs, "minmax", W, 60))
    assert got[7].fused == 0.5 * 1.0 + 0.3 * 1.0
    assert got[8].fused == 0.3 * 1.0


def test_empty_runs_and_unknown_method():
    assert fuse([], "rrf", W, 60) == []
    assert fuse([run("keyword")], "minmax", W, 60) == []
    assert set(FUSIONS) == {"rrf", "minmax", "zscore"}
    with pytest.raises(ProfileError):
        fusion_switch("borda")


def test_rrf_ties_are_ordered_by_minmax_evidence_then_pk():
    # pk 7 (keyword rank 1) and pk 3 (semantic rank 1) tie under RRF with equal weights;
    # keyword's list has more spread below the top, so the order comes from the scores.
    from datetime import UTC, datetime

    from memo.profile import load_profile
    from memo.retrieve.recency import RESCORER
    from memo.retrieve.rescore import RescoreInput, apply, sort_best_first

    runs = [run("semantic", (3, 0.50), (5, 0.49), (9, 0.10)), run("keyword", (7, 9.0), (8, 1.0), (6, 0.5))]
    cands = fuse(runs, "rrf", W, 60)
    got = by_pk(cands)
    assert got[7].fused == got[3].fused
    assert got[7].tiebreak == 0.5 * 1.0 and got[3].tiebreak == 0.5 * 1.0
    assert got[5].fused == got[8].fused
    assert got[5].tiebreak == 0.5 * ((0.49 - 0.10) / 0.40) > got[8].tiebreak == 0.5 * (0.5 / 8.5)
    sort_best_first(cands)
    out, _ = apply(RESCORER, cands, RescoreInput("", {}, datetime(2024, 1, 1, tzinfo=UTC), load_profile("base")))
    order = [c.pk for c in out]
    assert order[:4] == [3, 7, 5, 8]        # 3 and 7 tie on both keys: lower pk first


def test_minmax_ties_are_ordered_by_rrf():
    runs = [run("semantic", (1, 0.9), (2, 0.5)), run("keyword", (3, 4.0), (4, 2.0), (2, 1.0))]
    got = by_pk(fuse(runs, "minmax", W, 60))
    assert got[1].fused == got[3].fused == 0.5
    assert got[1].tiebreak == got[3].tiebreak == 0.5 / 61
    assert got[2].fused == 0.0 and got[2].tiebreak == 0.5 / 62 + 0.5 / 63


def test_zscore_divides_by_each_arms_own_spread():
    # semantic raws 0.9, 0.7, 0.5: mean 0.7, sigma sqrt(0.08/3); keyword 10, 2: mean 6, sigma 4.
    runs = [run("semantic", (1, 0.9), (2, 0.7), (3, 0.5)), run("keyword", (3, 10.0), (1, 2.0))]
    got = by_pk(fuse(runs, "zscore", W, 60))
    sd_sem = (((0.9 - 0.7) ** 2 + 0.0 + (0.5 - 0.7) ** 2) / 3) ** 0.5
    assert got[1].arms["semantic"].contribution == 0.5 * ((0.9 - 0.5) / sd_sem)
    assert got[1].arms["keyword"].contribution == 0.5 * 0.0
    assert got[2].fused == 0.5 * ((0.7 - 0.5) / sd_sem)
    assert got[3].fused == 0.5 * 0.0 + 0.5 * ((10.0 - 2.0) / 4.0)
    assert got[3].fused == 1.0                       # 8 / 4 = 2 standard deviations, weight 0.5
    assert abs(0.5 * (0.4 / sd_sem) - 1.2247448713915890) < 1e-12   # 0.4 / 0.1633 = sqrt(6)


def test_zscore_a_peaked_arm_outweighs_a_flat_one():
    # Both arms' best hit is 1.0 under min-max; in units of its own spread the keyword arm's
    # best (far above a flat tail) counts for more than the semantic arm's (an even slope).
    sem = run("semantic", *((pk, 0.80 - 0.01 * i) for i, pk in enumerate(range(1, 21))))
    kw = run("keyword", (21, 20.0), *((pk, 2.0 - 0.01 * i) for i, pk in enumerate(range(22, 41))))
    mm = by_pk(fuse([sem, kw], "minmax", W, 60))
    assert mm[1].fused == mm[21].fused == 0.5
    z = by_pk(fuse([sem, kw], "zscore", W, 60))
    # semantic: an even slope of 20 steps: range / sigma = 19 / sqrt((20² - 1) / 12) = 3.29
    assert z[1].fused == pytest.approx(0.5 * 19 / ((20 ** 2 - 1) / 12) ** 0.5, rel=1e-9)
    # keyword: one hit 18 above a flat tail: 4.3 standard deviations
    assert z[21].fused == pytest.approx(0.5 * (20.0 - 1.82) / statistics.pstdev(h.raw for h in kw.hits), rel=1e-12)
    assert z[21].fused > 0.5 * 4.3 > z[1].fused


def test_zscore_all_equal_or_lone_scores_normalise_to_one_and_ties_go_to_rrf():
    runs = [run("keyword", (7, 3.0)), run("exact", (7, 2.0), (8, 2.0))]
    got = by_pk(fuse(runs, "zscore", W, 60))
    assert got[7].fused == 0.5 * 1.0 + 0.3 * 1.0
    assert got[8].fused == 0.3 * 1.0
    assert got[7].tiebreak == 0.5 / 61 + 0.3 / 61 and got[8].tiebreak == 0.3 / 62
