"""The pending-vectors count of a search (memo/retrieve/backend_sqlite.py ``vectors_pending``):
counted on the vector index's masks, it must equal the SQL anti-join over every passage it
replaced (issue 31.2), whatever the scope, the index's layout and the snapshot."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.embed.index import VectorIndex
from memo.embed.vectors import pending_in_scope, write_vectors
from memo.profile import load_profile
from memo.retrieve import scope as scope_mod
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.backend_sqlite import SQLITE
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import connect, read_tx, write_tx
from memo.store.db import open_db
from memo.store.derived import index_passages
from memo.types import Scope
from tests.fast_examples import examples

D = 8
_BASE = load_profile("base")
LAYOUTS = {   # the profile's [index]: a memory-mapped base (int8 or exact), or rows in memory only
    "int8": _BASE.with_overrides({"index.quantised_min": 1, "index.sidecar_min": 1}).index,
    "exact": _BASE.with_overrides({"index.quantised_min": 10**9, "index.sidecar_min": 1}).index,
    "memory": _BASE.with_overrides({"index.sidecar_min": 0}).index,
}


def _fill(conn: sqlite3.Connection, namespaces: list[str]) -> list[int]:
    """One one-passage record per namespace given (raw rows: fast); their pks."""
    with write_tx(conn):
        conn.executemany("INSERT INTO records(id, kind, namespace, recorded_at, content_hash, body) "
                         "VALUES (?, 'note', ?, '2025-01-01T00:00:00.000000Z', ?, 'x')",
                         [(f"r{i}", ns, f"h{i}") for i, ns in enumerate(namespaces)])
        conn.executemany("INSERT INTO passages(id, record_id, ord, text, tokens) VALUES (?, ?, 0, 'x', 1)",
                         [(f"r{i}:0", f"r{i}") for i in range(len(namespaces))])
        pks = [int(r[0]) for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
        index_passages(conn, pks)
    return pks


def _unit(n: int) -> np.ndarray:
    x = np.random.default_rng(n).standard_normal((n, D)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _counted(conn: sqlite3.Connection, idx: VectorIndex, scope: Scope) -> tuple[int, int]:
    """(the backend's count, the SQL anti-join's) in one read snapshot."""
    ctx = ArmContext(conn=conn, query="x", mode="auto", scope_sql=build_scope_sql(scope), fetch_depth=10,
                     services={}, scope=scope, profile=None)
    with read_tx(conn):
        return (SQLITE.vectors_pending(ctx, SimpleNamespace(index=idx)),
                pending_in_scope(conn, "m", ctx.scope_sql.where, ctx.scope_sql.params))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(namespaces=st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=40),
       data=st.data(), layout=st.sampled_from(sorted(LAYOUTS)), listed=st.booleans(),
       only_a=st.booleans(), searched=st.booleans())
def test_the_index_count_equals_the_anti_join(namespaces, data, layout, listed, only_a, searched):
    n = len(namespaces)
    embedded = data.draw(st.sets(st.integers(0, n - 1)), label="embedded")
    gone = data.draw(st.sets(st.integers(0, n - 1)), label="superseded or forgotten")
    later = data.draw(st.sets(st.integers(0, n - 1)), label="embedded after the index loaded")
    saved = scope_mod.EXCLUDED_MAX
    # listed: few passages out of scope, named one by one (the excluded path); else the
    # scope's pks are read (the allowed path)
    scope_mod.EXCLUDED_MAX = 500 if listed else 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "m.db"
            conn = open_db(path)
            try:
                pks = _fill(conn, namespaces)
                vecs = _unit(n)
                first = sorted(embedded)
                if first:
                    write_vectors(conn, "m", [pks[i] for i in first], vecs[first])
                with write_tx(conn):
                    for i in sorted(gone):
                        column = "superseded_at" if i % 2 else "forgotten_at"
                        conn.execute(f"UPDATE records SET {column} = '2025-02-01T00:00:00.000000Z' "
                                     "WHERE id = ?", (f"r{i}",))
                idx = VectorIndex("m", D, db_path=str(path))
                idx.refresh(conn, LAYOUTS[layout])
                scope = Scope(namespaces=("a",)) if only_a else Scope()
                if searched:      # the search's own masks, cached, then reused by the count
                    with read_tx(conn):
                        idx.search(conn, vecs[0], None, 3, LAYOUTS[layout])
                got, want = _counted(conn, idx, scope)
                assert got == want
                rest = sorted(later - embedded)
                if rest:          # appended rows: the tail grows beside the base
                    write_vectors(conn, "m", [pks[i] for i in rest], vecs[rest])
                    got, want = _counted(conn, idx, scope)
                    assert got == want
            finally:
                conn.close()
    finally:
        scope_mod.EXCLUDED_MAX = saved


def test_vectors_newer_than_the_snapshot_still_count_as_pending(tmp_path):
    """A reader's count is its snapshot's, even after another connection loaded newer rows
    into the shared index."""
    path = tmp_path / "m.db"
    conn = open_db(path)
    pks = _fill(conn, ["a"] * 6)
    write_vectors(conn, "m", pks[:3], _unit(3))
    idx = VectorIndex("m", D, db_path=str(path))
    reader, writer = connect(path), connect(path)
    try:
        ctx = ArmContext(conn=reader, query="x", mode="auto", scope_sql=build_scope_sql(Scope()),
                         fetch_depth=10, services={}, scope=Scope(), profile=None)
        svc = SimpleNamespace(index=idx)
        with read_tx(reader):
            assert SQLITE.vectors_pending(ctx, svc) == 3
            write_vectors(writer, "m", pks[3:5], _unit(2))
            idx.refresh(writer)                         # the shared index now holds 5 rows
            assert len(idx) == 5
            assert SQLITE.vectors_pending(ctx, svc) == 3   # not in the reader's snapshot
        with read_tx(reader):
            assert SQLITE.vectors_pending(ctx, svc) == 1
    finally:
        reader.close()
        writer.close()
        conn.close()


@pytest.mark.parametrize("scope", [Scope(), Scope(namespaces=("a",))])
def test_a_service_without_memos_index_counts_in_sql(tmp_path, scope):
    """A semantic service whose index is not memo's own (test fakes, another store) is
    asked for its own count."""
    conn = open_db(tmp_path / "m.db")
    _fill(conn, ["a", "b"])
    asked = []
    svc = SimpleNamespace(index=object(), pending_in_scope=lambda c, w, p: asked.append((w, p)) or 7)
    ctx = ArmContext(conn=conn, query="x", mode="auto", scope_sql=build_scope_sql(scope), fetch_depth=10,
                     services={}, scope=scope, profile=None)
    assert SQLITE.vectors_pending(ctx, svc) == 7
    assert asked == [(ctx.scope_sql.where, ctx.scope_sql.params)]
    conn.close()
