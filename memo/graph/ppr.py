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

Iteration (Gauss-Seidel over the two sides, from ``x_e = e_s``): ``x_p <- d A x_e``, then
``x_e <- d B x_p + r e_s`` with A, B the masked normalised transitions and r the restart
mass, ``1 - d`` plus what sits on a seed with no allowed passage.  Mass only ever reaches
a passage through an entity it mentions and an entity through a passage that mentions
it, so no other node is a dead end, and one step (two hops) shrinks the change by d^2:
``|x_(t+1) - x_t| <= 2 d^(2t)``.  It runs ``t = min(iterations, ceil(ln(tolerance / 2) /
(2 ln d)))`` steps, the first at which the change is provably below ``tolerance`` (no
per-step convergence test: it cost as much as the products).  Each walk's mass sums to 1,
so walks are comparable and their sum is the single walk HippoRAG runs with all seeds in
its reset vector (times the number of seeds).

``transitions`` (the masked, normalised matrices) depends only on the graph and the masks,
so callers cache it per scope; ``walk`` is the per-query part (2 sparse products per step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse


@dataclass(frozen=True, slots=True)
class Walks:
    passages: np.ndarray     # (n_passages, n_seeds) mass of each walk on each passage
    entities: np.ndarray     # (n_entities, n_seeds)
    iterations: int          # power iterations run


@dataclass(frozen=True, slots=True)
class Transitions:
    to_passages: sparse.csr_matrix   # (P, E): entity -> allowed passage, columns sum to 1 (0 for dead ends)
    to_entities: sparse.csr_matrix   # (E, P): passage -> allowed entity
    entity_mask: np.ndarray          # entities a walk may be at (seeds must be among them)
    entity_alive: np.ndarray         # allowed entities with at least one allowed passage


def transitions(W: sparse.csr_matrix, WT: sparse.csr_matrix, passage_mask: np.ndarray,
                entity_mask: np.ndarray) -> Transitions:
    m_p = passage_mask.astype(np.float64)
    m_e = entity_mask.astype(np.float64)
    deg_p = m_p * (W @ m_e)                     # allowed entities of each allowed passage
    deg_e = m_e * (WT @ m_p)                    # allowed passages of each allowed entity
    inv_p = np.divide(1.0, deg_p, out=np.zeros(len(deg_p)), where=deg_p > 0)
    inv_e = np.divide(1.0, deg_e, out=np.zeros(len(deg_e)), where=deg_e > 0)
    to_p = (sparse.diags(m_p) @ W @ sparse.diags(inv_e)).tocsr()
    to_e = (sparse.diags(m_e) @ WT @ sparse.diags(inv_p)).tocsr()
    to_p.eliminate_zeros()
    to_e.eliminate_zeros()
    return Transitions(to_p, to_e, entity_mask.astype(bool), deg_e > 0)


def steps_for(damping: float, iterations: int, tolerance: float) -> int:
    """Steps (two hops each) after which one step's L1 change is at most ``tolerance``."""
    return max(1, min(iterations, math.ceil(math.log(tolerance / 2.0) / (2.0 * math.log(damping)))))


def walk(t: Transitions, seeds: Sequence[int], *, damping: float, iterations: int, tolerance: float) -> Walks:
    n_p, n_e = t.to_passages.shape
    seeds = [s for s in seeds if t.entity_mask[s]]
    n_s = len(seeds)
    if n_s == 0:
        return Walks(np.zeros((n_p, 0)), np.zeros((n_e, 0)), 0)
    cols = np.arange(n_s)
    x_e = np.zeros((n_e, n_s))
    x_e[seeds, cols] = 1.0
    x_p = np.zeros((n_p, n_s))
    d = float(damping)
    # A seed with no allowed passage keeps its walk (all of it restarts).
    dead = ~t.entity_alive[seeds]
    steps = steps_for(d, iterations, tolerance)
    for _ in range(steps):
        stuck = x_e[seeds, cols] * dead
        x_p = t.to_passages @ x_e
        x_p *= d
        x_e = t.to_entities @ x_p
        x_e *= d
        x_e[seeds, cols] += (1.0 - d) + d * stuck
    return Walks(x_p, x_e, steps)


def personalized_pagerank(W: sparse.csr_matrix, WT: sparse.csr_matrix, seeds: Sequence[int],
                          passage_mask: np.ndarray, entity_mask: np.ndarray, *, damping: float,
                          iterations: int, tolerance: float) -> Walks:
    """``walk`` over ``transitions(W, WT, masks)``; seeds are always allowed."""
    e_mask = entity_mask.astype(bool).copy()
    e_mask[list(seeds)] = True
    return walk(transitions(W, WT, passage_mask, e_mask), seeds, damping=damping, iterations=iterations,
                tolerance=tolerance)
