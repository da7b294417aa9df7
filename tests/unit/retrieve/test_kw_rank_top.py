"""``kw_rank._top``: the first m of (score desc, pk asc), ties at the m-th included, equal to
sorting every candidate, whether or not the sampled floor (``_sampled_floor``) narrowed the
selection first (issue 31.1: the keyword arm selects its m from ~48k matched passages)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve import kw_rank
from tests.fast_examples import examples


def _sorted_prefix(cand: np.ndarray, score: np.ndarray, m: int) -> list[tuple[int, float]]:
    pairs = sorted(zip(cand.tolist(), score.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    if len(pairs) <= m:
        return pairs
    kth = pairs[m - 1][1]
    return [p for p in pairs if p[1] >= kth]


@settings(max_examples=examples(300), deadline=None)
@given(n=st.integers(0, 3000), m=st.integers(1, 600), levels=st.integers(1, 50), seed=st.integers(0, 2**32 - 1))
def test_top_is_the_sorted_prefix_ties_included(n, m, levels, seed) -> None:
    rng = np.random.default_rng(seed)
    cand = np.sort(rng.choice(10 * n + 1, size=n, replace=False)).astype(np.int64)
    score = rng.integers(1, levels + 1, size=n) / 7.0     # few distinct values: many ties
    got_c, got_s = kw_rank._top(cand, score, m)
    assert list(zip(got_c.tolist(), got_s.tolist(), strict=True)) == _sorted_prefix(cand, score, m)


def test_the_sampled_floor_never_drops_one_of_the_m_best() -> None:
    # The sample (every 16th score) holds all 250 high scores: its floor (5.0) is reached by
    # fewer than m = 300, so it must not narrow the selection.
    score = np.full(4000, 1.0)
    score[::16] = 5.0
    assert int(np.count_nonzero(score >= kw_rank._sampled_floor(score, 300))) >= 300
    got, _ = kw_rank._top(np.arange(4000, dtype=np.int64), score, 300)
    high = list(range(0, 4000, 16))
    assert got.tolist() == high + sorted(set(range(4000)) - set(high))   # every 1.0 ties at the 300th
