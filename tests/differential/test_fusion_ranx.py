"""memo's fusion vs ranx (AmenRa/ranx) on random runs (style-anchors.md section 3.9).

* RRF: ranx ``fuse(method="rrf", norm=None)`` is unweighted; with every weight 1.0 memo's
  weighted RRF must agree.  Weighted RRF = ranx ``wsum`` over runs whose scores are
  already 1/(k + rank) (no normalisation).
* minmax: ranx ``fuse(norm="min-max", method="wsum", params={"weights": ...})``.  Runs hold
  at least two distinct scores: for an all-equal run memo documents 1.0, ranx gives 0.0.

Every seed draws two or three non-empty runs (ranx refuses to fuse a single one) and every
case asserts: nothing returns early.  The cases ranx cannot check (a single arm, a lone hit,
an all-equal arm) and z-score fusion, which ranx lacks, are compared with plain
reimplementations in test_fusion_plain.py.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

# ranx compiles its numba kernels on first use (about 70 s of CPU on 2 cores): cache them in
# the checkout's .cache (git-ignored), so they compile once per machine, not once per venv.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[2] / ".cache" / "numba"))

ranx = pytest.importorskip("ranx")

from memo.retrieve.arms.base import ArmHit  # noqa: E402
from memo.retrieve.fusion import fuse  # noqa: E402
from memo.retrieve.types import ArmRun  # noqa: E402

ARMS = ("semantic", "keyword", "exact")


def random_runs(rng: random.Random) -> list[ArmRun]:
    """Two or three arms (ranx refuses to fuse a single run), each with 2 to 40 hits of
    distinct raw scores (the same seed always draws the same runs)."""
    runs = []
    for name in rng.sample(ARMS, rng.randint(2, 3)):
        n = rng.randint(2, 40)
        pks = rng.sample(range(1, 120), n)
        raws: set[float] = set()
        while len(raws) < n:
            raws.add(round(rng.uniform(-20, 20), 6))
        runs.append(ArmRun(name, True, "", False,
                           tuple(ArmHit(pk, i, r) for i, (pk, r) in
                                 enumerate(zip(pks, sorted(raws, reverse=True), strict=True), 1)), 0.0))
    assert len(runs) >= 2 and all(len({h.raw for h in r.hits}) == len(r.hits) >= 2 for r in runs)
    return runs


def key(pk: int) -> str:
    # Fixed-width ids: with short, varying-length ids ranx 0.3.21's numba wsum sometimes
    # returns corrupted keys ('69\U08421084'), a ranx/numba string bug, not a score issue.
    return f"doc{pk:06d}"


def to_ranx(run: ArmRun, score=None) -> ranx.Run:
    return ranx.Run({"q": {key(h.pk): (score(h) if score else h.raw) for h in run.hits}}, name=run.name)


def close(ours: dict[str, float], theirs: dict[str, float]) -> None:
    assert ours and ours.keys() == theirs.keys()
    for key, value in ours.items():
        assert value == pytest.approx(theirs[key], rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("seed", range(20))
def test_rrf_matches_ranx(seed):
    rng = random.Random(seed)
    runs = random_runs(rng)
    k = rng.choice([1, 10, 60])
    ours = {key(c.pk): c.fused for c in fuse(runs, "rrf", dict.fromkeys(ARMS, 1.0), k)}
    theirs = ranx.fuse([to_ranx(r) for r in runs], norm=None, method="rrf", params={"k": k}).to_dict()["q"]
    close(ours, theirs)


@pytest.mark.parametrize("seed", range(20))
def test_weighted_rrf_matches_ranx_wsum_of_reciprocal_ranks(seed):
    rng = random.Random(seed)
    runs = random_runs(rng)
    weights = {a: round(rng.uniform(0.1, 1.0), 3) for a in ARMS}
    ours = {key(c.pk): c.fused for c in fuse(runs, "rrf", weights, 60)}
    ranx_runs = [to_ranx(r, lambda h: 1.0 / (60 + h.rank)) for r in runs]
    theirs = ranx.fuse(ranx_runs, norm=None, method="wsum",
                       params={"weights": [weights[r.name] for r in runs]}).to_dict()["q"]
    close(ours, theirs)


@pytest.mark.parametrize("seed", range(20))
def test_minmax_matches_ranx_minmax_wsum(seed):
    rng = random.Random(seed)
    runs = random_runs(rng)                     # each with at least two distinct scores
    weights = {a: round(rng.uniform(0.1, 1.0), 3) for a in ARMS}
    ours = {key(c.pk): c.fused for c in fuse(runs, "minmax", weights, 60)}
    theirs = ranx.fuse([to_ranx(r) for r in runs], norm="min-max", method="wsum",
                       params={"weights": [weights[r.name] for r in runs]}).to_dict()["q"]
    close(ours, theirs)
