"""Stage 3: weighted RRF and min-max score fusion, hand-computed."""

from __future__ import annotations

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
    assert set(FUSIONS) == {"rrf", "minmax"}
    with pytest.raises(ProfileError):
        fusion_switch("borda")


def test_rrf_ties_are_ordered_by_minmax_evidence_then_pk():
    # pk 7 (keyword rank 1) and pk 3 (semantic rank 1) tie under RRF with equal weights;
    # keyword's list has more spread below the top, so the order comes from the scores.
    from datetime import UTC, datetime

    from memo.retrieve.recency import apply_recency

    runs = [run("semantic", (3, 0.50), (5, 0.49), (9, 0.10)), run("keyword", (7, 9.0), (8, 1.0), (6, 0.5))]
    cands = fuse(runs, "rrf", W, 60)
    got = by_pk(cands)
    assert got[7].fused == got[3].fused
    assert got[7].tiebreak == 0.5 * 1.0 and got[3].tiebreak == 0.5 * 1.0
    assert got[5].fused == got[8].fused
    assert got[5].tiebreak == 0.5 * ((0.49 - 0.10) / 0.40) > got[8].tiebreak == 0.5 * (0.5 / 8.5)
    order = [c.pk for c in apply_recency(cands, {}, floor=0.8, half_life_days=90, aging_kinds=(),
                                         now=datetime(2024, 1, 1, tzinfo=UTC))]
    assert order[:4] == [3, 7, 5, 8]        # 3 and 7 tie on both keys: lower pk first


def test_minmax_ties_are_ordered_by_rrf():
    runs = [run("semantic", (1, 0.9), (2, 0.5)), run("keyword", (3, 4.0), (4, 2.0), (2, 1.0))]
    got = by_pk(fuse(runs, "minmax", W, 60))
    assert got[1].fused == got[3].fused == 0.5
    assert got[1].tiebreak == got[3].tiebreak == 0.5 / 61
    assert got[2].fused == 0.0 and got[2].tiebreak == 0.5 / 62 + 0.5 / 63
