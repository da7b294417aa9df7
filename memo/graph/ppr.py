"""Personalised PageRank over a bipartite passage-entity graph (pure: arrays in, arrays out).

Graph: ``W`` (passages x entities, 1 where the passage mentions the entity) and its
transpose ``WT``.  A walk restricted to the allowed nodes (``passage_mask``: the search's
scope and as_of; ``entity_mask``: entities that may carry a walk, i.e. not common) moves
from a node to one of its allowed neighbours chosen uniformly; with probability
``1 - damping`` at every step (and always from a node with no allowed neighbour) it
jumps back to its seed.  One walk per seed entity; ``x_s`` is its stationary
distribution, the fixed point of

    x_s = (1 - d) * e_s + d * (T x_s + dangling(x_s) * e_s)

over the allowed subgraph (T: column-stochastic transitions of the induced subgraph).
Power iteration from ``x = e_s``; it stops after ``iterations`` steps or as soon as the L1
change of every walk in one step is below ``tolerance`` (the error after t steps is at most
about d^t).  Each walk keeps total mass 1, so walks are comparable and their sum is the
single walk HippoRAG runs with all seeds in its reset vector (times the number of seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse


@dataclass(frozen=True, slots=True)
class Walks:
    passages: np.ndarray     # (n_passages, n_seeds) mass of each walk on each passage
    entities: np.ndarray     # (n_entities, n_seeds)
    iterations: int          # power iterations run


def personalized_pagerank(W: sparse.csr_matrix, WT: sparse.csr_matrix, seeds: Sequence[int],
                          passage_mask: np.ndarray, entity_mask: np.ndarray, *, damping: float,
                          iterations: int, tolerance: float) -> Walks:
    n_p, n_e = W.shape
    n_s = len(seeds)
    if n_s == 0:
        return Walks(np.zeros((n_p, 0)), np.zeros((n_e, 0)), 0)
    m_p = passage_mask.astype(np.float64)
    m_e = entity_mask.astype(np.float64)
    m_e[list(seeds)] = 1.0                      # a seed always carries its own walk
    deg_p = m_p * (W @ m_e)                     # allowed entities of each allowed passage
    deg_e = m_e * (WT @ m_p)                    # allowed passages of each allowed entity
    inv_p = np.divide(1.0, deg_p, out=np.zeros(n_p), where=deg_p > 0)
    inv_e = np.divide(1.0, deg_e, out=np.zeros(n_e), where=deg_e > 0)
    dead_p = (deg_p == 0)[:, None]
    dead_e = (deg_e == 0)[:, None]
    reset = np.zeros((n_e, n_s))
    reset[list(seeds), np.arange(n_s)] = 1.0
    x_e = reset.copy()
    x_p = np.zeros((n_p, n_s))
    d = float(damping)
    run = 0
    for run in range(1, iterations + 1):
        new_p = (d * m_p)[:, None] * (W @ (x_e * inv_e[:, None]))
        new_e = (d * m_e)[:, None] * (WT @ (x_p * inv_p[:, None]))
        dangling = (x_e * dead_e).sum(axis=0) + (x_p * dead_p).sum(axis=0)
        new_e += reset * ((1.0 - d) + d * dangling)[None, :]
        delta = np.abs(new_e - x_e).sum(axis=0) + np.abs(new_p - x_p).sum(axis=0)
        x_e, x_p = new_e, new_p
        if float(delta.max()) < tolerance:
            break
    return Walks(x_p, x_e, run)
