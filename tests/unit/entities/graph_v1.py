"""Frozen copy of the graph arm's local push before issue 29.5 (memo.graph.ppr.push_walk as
of commit e3c6775): the reference tests/unit/entities/test_graph_fast.py compares the
faster one with, bit for bit.  Do not edit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memo.graph.ppr import Transitions, Walks


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
