"""The semantic arm's plans on a real PostgreSQL + pgvector (memo/store/postgres/vectors.py):
exact, HNSW with over-fetch (pgvector < 0.8), HNSW with the filter in the scan's statement
(pgvector 0.8+'s iterative scans), and the exact fallback when a filter starves the index's
candidates.  Every plan must give the exact plan's answer on a small, well-separated set."""

from __future__ import annotations

import numpy as np
import pytest

from memo.profile import load_profile
from memo.store.connect import read_tx
from memo.store.db import open_db
from memo.store.postgres import vectors as pgv
from tests.pg_server import drop_database, new_database

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)

MODEL, DIM, N = "test-model", 16, 200
LIVE = "r.superseded_at IS NULL AND r.forgotten_at IS NULL"


@pytest.fixture
def conn():
    url = new_database()
    c = open_db(url)
    from memo.embed.vectors import write_vectors
    from memo.ops.add import add_record
    from memo.stored import RecordDraft

    body = "\n\n".join(f"passage number {i}" for i in range(N))
    add_record(c, RecordDraft(body=body, kind="note", meta={"split": "paragraphs"}), background=_NoEmbed())
    pks = [int(r[0]) for r in c.execute("SELECT pk FROM passages ORDER BY pk")]
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((len(pks), DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    write_vectors(c, MODEL, pks, vecs)
    assert pgv.build_ann_index(c, MODEL, DIM)
    yield c
    c.close()
    drop_database(url)


class _NoEmbed:
    """A background embedder that takes the record and never embeds it (the test writes
    its own vectors)."""

    model_id = None

    def submit(self, *a, **k) -> bool:
        return True


def _query(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return q / np.linalg.norm(q)


CFG = load_profile("rrf").with_overrides({"index.ann_min": 0}).index


@pytest.mark.parametrize("where", [LIVE, LIVE + " AND p.pk % 2 = 0"])
@pytest.mark.parametrize("iterative", [False, True])
def test_hnsw_plans_give_the_exact_answer(conn, monkeypatch, where, iterative):
    n_passages = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    assert n_passages >= N
    monkeypatch.setattr(pgv, "iterative_scans", lambda c, cache=None: iterative)
    if iterative:   # the bundled pgvector (0.6) has no hnsw.iterative_scan: let the SET through
        real = conn.execute_native
        monkeypatch.setattr(conn, "execute_native",
                            lambda sql, params=(): None if "iterative_scan" in sql else real(sql, params))
    for seed in range(5):
        q = _query(seed)
        with read_tx(conn):
            exact = pgv.vector_topk(conn, MODEL, q, where, (), 10)
        with read_tx(conn):
            plan: list[str] = []
            ann = pgv.vector_topk(conn, MODEL, q, where, (), 10, in_scope=N, cfg=CFG, plan_out=plan)
        assert plan == ["hnsw"]
        assert [pk for pk, _ in ann] == [pk for pk, _ in exact]
        assert np.allclose([c for _, c in ann], [c for _, c in exact], atol=1e-5)


def test_a_starving_filter_falls_back_to_the_exact_plan(conn):
    # One passage in 50 passes: the index's 4 x 10 candidates hold too few of them.
    where = LIVE + " AND p.pk % 50 = 0"
    q = _query(9)
    with read_tx(conn):
        exact = pgv.vector_topk(conn, MODEL, q, where, (), 10)
    with read_tx(conn):
        plan: list[str] = []
        ann = pgv.vector_topk(conn, MODEL, q, where, (), 10, in_scope=N, cfg=CFG, plan_out=plan)
    assert plan == ["hnsw_starved_exact"]
    assert ann == exact and len(exact) == 4
