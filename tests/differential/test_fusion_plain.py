"""memo's fusion vs plain reimplementations written here from docs/architecture.md section 5
(issue 27.6): z-score fusion, which ranx does not have, and the cases ranx cannot check
(test_fusion_ranx.py): a single arm, a lone hit, an arm whose scores are all equal (memo
gives each 1.0, ranx 0.0), ties within an arm, an arm that ran but found nothing.

Every seed draws at least one hit and every case asserts: the candidates, each arm's
contribution (what ``why`` shows), the fused score and the tiebreak.  The reference code is
plain loops over the formulas, sharing nothing with memo.retrieve.fusion:

    z-score   sigma_a = sqrt((1/n) sum (raw - mean_a)^2)     (population, the arm's own list)
              norm_a(p) = (raw_a(p) - min_a) / sigma_a        (1.0 when the arm's raws are all equal)
    min-max   norm_a(p) = (raw_a(p) - min_a) / (max_a - min_a)   (1.0 when all equal)
    both      contribution_a(p) = w_a * norm_a(p); fused(p) = sum over the arms that returned p
              tiebreak(p) = the rrf score, sum of w_a / (k + rank_a(p))
"""

from __future__ import annotations

import math
import random

import pytest

from memo.retrieve.arms.base import ArmHit
from memo.retrieve.fusion import fuse
from memo.retrieve.types import ArmRun

ARMS = ("semantic", "keyword", "exact")
SHAPES = ("distinct", "ties", "all_equal", "standout", "lone")


def raw_scores(rng: random.Random, shape: str) -> list[float]:
    """An arm's raw scores, best first, of the given shape, at a random scale and offset."""
    n = 1 if shape == "lone" else rng.randint(2, 40)
    if shape == "distinct":
        base = [rng.uniform(-20, 20) for _ in range(n)]
    elif shape == "ties":                    # a few distinct values, each repeated
        values = [rng.uniform(-20, 20) for _ in range(rng.randint(1, 3))]
        base = [rng.choice(values) for _ in range(n)]
    elif shape == "all_equal":
        base = [rng.uniform(-20, 20)] * n
    elif shape == "standout":                # one hit far above a flat tail
        base = [rng.uniform(5, 20)] + [0.0] * (n - 1)
    else:
        base = [rng.uniform(-20, 20)]
    scale = rng.choice((1e-3, 1.0, 1e3))
    offset = rng.choice((0.0, 0.5, 100.0))
    return sorted((offset + scale * round(b, 6) for b in base), reverse=True)


def random_runs(rng: random.Random) -> list[ArmRun]:
    """One to three arms, any shape, sometimes one that ran and found nothing; drawn again
    (deterministically: the same seed, the same runs) until at least one hit exists."""
    while True:
        runs = []
        for name in rng.sample(ARMS, rng.randint(1, 3)):
            if rng.random() < 0.1:
                runs.append(ArmRun(name, True, "", False, (), 0.0))
                continue
            raws = raw_scores(rng, rng.choice(SHAPES))
            pks = rng.sample(range(1, 60), len(raws))      # overlapping pks across arms
            runs.append(ArmRun(name, True, "", False,
                               tuple(ArmHit(pk, i, r) for i, (pk, r) in enumerate(zip(pks, raws, strict=True), 1)),
                               0.0))
        if any(run.hits for run in runs):
            return runs


# --- the reference ------------------------------------------------------------------------
def plain_zscore_norms(raws: list[float]) -> list[float]:
    n = len(raws)
    lowest = raws[0]
    highest = raws[0]
    total = 0.0
    for x in raws:
        total += x
        lowest = min(lowest, x)
        highest = max(highest, x)
    if highest == lowest:
        return [1.0] * n
    mean = total / n
    squares = 0.0
    for x in raws:
        squares += (x - mean) * (x - mean)
    sigma = math.sqrt(squares / n)
    return [(x - lowest) / sigma for x in raws]


def plain_minmax_norms(raws: list[float]) -> list[float]:
    lowest = raws[0]
    highest = raws[0]
    for x in raws:
        lowest = min(lowest, x)
        highest = max(highest, x)
    if highest == lowest:
        return [1.0] * len(raws)
    return [(x - lowest) / (highest - lowest) for x in raws]


PLAIN = {"zscore": plain_zscore_norms, "minmax": plain_minmax_norms}


def plain_fuse(runs: list[ArmRun], method: str, weights: dict[str, float], k: int):
    """pk -> (per-arm contributions, fused, tiebreak)."""
    arms: dict[int, dict[str, float]] = {}
    tiebreak: dict[int, float] = {}
    for run in runs:
        if not run.hits:
            continue
        w = weights[run.name]
        norms = PLAIN[method]([hit.raw for hit in run.hits])
        for hit, norm in zip(run.hits, norms, strict=True):
            arms.setdefault(hit.pk, {})[run.name] = w * norm
            tiebreak[hit.pk] = tiebreak.get(hit.pk, 0.0) + w / (k + hit.rank)
    out = {}
    for pk, contributions in arms.items():
        fused = 0.0
        for c in contributions.values():
            fused += c
        out[pk] = (contributions, fused, tiebreak[pk])
    return out


def approx(x: float):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("method", ["zscore", "minmax"])
@pytest.mark.parametrize("seed", range(40))
def test_fusion_matches_the_plain_formulas(method, seed):
    rng = random.Random(seed)
    runs = random_runs(rng)
    weights = {a: rng.choice((0.0, 0.3, 1.0, round(rng.uniform(0.1, 1.0), 3))) for a in ARMS}
    k = rng.choice((1, 10, 60))
    theirs = plain_fuse(runs, method, weights, k)
    ours = {c.pk: c for c in fuse(runs, method, weights, k)}
    assert theirs and ours.keys() == theirs.keys()
    for pk, (contributions, fused, tiebreak) in theirs.items():
        c = ours[pk]
        assert list(c.arms) == list(contributions), pk                  # arm order
        for arm, expected in contributions.items():
            assert c.arms[arm].contribution == approx(expected), (pk, arm)
        assert c.fused == approx(fused), pk
        assert c.tiebreak == approx(tiebreak), pk


def test_the_draws_cover_every_shape():
    """The seeds above meet every case the docstring lists (so none is left to luck)."""
    seen = set()
    for seed in range(40):
        for run in random_runs(random.Random(seed)):
            raws = [h.raw for h in run.hits]
            if not raws:
                seen.add("empty arm")
            elif len(raws) == 1:
                seen.add("lone hit")
            elif len(set(raws)) == 1:
                seen.add("all equal")
            elif len(set(raws)) < len(raws):
                seen.add("ties")
            else:
                seen.add("distinct")
        if len(random_runs(random.Random(seed))) == 1:
            seen.add("single arm")
    assert seen == {"empty arm", "lone hit", "all equal", "ties", "distinct", "single arm"}
