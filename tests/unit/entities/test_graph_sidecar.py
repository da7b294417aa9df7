"""The mention graph's sidecar (memo/graph/sidecar.py, memo/graph/cache.py): a new process
maps it instead of reading every mention row, merges the rows written since, and never
trusts one that does not match the database (issue 31.2: a cold graph search at 1M)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memo.graph import sidecar
from memo.graph.cache import GraphCache
from memo.ops.add import add_record
from memo.ops.records import forget
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.stored import RecordDraft

NAMES = [f"Place{i}" for i in range(30)]


def _add(conn: sqlite3.Connection, n: int, start: int, seed: int = 3) -> None:
    rng = np.random.default_rng(seed + start)
    for r in range(start, start + n):
        a, b, c = rng.choice(NAMES, size=3)
        add_record(conn, RecordDraft(body=f"We met {a} and {b} in {c}.\n\nLater {c} wrote to {a}.", id=f"r{r}",
                                     title=str(b) if r % 2 else None))


def _same(a, b) -> None:
    assert a.W.shape == b.W.shape and a.edges == b.edges
    for x, y in ((a.W, b.W), (a.WT, b.WT)):
        assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
        assert np.array_equal(x.data, y.data)
    for name in ("passage_pks", "entity_pks", "order", "passage_sorted", "entity_order", "entity_sorted"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _full(conn: sqlite3.Connection):
    return GraphCache().graph(conn)          # no sidecar: every row read


@pytest.fixture
def db(tmp_path: Path):
    conn = open_db(tmp_path / "g.db")
    _add(conn, 40, 0)
    yield conn, tmp_path / "g.db"
    conn.close()


def test_written_then_mapped_then_merged_with_later_writes(db):
    conn, path = db
    first = GraphCache()
    g = first.graph(conn, sidecar_min=1)
    assert first.sidecar_note == "written" and sidecar.sidecar_path(path).exists()
    assert g.sidecar_edges == g.edges
    _same(g, _full(conn))
    new = GraphCache()                               # a new process
    mapped = new.graph(conn, sidecar_min=1)
    assert new.sidecar_note == "ok" and isinstance(mapped.W.indices.base, np.memmap)     # mapped, not read
    _same(mapped, _full(conn))
    _add(conn, 3, 40)                                # a few rows since: merged, the file kept
    again = GraphCache()
    merged = again.graph(conn, sidecar_min=1, sidecar_tail=10.0)
    assert again.sidecar_note == "ok" and merged.sidecar_edges == mapped.edges < merged.edges
    _same(merged, _full(conn))
    _add(conn, 30, 43)                               # grown past the tail share: written again
    grown = again.graph(conn, sidecar_min=1, sidecar_tail=0.05)
    assert again.sidecar_note == "written" and grown.sidecar_edges == grown.edges
    _same(GraphCache().graph(conn, sidecar_min=1), _full(conn))


def test_a_small_graph_keeps_no_sidecar(db):
    conn, path = db
    cache = GraphCache()
    g = cache.graph(conn, sidecar_min=10**9)
    assert not sidecar.sidecar_path(path).exists() and g.sidecar_edges == 0
    GraphCache().graph(conn, sidecar_min=0)
    assert not sidecar.sidecar_path(path).exists()


def test_a_deletion_makes_it_stale(db):
    conn, path = db
    GraphCache().graph(conn, sidecar_min=1)
    forget(conn, ["r3"])                             # mention rows go: the epoch moves
    cache = GraphCache()
    g = cache.graph(conn, sidecar_min=1)
    assert cache.sidecar_note == "written"           # stale, read in full, written again
    _same(g, _full(conn))
    probe = GraphCache()
    probe.graph(conn, sidecar_min=1)
    assert probe.sidecar_note == "ok"


def _share_epoch(conn, like) -> None:
    """Give ``conn`` the mentions epoch of ``like``: the checks behind the epoch's are tested
    (two databases from before epochs were random both hold '0'; memo.store.epochs)."""
    value = like.execute("SELECT value FROM memo_meta WHERE key = 'mentions_epoch'").fetchone()[0]
    with write_tx(conn):
        conn.execute("UPDATE memo_meta SET value = ? WHERE key = 'mentions_epoch'", (value,))


def test_another_databases_sidecar_is_not_trusted(db, tmp_path):
    conn, path = db
    other = open_db(tmp_path / "other.db")
    _add(other, 40, 0, seed=99)                      # same shape, other mentions
    _share_epoch(other, conn)     # as two databases from before random epochs (both '0') would
    GraphCache().graph(other, sidecar_min=1)
    shutil.copy(sidecar.sidecar_path(tmp_path / "other.db"), sidecar.sidecar_path(path))
    found, why = sidecar.open_valid(conn, sidecar.sidecar_path(path))
    assert found is None and "differs from the database" in why, why
    _same(GraphCache().graph(conn, sidecar_min=1), _full(conn))
    found, why = sidecar.open_valid(other, sidecar.sidecar_path(tmp_path / "other.db"))
    assert found is not None and why == "ok"
    other.close()


def test_a_sidecar_ahead_of_the_database_is_not_trusted(db, tmp_path):
    conn, path = db
    GraphCache().graph(conn, sidecar_min=1)
    _add(conn, 5, 40)
    GraphCache().graph(conn, sidecar_min=1, sidecar_tail=0.0)       # written at the later seq
    older = open_db(tmp_path / "older.db")
    _add(older, 40, 0)                                               # the same first rows only
    _share_epoch(older, conn)
    shutil.copy(sidecar.sidecar_path(path), sidecar.sidecar_path(tmp_path / "older.db"))
    found, why = sidecar.open_valid(older, sidecar.sidecar_path(tmp_path / "older.db"))
    assert found is None and "ahead" in why
    _same(GraphCache().graph(older, sidecar_min=1), _full(older))
    older.close()


def test_a_damaged_file_is_not_used(db):
    conn, path = db
    GraphCache().graph(conn, sidecar_min=1)
    side = sidecar.sidecar_path(path)
    side.write_bytes(side.read_bytes()[:200])        # truncated
    cache = GraphCache()
    _same(cache.graph(conn, sidecar_min=1), _full(conn))
    assert cache.sidecar_note == "written"


def test_a_folder_it_cannot_write_costs_the_file_not_the_search(db, monkeypatch):
    conn, path = db

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003 - stands in for a read-only folder
        raise PermissionError(13, "Permission denied", str(sidecar.sidecar_path(path)))

    monkeypatch.setattr(sidecar, "write_graph", refuse)
    cache = GraphCache()
    g = cache.graph(conn, sidecar_min=1)
    assert cache.sidecar_note.startswith("sidecar not written") and g.sidecar_edges == 0
    _same(g, _full(conn))
    assert not sidecar.sidecar_path(path).exists()
