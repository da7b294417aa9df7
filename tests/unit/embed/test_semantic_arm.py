import numpy as np
import pytest

from memo.embed.service import SemanticService
from memo.embed.vectors import write_vectors
from memo.retrieve.arms.base import ArmContext, ScopeSQL
from memo.retrieve.arms.semantic import SemanticArm
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import write_tx
from memo.types import Scope

from .conftest import FakeEmbedder, add, fake_spec, fake_vec


@pytest.fixture
def conn(backend_conn):
    """This module runs on both backends (issue 17.3)."""
    return backend_conn


def _ctx(conn, query="cats", mode="auto", services=None, scope=None):
    return ArmContext(conn=conn, query=query, mode=mode, scope_sql=build_scope_sql(scope or Scope()),
                      fetch_depth=10, services=services or {})


def _embedded(conn, tmp_path, texts):
    for t in texts:
        add(conn, t)
    pks = [r[0] for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
    write_vectors(conn, "fake-model", pks, np.stack([fake_vec(t) for t in texts]))
    return SemanticService(conn, fake_spec(tmp_path), embedder=FakeEmbedder()), pks


def test_plan_modes_and_missing_service(conn):
    arm = SemanticArm()
    for mode in ("keyword", "exact"):
        plan = arm.plan(_ctx(conn, mode=mode))
        assert (plan.runs, plan.degraded, plan.reason) == (False, False, f"mode {mode}")
    plan = arm.plan(_ctx(conn))
    assert not plan.runs and plan.degraded


def test_no_vectors_yet_is_degraded(conn, tmp_path):
    add(conn, "some text")
    svc = SemanticService(conn, fake_spec(tmp_path), embedder=FakeEmbedder())
    plan = SemanticArm().plan(_ctx(conn, services={"semantic": svc}))
    assert not plan.runs and plan.degraded and "no vectors yet" in plan.reason


def test_run_ranks_by_cosine_within_scope(conn, tmp_path):
    svc, pks = _embedded(conn, tmp_path, ["cats purr", "dogs bark", "cats and dogs", "fish swim"])
    arm = SemanticArm()
    ctx = _ctx(conn, "cats purr", services={"semantic": svc})
    assert arm.plan(ctx).runs
    hits = arm.run(ctx)
    assert hits[0].pk == pks[0] and hits[0].rank == 1 and abs(hits[0].raw - 1.0) < 1e-5
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    with write_tx(conn):
        conn.execute("UPDATE records SET forgotten_at = 'now' WHERE id = "
                     "(SELECT record_id FROM passages WHERE pk = ?)", (pks[0],))
    assert pks[0] not in [h.pk for h in arm.run(ctx)]       # live filter before top-k


def test_precomputed_query_vector_skips_embedding(conn, tmp_path):
    svc, pks = _embedded(conn, tmp_path, ["alpha beta", "gamma delta"])
    svc._embedder = None                                      # would try to load a real model
    svc.model_status = lambda: (True, "ok")                   # type: ignore[method-assign]
    ctx = _ctx(conn, "ignored", services={"semantic": svc, "query_vector": fake_vec("gamma delta")})
    assert SemanticArm().run(ctx)[0].pk == pks[1]


def test_scope_sql_fallback_for_indexes_without_scope_pks(conn, tmp_path):
    svc, pks = _embedded(conn, tmp_path, ["one", "two"])

    class PlainIndex:
        def search(self, conn, q, allowed, k):
            return [(int(p), 0.5) for p in allowed][:k]

    svc.index = PlainIndex()
    ctx = ArmContext(conn=conn, query="x", mode="semantic", scope_sql=ScopeSQL("p.pk = ?", (pks[1],)),
                     fetch_depth=5, services={"semantic": svc})
    assert [h.pk for h in SemanticArm().run(ctx)] == [pks[1]]
