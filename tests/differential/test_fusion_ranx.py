"""memo's fusion vs ranx (AmenRa/ranx) on random runs (style-anchors.md section 3.9).

* RRF: ranx ``fuse(method="rrf", norm=None)`` is unweighted; with every weight 1.0 memo's
  weighted RRF must agree.  Weighted RRF = ranx ``wsum`` over runs whose scores are
  already 1/(k + rank) (no normalisation).
* minmax: ranx ``fuse(norm="min-max", method="wsum", params={"weights": ...})``.  Runs hold
  at least two distinct scores: for an all-equal run memo documents 1.0, ranx gives 0.0.
"""

from __future__ import annotations

import random

import pytest

ranx = pytest.importorskip("ranx")

from memo.retrieve.arms.base import ArmHit  # noqa: E402
from memo.retrieve.fusion import fuse  # noqa: E402
from memo.retrieve.types import ArmRun  # noqa: E402

ARMS = ("semantic", "keyword", "exact")


def random_runs(rng: random.Random) -> list[ArmRun]:
    runs = []
    for name in rng.sample(ARMS, rng.randint(1, 3)):
        n = rng.randint(2, 40)
        pks = rng.sample(range(1, 120), n)
        raws = sorted({round(rng.uniform(-20, 20), 6) for _ in range(n * 2)}, reverse=True)[:n]
        if len(raws) < n:
            continue
        runs.append(ArmRun(name, True, "", False,
                           tuple(ArmHit(pk, i, r) for i, (pk, r) in enumerate(zip(pks, raws, strict=True), 1)), 0.0))
    return runs


def key(pk: int) -> str:
    # Fixed-width ids: with short, varying-length ids ranx 0.3.21's numba wsum sometimes
    # returns corrupted keys ('69\U08421084'), a ranx/numba string bug, not a score issue.
    return f"doc{pk:06d}"


def to_ranx(run: ArmRun, score=None) -> ranx.Run:
    return ranx.Run({"q": {key(h.pk): (score(h) if score else h.raw) for h in run.hits}}, name=run.name)


def close(ours: dict[str, float], theirs: dict[str, float]) -> None:
    assert ours.keys() == theirs.keys()
    for key, value in ours.items():
        assert value == pytest.approx(theirs[key], rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("seed", range(20))
def test_rrf_matches_ranx(seed):
    rng = random.Random(seed)
    runs = [r for r in random_runs(rng) if r.hits]
    if len(runs) < 2:  # ranx refuses to fuse a single run
        return
    k = rng.choice([1, 10, 60])
    ours = {key(c.pk): c.fused for c in fuse(runs, "rrf", dict.fromkeys(ARMS, 1.0), k)}
    theirs = ranx.fuse([to_ranx(r) for r in runs], norm=None, method="rrf", params={"k": k}).to_dict()["q"]
    close(ours, theirs)


@pytest.mark.parametrize("seed", range(20))
def test_weighted_rrf_matches_ranx_wsum_of_reciprocal_ranks(seed):
    rng = random.Random(seed)
    runs = [r for r in random_runs(rng) if r.hits]
    if len(runs) < 2:  # ranx refuses to fuse a single run
        return
    weights = {a: round(rng.uniform(0.1, 1.0), 3) for a in ARMS}
    ours = {key(c.pk): c.fused for c in fuse(runs, "rrf", weights, 60)}
    ranx_runs = [to_ranx(r, lambda h: 1.0 / (60 + h.rank)) for r in runs]
    theirs = ranx.fuse(ranx_runs, norm=None, method="wsum",
                       params={"weights": [weights[r.name] for r in runs]}).to_dict()["q"]
    close(ours, theirs)


@pytest.mark.parametrize("seed", range(20))
def test_minmax_matches_ranx_minmax_wsum(seed):
    rng = random.Random(seed)
    runs = [r for r in random_runs(rng) if len({h.raw for h in r.hits}) >= 2]
    if len(runs) < 2:  # ranx refuses to fuse a single run
        return
    weights = {a: round(rng.uniform(0.1, 1.0), 3) for a in ARMS}
    ours = {key(c.pk): c.fused for c in fuse(runs, "minmax", weights, 60)}
    theirs = ranx.fuse([to_ranx(r) for r in runs], norm="min-max", method="wsum",
                       params={"weights": [weights[r.name] for r in runs]}).to_dict()["q"]
    close(ours, theirs)
