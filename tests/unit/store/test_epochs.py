"""Epochs tell databases apart (memo.store.epochs): a database created again at a path, in
the same process, must not be taken for the one before it by the caches keyed by that path.
CI-sized: SQLite, no model."""

from __future__ import annotations

from memo.graph.cache import mention_graph
from memo.ops.add import add_record
from memo.store import epochs
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.derived import bump_vectors_epoch
from memo.store.mentions import bump_mentions_epoch
from memo.stored import RecordDraft

FIRST = ["Alice Moreau met Bruno Ferreira.", "Kestrel DB is fast.", "Nothing here."]
SECOND = ["Nothing here.", "The Lighthouse project started.", "Zed Corp bought Kestrel DB."]


def _epochs(conn) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM memo_meta WHERE key IN (?, ?)",
                             (epochs.VECTORS, epochs.MENTIONS)).fetchall())


def _graph_and_truth(path, texts):
    conn = open_db(path)
    try:
        for t in texts:
            add_record(conn, RecordDraft(body=t))
        g = mention_graph(conn)
        names = dict(conn.execute("SELECT pk, name FROM entities").fetchall())
        got = sorted((int(g.passage_pks[i]), names[int(g.entity_pks[e])])
                     for i in range(len(g.passage_pks)) for e in g.W.indices[g.W.indptr[i]:g.W.indptr[i + 1]])
        truth = sorted(tuple(r) for r in conn.execute(
            "SELECT m.passage_pk, e.name FROM mentions m JOIN entities e ON e.pk = m.entity_pk").fetchall())
        return got, truth
    finally:
        conn.close()


def test_a_database_created_again_at_a_path_gets_its_own_graph(tmp_path):
    path = tmp_path / "memo.db"
    got, truth = _graph_and_truth(path, FIRST)
    assert got == truth
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"memo.db{suffix}").unlink(missing_ok=True)
    got, truth = _graph_and_truth(path, SECOND)     # same path, same mention seqs, new rows
    assert got == truth


def test_every_database_starts_with_epochs_of_its_own(tmp_path):
    seen = []
    for i in range(3):
        conn = open_db(tmp_path / f"{i}.db")
        try:
            got = _epochs(conn)
        finally:
            conn.close()
        assert set(got) == {epochs.VECTORS, epochs.MENTIONS} and "0" not in got.values()
        seen.append(got)
    assert len({e[epochs.MENTIONS] for e in seen}) == 3 and len({e[epochs.VECTORS] for e in seen}) == 3


def test_a_bump_moves_each_epoch_to_a_fresh_value(tmp_path):
    conn = open_db(tmp_path / "x.db")
    try:
        with write_tx(conn):        # a database from before the rule: epochs still '0'
            conn.execute("UPDATE memo_meta SET value = '0' WHERE key IN (?, ?)", (epochs.VECTORS, epochs.MENTIONS))
        before = _epochs(conn)
        with write_tx(conn):
            bump_mentions_epoch(conn)
        mid = _epochs(conn)
        assert mid[epochs.MENTIONS] not in ("0", "1") and mid[epochs.VECTORS] == before[epochs.VECTORS]
        with write_tx(conn):
            bump_vectors_epoch(conn)
        after = _epochs(conn)
        assert after[epochs.VECTORS] not in ("0", "1") and after[epochs.MENTIONS] == mid[epochs.MENTIONS]
        assert 0 <= int(after[epochs.VECTORS]) < 1 << 62
    finally:
        conn.close()


def test_fresh_epochs_differ():
    assert len({epochs.fresh_epoch() for _ in range(1000)}) == 1000
