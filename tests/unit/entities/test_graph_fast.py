"""The graph arm's speed-ups of issue 29.5 change no answer: the local push against the
frozen copy of the one before (graph_v1.py), bit for bit, on seeded random bipartite graphs
with Zipf-like popularity, masked passages and entities, and seeds that are masked out or
have no allowed passage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from memo.graph.ppr import push_walk, transitions

from . import graph_v1


def _random_graph(rng: np.random.Generator, n_p: int, n_e: int):
    weights = 1.0 / np.arange(1, n_e + 1) ** 0.8
    weights /= weights.sum()
    rows, cols = [], []
    for p in range(n_p):
        for e in set(rng.choice(n_e, size=int(rng.integers(1, 7)), p=weights).tolist()):
            rows.append(p)
            cols.append(e)
    W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_p, n_e))
    return W, W.T.tocsr()


@pytest.mark.parametrize("seed", range(6))
def test_push_walk_is_the_frozen_one_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    n_p, n_e = int(rng.integers(50, 3000)), int(rng.integers(10, 600))
    W, WT = _random_graph(rng, n_p, n_e)
    p_mask = rng.random(n_p) > rng.choice([0.0, 0.1, 0.5])
    e_mask = rng.random(n_e) > rng.choice([0.0, 0.05, 0.3])
    t = transitions(W, WT, p_mask, e_mask)
    for _ in range(8):
        seeds = [int(s) for s in rng.choice(n_e, size=int(rng.integers(1, 4)), replace=False)]
        for eps in (1e-3, 1e-5, 1e-6, 1e-8):
            for d in (0.5, 0.85):
                new = push_walk(t, seeds, damping=d, epsilon=eps)
                old = graph_v1.push_walk(t, seeds, damping=d, epsilon=eps)
                assert new.iterations == old.iterations
                assert np.array_equal(new.passages, old.passages)
                assert np.array_equal(new.entities, old.entities)


def test_push_walk_seeds_without_allowed_passages():
    # e0 - p0 - e1 - p1, p1 masked out, e2 mentioned only by p1: e2 has no allowed passage
    W = sparse.csr_matrix((np.ones(4), ([0, 0, 1, 1], [0, 1, 1, 2])), shape=(2, 3))
    t = transitions(W, W.T.tocsr(), np.array([True, False]), np.ones(3, bool))
    for seeds in ([2], [0, 2], [2, 1]):
        new = push_walk(t, seeds, damping=0.5, epsilon=1e-9)
        old = graph_v1.push_walk(t, seeds, damping=0.5, epsilon=1e-9)
        assert np.array_equal(new.passages, old.passages) and np.array_equal(new.entities, old.entities)
