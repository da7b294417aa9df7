import numpy as np

from memo.embed.index import VectorIndex
from memo.embed.vectors import drop_model_vectors, write_vectors
from memo.store.connect import write_tx
from memo.store.derived import bump_vectors_epoch

from .conftest import DIM, add


def _vec(i: int) -> np.ndarray:
    rng = np.random.default_rng(i)
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _pks(conn, n):
    for i in range(n):
        add(conn, f"passage {i}")
    return [r[0] for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]


def test_topk_matches_brute_force_and_loads_incrementally(conn):
    pks = _pks(conn, 30)
    write_vectors(conn, "m", pks[:20], np.stack([_vec(p) for p in pks[:20]]))
    idx = VectorIndex("m", DIM)
    q = _vec(999)
    got = idx.search(conn, q, None, 5)
    want = sorted(((p, float(_vec(p) @ q)) for p in pks[:20]), key=lambda x: -x[1])[:5]
    assert [p for p, _ in got] == [p for p, _ in want]
    assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-6)
    assert (idx.reloads, idx.loads) == (1, 1)
    idx.search(conn, q, None, 5)                    # nothing new: no load at all
    assert (idx.reloads, idx.loads) == (1, 1)
    write_vectors(conn, "m", pks[20:], np.stack([_vec(p) for p in pks[20:]]))
    got = idx.search(conn, q, None, 100)
    assert len(got) == 30 and (idx.reloads, idx.loads) == (1, 2)   # appended, not reloaded


def test_models_never_mix(conn):
    pks = _pks(conn, 4)
    write_vectors(conn, "a", pks, np.stack([_vec(p) for p in pks]))
    write_vectors(conn, "b", pks[:1], np.stack([_vec(100)]))
    a, b = VectorIndex("a", DIM), VectorIndex("b", DIM)
    assert len(a.search(conn, _vec(1), None, 10)) == 4
    assert [p for p, _ in b.search(conn, _vec(1), None, 10)] == pks[:1]
    # rows of model b advance seq; index a must not reload for them
    write_vectors(conn, "b", pks[1:2], np.stack([_vec(101)]))
    a.search(conn, _vec(1), None, 10)
    assert a.reloads == 1 and len(a) == 4


def test_epoch_bump_reloads(conn):
    pks = _pks(conn, 5)
    write_vectors(conn, "m", pks, np.stack([_vec(p) for p in pks]))
    idx = VectorIndex("m", DIM)
    assert len(idx.search(conn, _vec(1), None, 10)) == 5
    with write_tx(conn):
        conn.execute("DELETE FROM vectors WHERE passage_pk = ?", (pks[0],))
        bump_vectors_epoch(conn)
    got = idx.search(conn, _vec(1), None, 10)
    assert pks[0] not in [p for p, _ in got] and idx.reloads == 2
    drop_model_vectors(conn, "m")
    assert idx.search(conn, _vec(1), None, 10) == [] and len(idx) == 0


def test_scope_mask_applies_before_topk(conn):
    pks = _pks(conn, 50)
    write_vectors(conn, "m", pks, np.stack([_vec(p) for p in pks]))
    idx = VectorIndex("m", DIM)
    q = _vec(7)
    allowed = np.array(pks[40:], dtype=np.int64)
    got = idx.search(conn, q, allowed, 3)
    want = sorted(((p, float(_vec(p) @ q)) for p in pks[40:]), key=lambda x: -x[1])[:3]
    assert [p for p, _ in got] == [p for p, _ in want]      # 3 hits even if better ones are outside
    assert idx.search(conn, q, np.array([], dtype=np.int64), 3) == []


def test_scope_pks_cached_until_data_changes(conn):
    pks = _pks(conn, 3)
    idx = VectorIndex("m", DIM)
    where, params = "r.forgotten_at IS NULL", ()
    a = idx.scope_pks(conn, where, params)
    assert idx.scope_pks(conn, where, params) is a           # cached: same array object
    assert sorted(a.tolist()) == pks
    with write_tx(conn):
        conn.execute("UPDATE records SET forgotten_at = 'x' WHERE id = "
                     "(SELECT record_id FROM passages WHERE pk = ?)", (pks[0],))
    b = idx.scope_pks(conn, where, params)
    assert b is not a and sorted(b.tolist()) == pks[1:]


def test_ties_are_deterministic(conn):
    pks = _pks(conn, 6)
    same = _vec(3)
    write_vectors(conn, "m", pks, np.stack([same] * 6))
    got = VectorIndex("m", DIM).search(conn, same, None, 4)
    assert [p for p, _ in got] == pks[:4]


def test_a_database_created_again_at_the_path_reloads(tmp_path):
    """One index (a server's, kept per path) over a database deleted and created again at
    the same path with as many rows: the new database's epoch is its own (memo.store.epochs),
    so the index reloads instead of keeping the old rows as if nothing had gone."""
    from memo.store.db import open_db

    idx = VectorIndex("m", DIM)
    path = tmp_path / "memo.db"
    for seed in (0, 1):
        conn = open_db(path)
        try:
            pks = _pks(conn, 6)
            write_vectors(conn, "m", pks, np.stack([_vec(p + 100 * seed) for p in pks]))
            q = _vec(pks[3] + 100 * seed)
            got = idx.search(conn, q, None, 1)
            assert got[0][0] == pks[3] and abs(got[0][1] - 1.0) < 1e-5, seed
        finally:
            conn.close()
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"memo.db{suffix}").unlink(missing_ok=True)
    assert idx.reloads == 2
