"""Frozen copy of the graph arm's walks and mention graph before issue 29.5 (memo.graph.ppr
and memo.graph.cache as of commit e3c6775, scipy.sparse matrices): the reference
tests/unit/entities/test_graph_fast.py compares the faster ones with, bit for bit.  Do not
edit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from memo.graph.ppr import Walks


@dataclass(frozen=True, slots=True)
class Transitions:
    to_passages: sparse.csr_matrix
    to_entities: sparse.csr_matrix
    entity_mask: np.ndarray
    entity_alive: np.ndarray


@dataclass(frozen=True, slots=True)
class MentionGraph:
    epoch: int
    seq: int
    W: sparse.csr_matrix
    WT: sparse.csr_matrix
    passage_pks: np.ndarray
    entity_pks: np.ndarray
    passage_index: dict[int, int]
    entity_index: dict[int, int]
    rows: np.ndarray
    cols: np.ndarray
    order: np.ndarray


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


WALK_ITERATIONS = 30
WALK_TOLERANCE = 1e-5


def walk(t: Transitions, seeds: Sequence[int], *, damping: float, iterations: int = WALK_ITERATIONS,
         tolerance: float = WALK_TOLERANCE) -> Walks:
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


def _build(epoch: int, seq: int, passage_pks: list[int], entity_pks: list[int], p_index: dict[int, int],
           e_index: dict[int, int], rows: np.ndarray, cols: np.ndarray) -> MentionGraph:
    shape = (len(passage_pks), len(entity_pks))
    W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
    W.sum_duplicates()
    W.data[:] = 1.0                          # unweighted: duplicates (own + fact mentions) are one edge
    WT = W.T.tocsr()
    ppks = np.asarray(passage_pks, dtype=np.int64)
    return MentionGraph(epoch, seq, W, WT, ppks, np.asarray(entity_pks, dtype=np.int64), p_index, e_index,
                        rows, cols, np.argsort(ppks, kind="stable"))


def _append(base: MentionGraph | None, epoch: int, seq: int, new: list[tuple[int, int]]) -> MentionGraph:
    if base is None:
        passage_pks: list[int] = []
        entity_pks: list[int] = []
        p_index: dict[int, int] = {}
        e_index: dict[int, int] = {}
        old_rows = old_cols = np.zeros(0, dtype=np.int64)
    else:
        passage_pks, entity_pks = base.passage_pks.tolist(), base.entity_pks.tolist()
        p_index, e_index = dict(base.passage_index), dict(base.entity_index)
        old_rows, old_cols = base.rows, base.cols
    rows = np.empty(len(new), dtype=np.int64)
    cols = np.empty(len(new), dtype=np.int64)
    for i, (ppk, epk) in enumerate(new):
        r = p_index.get(ppk)
        if r is None:
            r = p_index[ppk] = len(passage_pks)
            passage_pks.append(ppk)
        c = e_index.get(epk)
        if c is None:
            c = e_index[epk] = len(entity_pks)
            entity_pks.append(epk)
        rows[i], cols[i] = r, c
    return _build(epoch, seq, passage_pks, entity_pks, p_index, e_index,
                  np.concatenate([old_rows, rows]), np.concatenate([old_cols, cols]))




def _gather(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray, lens: np.ndarray) -> np.ndarray:
    total = int(lens.sum())
    starts = ptr[nodes]
    offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
    return idx[offsets]


def push_walk(t: Transitions, seeds: Sequence[int], *, damping: float, epsilon: float) -> Walks:
    """memo.graph.ppr.push_walk before issue 29.5."""
    n_p, n_e = t.to_passages.shape
    seeds = [s for s in seeds if t.entity_mask[s]]
    n_s = len(seeds)
    x_p = np.zeros((n_p, n_s))
    x_e = np.zeros((n_e, n_s))
    if n_s == 0:
        return Walks(x_p, x_e, 0)
    d = float(damping)
    keep = 1.0 - d
    # entity -> its allowed passages: the rows of to_entities; passage -> its allowed
    # entities: the rows of to_passages (both hold exactly the allowed edges).
    ptrs = (t.to_entities.indptr, t.to_passages.indptr)
    idxs = (t.to_entities.indices, t.to_passages.indices)
    degs = (np.diff(ptrs[0]), np.diff(ptrs[1]))                 # (entities, passages)
    sizes = (n_e, n_p)
    rounds = 0
    for col, seed in enumerate(seeds):
        est = (x_e[:, col], x_p[:, col])
        if degs[0][seed] == 0:
            est[0][seed] = 1.0
            continue
        res = [np.zeros(n_e), np.zeros(n_p)]
        res[0][seed] = 1.0
        active = [np.array([seed]), np.zeros(0, dtype=np.int64)]   # nodes that may be above threshold
        side = 0
        while len(active[0]) or len(active[1]):
            nodes = active[side]
            active[side] = np.zeros(0, dtype=np.int64)
            if len(nodes):
                r = res[side][nodes]
                deg = degs[side][nodes]
                over = r > epsilon * deg
                nodes, r, deg = nodes[over], r[over], deg[over]
                if len(nodes):
                    rounds += 1
                    est[side][nodes] += keep * r
                    res[side][nodes] = 0.0
                    nbrs = _gather(ptrs[side], idxs[side], nodes, deg)
                    other = 1 - side
                    res[other] += np.bincount(nbrs, weights=np.repeat(d * r / deg, deg), minlength=sizes[other])
                    touched = np.unique(nbrs)
                    active[other] = np.union1d(active[other], touched)
            side = 1 - side
    return Walks(x_p, x_e, rounds)
