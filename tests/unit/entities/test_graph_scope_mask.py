"""The graph arm's scope mask (issue 31.5: a cold graph search at 1M passages spent 19% of
its time listing every in-scope passage pk): a scope that rules out few passages masks those
out of the graph, and gives the very mask that listing the in-scope pks gave, with forgotten,
superseded and purged records in the store; each entity's in-scope count is the one the sum
over every edge gave."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.unit.entities.test_graph_arm_golden import build


@pytest.fixture()
def store(tmp_path):
    from memo.ops.records import forget, purge, supersede
    from memo.store.db import open_db

    path = tmp_path / "g.db"
    build(path)
    conn = open_db(path)
    forget(conn, ["rec004", "rec007"], confirm=True)
    purge(conn, confirm=True)
    forget(conn, ["rec010"])                                   # forgotten, not purged
    supersede(conn, "rec012", "Entity3 and Entity5 were reviewed again.")
    yield conn
    conn.close()


@pytest.mark.parametrize("scope", [{}, {"namespaces": ("ns0",)}, {"namespaces": ("ns1",)},
                                   {"namespaces": ("nowhere",)}])
@pytest.mark.parametrize("few", [True, False])
def test_the_mask_from_the_excluded_pks_is_the_mask_of_the_in_scope_pks(store, scope, few, monkeypatch):
    from memo.graph.cache import mention_graph
    from memo.retrieve import scope as scope_mod
    from memo.retrieve.arms import graph as graph_arm
    from memo.retrieve.conn_cache import forget as forget_cache
    from memo.retrieve.scope import build_scope_sql
    from memo.types import Scope

    if not few:        # too many to list: the arm lists the in-scope pks as before
        monkeypatch.setattr(scope_mod, "EXCLUDED_MAX", 0)
    forget_cache(store)
    ctx = SimpleNamespace(conn=store, scope_sql=build_scope_sql(Scope(**scope)))
    graph = mention_graph(store, None)
    listed = graph.passage_mask(graph_arm.in_scope_pks(ctx))
    excluded = scope_mod.scope_stats(store, ctx.scope_sql).excluded
    assert (excluded is not None) == few                       # both ways are exercised
    got = graph_arm._scope_mask(ctx, graph)
    assert got.dtype == bool and np.array_equal(got, listed)
    # each entity's in-scope passages: subtracted from its degree, or summed over every edge
    assert np.array_equal(graph_arm._entity_counts(ctx, graph, got), graph.WT.row_sums(listed.astype(np.float64)))
    assert 0 < listed.sum() < len(listed) or scope.get("namespaces") == ("nowhere",)
