"""The title index brought up to a grown graph (memo/graph/titles.py ``_updated``): after
every write it equals the index computed from every titled passage, including a title that
names no entity of the graph until a later write adds one."""

from __future__ import annotations

import numpy as np

from memo.graph import titles
from memo.graph.cache import GraphCache
from memo.ops.add import add_record
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.stored import RecordDraft

PLACES = [f"Harbor{i}" for i in range(12)]


def _full(conn, graph) -> np.ndarray:
    of_passage, _ = titles._of_passage(conn, graph, np.arange(len(graph.passage_pks)))
    return of_passage


def _same(conn, graph, index) -> None:
    want = _full(conn, graph)
    assert np.array_equal(index.of_passage, want)
    q = np.flatnonzero(want >= 0)
    ref = titles.CSR.from_edges(want[q], q, (len(graph.entity_pks), len(graph.passage_pks)))
    assert np.array_equal(index.passages.indptr, ref.indptr) and np.array_equal(index.passages.indices, ref.indices)


def test_each_write_updates_the_index_to_the_full_one(tmp_path):
    titles.forget_title_indexes()
    conn = open_db(tmp_path / "t.db")
    rng = np.random.default_rng(4)
    cache = GraphCache()

    def add(n: int, start: int) -> None:
        for r in range(start, start + n):
            a, b = rng.choice(PLACES, size=2)
            title = str(rng.choice(PLACES)) if r % 3 else ("notes on the week" if r % 2 else None)
            add_record(conn, RecordDraft(body=f"We sailed from {a} to {b}.\n\nThen {b} again.", title=title,
                                         id=f"r{r}"))

    add(20, 0)
    graph = cache.graph(conn)
    first = titles.title_index(conn, graph)
    assert first.unresolved is not None and (first.of_passage >= 0).any()
    _same(conn, graph, first)
    start = 20
    for n in (1, 3, 7):
        add(n, start)
        start += n
        graph = cache.graph(conn)
        index = titles.title_index(conn, graph)
        assert first.unresolved is None            # handed on: this one was updated, not recomputed
        _same(conn, graph, index)
        first = index
    assert titles.title_index(conn, graph) is first     # same state: the same index
    conn.close()


def test_a_title_resolved_by_a_later_entity(tmp_path):
    """A titled passage in the graph whose title's entity is not in it yet (here written by
    hand: its own mention of the title removed) is resolved when a later write brings an
    entity with that key."""
    titles.forget_title_indexes()
    conn = open_db(tmp_path / "t.db")
    add_record(conn, RecordDraft(body="Kestrel Harbor and Lighthouse Point.", title="Osprey Bay", id="a"))
    add_record(conn, RecordDraft(body="Lighthouse Point again.", id="b"))
    key = conn.execute("SELECT key FROM entities WHERE name = 'Osprey Bay'").fetchone()[0]
    with write_tx(conn):      # the title's entity leaves the graph (and the epoch moves)
        conn.execute("DELETE FROM mentions WHERE entity_pk = (SELECT pk FROM entities WHERE key = ?)", (key,))
        conn.execute("DELETE FROM entities WHERE key = ?", (key,))
        conn.execute("UPDATE memo_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'mentions_epoch'")
    cache = GraphCache()
    graph = cache.graph(conn)
    before = titles.title_index(conn, graph)
    assert before.unresolved == {key: [int(graph.passage_at(int(conn.execute(
        "SELECT pk FROM passages WHERE record_id = 'a'").fetchone()[0])))]}
    add_record(conn, RecordDraft(body="Osprey Bay lies south.", id="c"))     # the entity comes back
    graph = cache.graph(conn)
    after = titles.title_index(conn, graph)
    assert before.unresolved is None and after.unresolved == {}
    _same(conn, graph, after)
    assert (after.of_passage >= 0).sum() == 1
    conn.close()
