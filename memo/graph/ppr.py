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
so callers cache it per scope; ``walk`` is the per-query part (2 sparse products per step
over every edge of the graph).  ``push_walk`` computes the same stationary distribution
approximately by local push (Andersen, Chung and Lang 2006), touching only the seed's
neighbourhood: the graph arm's default (``graph.epsilon``), ``walk`` the exact reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memo.graph.csr import CSR, distinct


@dataclass(frozen=True, slots=True)
class Walks:
    passages: np.ndarray     # (n_passages, n_seeds) mass of each walk on each passage
    entities: np.ndarray     # (n_entities, n_seeds)
    iterations: int          # power iterations run


@dataclass(frozen=True, slots=True)
class Transitions:
    to_passages: CSR                 # (P, E): entity -> allowed passage, columns sum to 1 (0 for dead ends)
    to_entities: CSR                 # (E, P): passage -> allowed entity
    entity_mask: np.ndarray          # entities a walk may be at (seeds must be among them)
    entity_alive: np.ndarray         # allowed entities with at least one allowed passage


def transitions(W: Any, WT: Any, passage_mask: np.ndarray, entity_mask: np.ndarray) -> Transitions:
    """The masked, normalised transitions (``W``, ``WT``: ``memo.graph.csr.CSR`` or scipy
    sparse matrices).  An entry of ``to_passages`` is ``(m_p[i] * W[i, j]) * inv_e[j]``, the
    product scipy's ``diags(m_p) @ W @ diags(inv_e)`` computed before issue 29.5, zeros
    dropped, indices ascending within each row as there."""
    W, WT = CSR.of(W), CSR.of(WT)
    m_p = passage_mask.astype(np.float64)
    m_e = entity_mask.astype(np.float64)
    deg_p = m_p * W.row_sums(m_e)               # allowed entities of each allowed passage
    deg_e = m_e * WT.row_sums(m_p)              # allowed passages of each allowed entity
    inv_p = np.divide(1.0, deg_p, out=np.zeros(len(deg_p)), where=deg_p > 0)
    inv_e = np.divide(1.0, deg_e, out=np.zeros(len(deg_e)), where=deg_e > 0)
    to_p = (m_p[W.row_of()] * W.data) * inv_e[W.indices]
    to_e = (m_e[WT.row_of()] * WT.data) * inv_p[WT.indices]
    return Transitions(W.keep(to_p != 0, to_p), WT.keep(to_e != 0, to_e), entity_mask.astype(bool), deg_e > 0)


@dataclass(frozen=True, slots=True)
class LocalTransitions:
    """What ``push_walk`` reads of ``transitions(W, WT, passage_mask, entity_mask)`` (each
    node's allowed neighbours, ascending, and their count), computed from the unmasked
    graph for the nodes a walk reaches instead of for the whole graph: the same lists, so
    the same walk bit for bit, without the whole-graph pass (1.05 s of a cold graph search
    at 1M passages, and again after every write in a server).  The degrees found are kept
    (``-1``: not computed yet)."""

    W: CSR                           # (P, E) unmasked
    WT: CSR                          # (E, P)
    passage_mask: np.ndarray         # bool (P,)
    entity_mask: np.ndarray          # bool (E,)
    degrees: tuple[np.ndarray, np.ndarray]   # (entities, passages): allowed neighbours, -1 unknown

    @classmethod
    def of(cls, W: CSR, WT: CSR, passage_mask: np.ndarray, entity_mask: np.ndarray) -> LocalTransitions:
        p_mask, e_mask = passage_mask.astype(bool), entity_mask.astype(bool)
        return cls(W, WT, p_mask, e_mask, (_allowed_degrees(WT, W, e_mask, p_mask),
                                           _allowed_degrees(W, WT, p_mask, e_mask)))

    @property
    def shape(self) -> tuple[int, int]:
        return self.W.shape

    def neighbours(self, side: int, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(allowed neighbours of ``nodes`` concatenated in node order, their counts) on
        ``side`` (0: entities -> passages, 1: passages -> entities)."""
        m, own, other = ((self.WT, self.entity_mask, self.passage_mask) if side == 0
                         else (self.W, self.passage_mask, self.entity_mask))
        raw = (m.indptr[nodes + 1] - m.indptr[nodes]) * own[nodes]
        nbrs = _gather(m.indptr, m.indices, nodes, raw)
        allowed = other[nbrs]
        owner = np.repeat(np.arange(len(nodes), dtype=np.int64), raw)
        deg = np.bincount(owner[allowed], minlength=len(nodes)).astype(np.int64)
        self.degrees[side][nodes] = deg
        return nbrs[allowed], deg

    def degree(self, side: int, nodes: np.ndarray) -> np.ndarray:
        known = self.degrees[side][nodes]
        todo = known < 0
        if todo.any():
            self.neighbours(side, nodes[todo])
            known = self.degrees[side][nodes]
        return known


def _allowed_degrees(m: CSR, mt: CSR, own: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Each row's allowed neighbours (0 for a row ``own`` masks out), or -1 each (found when
    a walk reaches the node) when that would read more than ``EAGER_SHARE`` of the edges.

    A row's entries less those in masked-out columns: the masked-out columns' rows of the
    transpose ``mt`` hold exactly the rows to take one from (canonical: no duplicate).  Few
    nodes are masked out (common or unconfirmed entities, passages out of scope), so this
    reads their edges, not the graph's; a cold walk otherwise gathered the neighbours of
    every passage a popular entity reaches just to count them (at 1M passages ~120 ms of a
    cold process's first graph search).  The same integers ``neighbours`` counts."""
    out_cols = np.flatnonzero(~other)
    lens = mt.indptr[out_cols + 1] - mt.indptr[out_cols]
    if int(lens.sum()) > EAGER_SHARE * m.nnz:
        return np.full(m.shape[0], -1, dtype=np.int64)
    deg = np.diff(m.indptr)
    if len(out_cols):
        deg = deg - np.bincount(_gather(mt.indptr, mt.indices, out_cols, lens), minlength=m.shape[0])
    return np.where(own, deg, 0).astype(np.int64)


# ``_allowed_degrees`` counts every row's degree when the masked-out nodes hold at most this
# share of the edges (else the walk counts the rows it reaches, as before).
EAGER_SHARE = 0.25


def steps_for(damping: float, iterations: int, tolerance: float) -> int:
    """Steps (two hops each) after which one step's L1 change is at most ``tolerance``."""
    return max(1, min(iterations, math.ceil(math.log(tolerance / 2.0) / (2.0 * math.log(damping)))))


# The exact power iteration (graph.epsilon = 0): at most WALK_ITERATIONS steps, stopping once
# every walk's L1 change is below WALK_TOLERANCE (no profile ever changed either).
WALK_ITERATIONS = 30
WALK_TOLERANCE = 1e-5


def walk(t: Transitions, seeds: Sequence[int], *, damping: float, iterations: int = WALK_ITERATIONS,
         tolerance: float = WALK_TOLERANCE) -> Walks:
    n_p, n_e = t.to_passages.shape
    seeds = [s for s in seeds if t.entity_mask[s]]
    n_s = len(seeds)
    if n_s == 0:
        return Walks(np.zeros((n_p, 0)), np.zeros((n_e, 0)), 0)
    # scipy's products (the exact walk is not the default: only it imports scipy)
    to_passages, to_entities = t.to_passages.to_scipy(), t.to_entities.to_scipy()
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
        x_p = to_passages @ x_e
        x_p *= d
        x_e = to_entities @ x_p
        x_e *= d
        x_e[seeds, cols] += (1.0 - d) + d * stuck
    return Walks(x_p, x_e, steps)


def personalized_pagerank(W: Any, WT: Any, seeds: Sequence[int],
                          passage_mask: np.ndarray, entity_mask: np.ndarray, *, damping: float,
                          iterations: int, tolerance: float) -> Walks:
    """``walk`` over ``transitions(W, WT, masks)``; seeds are always allowed."""
    e_mask = entity_mask.astype(bool).copy()
    e_mask[list(seeds)] = True
    return walk(transitions(W, WT, passage_mask, e_mask), seeds, damping=damping, iterations=iterations,
                tolerance=tolerance)


def _gather(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The neighbours of ``nodes`` in a CSR structure, concatenated in node order."""
    total = int(lens.sum())
    starts = ptr[nodes]
    offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
    return idx[offsets]


# A round's spread is added to the whole residual vector of the other side (one bincount
# over it) when it reaches more than this share of that side's nodes, else to the nodes it
# reaches only (sorted, summed per node: cost proportional to the spread, not the graph).
DENSE_SHARE = 1 / 8


def push_walk(t: Transitions | LocalTransitions, seeds: Sequence[int], *, damping: float, epsilon: float) -> Walks:
    """Approximate ``walk`` by local push (Andersen, Chung and Lang 2006), per seed: a
    residual starts as 1 on the seed; every node whose residual r exceeds ``epsilon`` times
    its allowed degree keeps ``(1 - d) r`` as estimate and spreads ``d r / degree`` to each
    allowed neighbour; rounds alternate between the entity and the passage side (all nodes
    above their threshold on one side push at once, vectorised) until no node is above.
    Only the seed's neighbourhood is touched: the pushes move at most ``1 / (epsilon (1 -
    d))`` edge updates, whatever the graph's size.  The estimate never exceeds the exact
    stationary mass and falls short of it at node v by less than ``epsilon * degree(v)``
    (the residuals left, each below its threshold, spread by the symmetric walk).
    ``iterations`` of the result counts rounds.  A seed with no allowed passage gives its
    walk no passage mass (as ``walk``).

    Speed (issue 29.5): the nodes that push in a round are those the previous round (on
    the other side) reached whose residual is now above their threshold (``epsilon *
    degree``): a node left below its threshold stays below until it is reached again.  A
    round that reaches few nodes adds its spread to those nodes only (``DENSE_SHARE``);
    one that reaches many adds a bincount over the whole side and the next round compares
    the whole side with its thresholds.  Either way the same nodes push, in ascending order,
    and each residual gets the same sum, added in the same order as one bincount over all
    nodes did before: the results are those of the push before, bit for bit
    (tests/unit/entities/test_graph_fast.py against the frozen copy, both ways forced)."""
    local = isinstance(t, LocalTransitions)
    n_p, n_e = t.shape if local else t.to_passages.shape
    seeds = [s for s in seeds if t.entity_mask[s]]
    n_s = len(seeds)
    x_p = np.zeros((n_p, n_s))
    x_e = np.zeros((n_e, n_s))
    if n_s == 0:
        return Walks(x_p, x_e, 0)
    d = float(damping)
    keep = 1.0 - d
    sizes = (n_e, n_p)
    if local:
        def degree(side: int, nodes: np.ndarray) -> np.ndarray:
            return t.degree(side, nodes)

        def spread_to(side: int, nodes: np.ndarray, deg: np.ndarray) -> np.ndarray:
            return t.neighbours(side, nodes)[0]

        def above(side: int, res: np.ndarray) -> np.ndarray:
            # a node holding no residual is never above its threshold (epsilon x degree >= 0)
            cand = np.flatnonzero(res > 0)
            return cand[res[cand] > epsilon * degree(side, cand)]
    else:
        # entity -> its allowed passages: the rows of to_entities; passage -> its allowed
        # entities: the rows of to_passages (both hold exactly the allowed edges).
        ptrs = (t.to_entities.indptr, t.to_passages.indptr)
        idxs = (t.to_entities.indices, t.to_passages.indices)
        degs = (np.diff(ptrs[0]), np.diff(ptrs[1]))                 # (entities, passages)
        limits = (epsilon * degs[0], epsilon * degs[1])             # a node pushes while its residual is above

        def degree(side: int, nodes: np.ndarray) -> np.ndarray:
            return degs[side][nodes]

        def spread_to(side: int, nodes: np.ndarray, deg: np.ndarray) -> np.ndarray:
            return _gather(ptrs[side], idxs[side], nodes, deg)

        def above(side: int, res: np.ndarray) -> np.ndarray:
            return np.flatnonzero(res > limits[side])
    everyone = np.zeros(0, dtype=np.int64)                      # marker: compare the whole side
    rounds = 0
    for col, seed in enumerate(seeds):
        est = (x_e[:, col], x_p[:, col])
        if degree(0, np.array([seed], dtype=np.int64))[0] == 0:
            est[0][seed] = 1.0
            continue
        res = [np.zeros(n_e), np.zeros(n_p)]
        res[0][seed] = 1.0
        # per side: None (not reached since it last pushed), the nodes reached (ascending,
        # distinct), or ``everyone``
        reached: list[np.ndarray | None] = [np.array([seed], dtype=np.int64), None]
        side = 0
        while reached[0] is not None or reached[1] is not None:
            cand = reached[side]
            if cand is not None:
                reached[side] = None
                if cand is everyone:
                    nodes = above(side, res[side])
                else:
                    nodes = cand[res[side][cand] > epsilon * degree(side, cand)]
                if len(nodes):
                    rounds += 1
                    r = res[side][nodes]
                    deg = degree(side, nodes)
                    est[side][nodes] += keep * r
                    res[side][nodes] = 0.0
                    nbrs = spread_to(side, nodes, deg)
                    spread = np.repeat(d * r / deg, deg)
                    other = 1 - side
                    if len(nbrs) > DENSE_SHARE * sizes[other]:
                        res[other] += np.bincount(nbrs, weights=spread, minlength=sizes[other])
                        reached[other] = everyone
                    else:
                        by_node = np.argsort(nbrs, kind="stable")     # a node's shares in spread order
                        sorted_nbrs = nbrs[by_node]
                        start = distinct(sorted_nbrs)
                        hit = sorted_nbrs[start]
                        res[other][hit] += np.bincount(np.cumsum(start) - 1, weights=spread[by_node])
                        reached[other] = hit
            side = 1 - side
    return Walks(x_p, x_e, rounds)
