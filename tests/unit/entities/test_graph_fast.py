"""The graph arm's speed-ups of issue 29.5 change no answer: the mention graph, the masked
transitions (numpy CSR instead of scipy.sparse), the local push and the exact walk against
the frozen copies of the ones before (graph_v1.py), bit for bit, on seeded random bipartite
graphs with Zipf-like popularity, duplicate edges, masked passages and entities, and seeds
that are masked out or have no allowed passage.  The whole arm on the bench's synthetic
graph and on HotpotQA: tests/unit/entities/test_graph_arm_golden.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from memo.graph import cache
from memo.graph.ppr import LocalTransitions, push_walk, transitions, walk

from . import graph_v1


def _edges(rng: np.random.Generator, n_p: int, n_e: int) -> list[tuple[int, int]]:
    """(passage pk, entity pk) rows as the mentions table holds them: pks not dense, rows
    in seq order (records' passages one after the other), some pairs twice (a passage's own
    mention and a fact's)."""
    weights = 1.0 / np.arange(1, n_e + 1) ** 0.8
    weights /= weights.sum()
    e_pks = rng.permutation(n_e * 3)[:n_e] + 1
    out = []
    for p in range(n_p):
        for e in set(rng.choice(n_e, size=int(rng.integers(1, 7)), p=weights).tolist()):
            out.append((int(p * 2 + 5), int(e_pks[e])))
    dup = rng.choice(len(out), size=len(out) // 20, replace=False)
    out.extend(out[i] for i in dup.tolist())
    return out


def _same_matrix(new, old) -> None:
    old = old.tocsr()
    assert new.shape == old.shape
    assert np.array_equal(new.indptr, old.indptr)
    assert np.array_equal(new.indices, old.indices)
    assert np.array_equal(new.data, old.data)


def _same_lookups(new, old) -> None:
    """pk -> index answers as the frozen graph's dicts, for every pk it holds and for absent ones."""
    p_pks, e_pks = list(old.passage_index), list(old.entity_index)
    assert new.passage_indices(np.asarray(p_pks, dtype=np.int64)).tolist() == [old.passage_index[p] for p in p_pks]
    assert new.entity_indices(np.asarray(e_pks, dtype=np.int64)).tolist() == [old.entity_index[e] for e in e_pks]
    absent = [0, -3, max(p_pks + e_pks, default=0) + 1]
    assert all(new.passage_at(p) is None and new.entity_at(p) is None for p in absent if p not in old.passage_index
               and p not in old.entity_index)
    assert [new.entity_at(e) for e in e_pks[:20]] == [old.entity_index[e] for e in e_pks[:20]]


def _graphs(seed: int):
    rng = np.random.default_rng(seed)
    n_p, n_e = int(rng.integers(50, 2500)), int(rng.integers(10, 500))
    edges = _edges(rng, n_p, n_e)
    cuts = sorted(int(c) for c in rng.integers(0, len(edges), size=int(rng.integers(1, 5))))
    # the new graph built in one read and then merged with the rows of later writes (some
    # tiny, some empty), the old one in one
    new = cache._append(None, 0, 1, cache._pairs(edges[:cuts[0]]))
    for a, b in zip(cuts, [*cuts[1:], len(edges)], strict=True):
        new = cache._append(new, 0, new.seq + 1, cache._pairs(edges[a:b]))
    old = graph_v1._append(None, 0, 2, edges)
    return rng, new, old


@pytest.mark.parametrize("dense_share", [None, 0.0, float("inf")])     # shipped, always dense, always sparse
@pytest.mark.parametrize("seed", range(6))
def test_mention_graph_and_transitions_are_the_frozen_ones(seed, dense_share, monkeypatch):
    from memo.graph import ppr

    if dense_share is not None:
        monkeypatch.setattr(ppr, "DENSE_SHARE", dense_share)
    rng, new, old = _graphs(seed)
    assert np.array_equal(new.passage_pks, old.passage_pks) and np.array_equal(new.entity_pks, old.entity_pks)
    _same_lookups(new, old)
    assert np.array_equal(new.order, old.order)
    _same_matrix(new.W, old.W)
    _same_matrix(new.WT, old.WT)
    n_p, n_e = old.W.shape
    p_mask = rng.random(n_p) > rng.choice([0.0, 0.1, 0.5])
    e_mask = rng.random(n_e) > rng.choice([0.0, 0.05, 0.3])
    assert np.array_equal(new.WT.row_sums(p_mask.astype(np.float64)), old.WT @ p_mask.astype(np.float64))
    t_new = transitions(new.W, new.WT, p_mask, e_mask)
    t_old = graph_v1.transitions(old.W, old.WT, p_mask, e_mask)
    _same_matrix(t_new.to_passages, t_old.to_passages)
    _same_matrix(t_new.to_entities, t_old.to_entities)
    assert np.array_equal(t_new.entity_mask, t_old.entity_mask)
    assert np.array_equal(t_new.entity_alive, t_old.entity_alive)
    local = LocalTransitions.of(new.W, new.WT, p_mask, e_mask)     # one, its degrees kept across walks
    for _ in range(6):
        seeds = [int(s) for s in rng.choice(n_e, size=int(rng.integers(1, 4)), replace=False)]
        for eps in (1e-3, 1e-5, 1e-6, 1e-8):
            for d in (0.5, 0.85):
                a = push_walk(t_new, seeds, damping=d, epsilon=eps)
                b = graph_v1.push_walk(t_old, seeds, damping=d, epsilon=eps)
                c = push_walk(local, seeds, damping=d, epsilon=eps)
                assert a.iterations == b.iterations == c.iterations
                assert np.array_equal(a.passages, b.passages) and np.array_equal(a.entities, b.entities)
                assert np.array_equal(c.passages, b.passages) and np.array_equal(c.entities, b.entities)
        a = walk(t_new, seeds, damping=0.5)
        b = graph_v1.walk(t_old, seeds, damping=0.5)
        assert np.array_equal(a.passages, b.passages) and np.array_equal(a.entities, b.entities)


def test_local_transitions_hold_the_masked_rows():
    """Each node's allowed neighbours and their count, as the rows of ``transitions``."""
    rng = np.random.default_rng(3)
    g = cache._append(None, 0, 1, cache._pairs(_edges(rng, 400, 60)))
    p_mask, e_mask = rng.random(g.W.shape[0]) > 0.2, rng.random(g.W.shape[1]) > 0.2
    full = transitions(g.W, g.WT, p_mask, e_mask)
    local = LocalTransitions.of(g.W, g.WT, p_mask, e_mask)
    for side, m in ((0, full.to_entities), (1, full.to_passages)):
        nodes = rng.permutation(m.shape[0])[: m.shape[0] // 2]
        nbrs, deg = local.neighbours(side, nodes)
        assert np.array_equal(deg, np.diff(m.indptr)[nodes])
        assert np.array_equal(nbrs, np.concatenate([m.indices[m.indptr[i]:m.indptr[i + 1]] for i in nodes]))
        assert np.array_equal(local.degree(side, np.arange(m.shape[0])), np.diff(m.indptr))
    assert np.array_equal(g.W.gather(np.array([3, 1, 3])),
                          np.concatenate([g.W.indices[g.W.indptr[i]:g.W.indptr[i + 1]] for i in (3, 1, 3)]))


@pytest.mark.parametrize("eager_share", [0.25, 0.0, 1.0])
def test_local_transitions_count_every_degree_up_front(monkeypatch, eager_share):
    """The degrees ``LocalTransitions.of`` counts from the masked-out nodes' edges are the
    rows' allowed neighbours of ``transitions`` (0 for a masked-out row); past
    ``EAGER_SHARE`` of the edges they are left to the walk (-1) and found the same; the
    walks are the same either way."""
    from memo.graph import ppr

    monkeypatch.setattr(ppr, "EAGER_SHARE", eager_share)
    rng = np.random.default_rng(11)
    g = cache._append(None, 0, 1, cache._pairs(_edges(rng, 700, 90)))
    for share in (0.0, 0.03, 0.3, 0.9):
        p_mask, e_mask = rng.random(g.W.shape[0]) >= share, rng.random(g.W.shape[1]) >= share
        full = transitions(g.W, g.WT, p_mask, e_mask)
        local = LocalTransitions.of(g.W, g.WT, p_mask, e_mask)
        for side, m in ((0, full.to_entities), (1, full.to_passages)):
            upfront = local.degrees[side]
            counted = (upfront >= 0).all()
            assert counted or (upfront == -1).all(), (share, side)
            if eager_share == 1.0:
                assert counted
            if eager_share == 0.0 and share > 0:
                assert not counted
            if counted:
                assert np.array_equal(upfront, np.diff(m.indptr)), (share, side)
            assert np.array_equal(local.degree(side, np.arange(m.shape[0])), np.diff(m.indptr))
        seeds = [int(s) for s in rng.choice(g.W.shape[1], size=2, replace=False)]
        a = push_walk(full, seeds, damping=0.85, epsilon=1e-6)
        b = push_walk(LocalTransitions.of(g.W, g.WT, p_mask, e_mask), seeds, damping=0.85, epsilon=1e-6)
        assert a.iterations == b.iterations
        assert np.array_equal(a.passages, b.passages) and np.array_equal(a.entities, b.entities)


def test_push_walk_seeds_without_allowed_passages():
    # e0 - p0 - e1 - p1, p1 masked out, e2 mentioned only by p1: e2 has no allowed passage
    W = sparse.csr_matrix((np.ones(4), ([0, 0, 1, 1], [0, 1, 1, 2])), shape=(2, 3))
    t_new = transitions(W, W.T.tocsr(), np.array([True, False]), np.ones(3, bool))
    t_old = graph_v1.transitions(W, W.T.tocsr(), np.array([True, False]), np.ones(3, bool))
    for seeds in ([2], [0, 2], [2, 1]):
        a = push_walk(t_new, seeds, damping=0.5, epsilon=1e-9)
        b = graph_v1.push_walk(t_old, seeds, damping=0.5, epsilon=1e-9)
        assert np.array_equal(a.passages, b.passages) and np.array_equal(a.entities, b.entities)


def test_empty_graph():
    g = cache._append(None, 0, 0, cache._pairs([]))
    assert g.W.shape == (0, 0) and g.edges == 0
    g = cache._append(g, 0, 1, cache._pairs([(3, 9)]))
    assert (g.passage_at(3), g.entity_at(9), g.passage_at(9), g.edges) == (0, 0, None, 1)


def test_graph_read_from_the_store_in_one_go_and_after_writes(fresh_db):
    """The mention rows read by ``_read`` (group_concat strings on SQLite) give the graph the
    frozen per-row loop builds from ``fetchall``, loaded at once or brought up to date."""
    from memo.graph.cache import GraphCache
    from memo.ops.add import add_record
    from memo.stored import RecordDraft

    rng = np.random.default_rng(11)
    names = [f"Place{i}" for i in range(40)]

    def add(n: int, start: int) -> None:
        for r in range(start, start + n):
            picked = rng.choice(names, size=4)
            add_record(fresh_db, RecordDraft(body=f"We met {picked[0]} and {picked[1]} in {picked[2]}.\n\n"
                                                  f"Later {picked[3]} wrote to {picked[0]}.", id=f"r{r}"))

    add(30, 0)
    incremental = GraphCache()
    incremental.graph(fresh_db)
    add(25, 30)
    g = incremental.graph(fresh_db)                 # the rows added since, appended
    full = GraphCache().graph(fresh_db)             # read in one go
    rows = fresh_db.execute("SELECT passage_pk, entity_pk FROM mentions ORDER BY seq").fetchall()
    old = graph_v1._append(None, 0, len(rows), [tuple(r) for r in rows])
    for new in (g, full):
        assert np.array_equal(new.passage_pks, old.passage_pks) and np.array_equal(new.entity_pks, old.entity_pks)
        _same_matrix(new.W, old.W)
        _same_matrix(new.WT, old.WT)


def test_the_graph_arm_runs_without_scipy(tmp_path):
    """scipy.sparse's import alone took 160-200 ms, more than a process's whole first search
    may (issue 29.5): a routed search whose graph arm walks (push) and hops (title) must not
    load it.  In a fresh process, since this one has scipy from the frozen copies."""
    import json
    import subprocess
    import sys

    from memo.ops.add import add_record
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    db = tmp_path / "g.db"
    conn = open_db(db)
    for i, body in enumerate(["Alice works at Initech with Bob.", "Bob lives in Paris.", "Paris has the Louvre.",
                              "Carol met Alice in Berlin.", "Alice and Bob went to Paris together."]):
        add_record(conn, RecordDraft(body=body, title="Paris" if i == 2 else None))
    conn.close()
    code = ("import json, sys\nfrom memo.retrieve import SearchRequest, search\nfrom memo.store.db import open_db\n"
            f"r = search(open_db({str(db)!r}, write=False), SearchRequest('Alice and Paris', limit=10), 'zscore')\n"
            "arm = next(a for a in r.trace.arms if a.name == 'graph')\n"
            "print(json.dumps({'ran': arm.ran, 'scipy': sorted(m for m in sys.modules if m.startswith('scipy'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"ran": True, "scipy": []}, got
