"""Facts: migration, writes in one transaction, evidence resolution, forget/purge,
reindex, fact vectors queued and backfilled like passage vectors (issue 10.1-10.2)."""

from __future__ import annotations

import numpy as np
import pytest

from memo import ops
from memo.embed import service
from memo.embed.backfill import backfill
from memo.embed.fact_vectors import get_fact_index, pending_fact_count
from memo.errors import ConfirmationRequired, NotFound, ValidationError
from memo.ops import facts as fops
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.dialect import is_postgres
from memo.store.postgres.vectors import fact_vector_topk
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from tests.unit.ops.index_rows import keyword_rows

DIM = 8


def _vec(text: str) -> np.ndarray:
    import hashlib
    v = np.zeros(DIM, dtype=np.float32)
    for w in text.lower().split():
        v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIM] += 1
    return v / (np.linalg.norm(v) or 1)


class Fake:
    model_id = "fake-model"

    def embed_passages(self, texts, batch_size=64):
        return np.stack([_vec(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)


@pytest.fixture
def conn(backend_db):
    c = open_db(backend_db)
    yield c
    c.close()


def _rec(conn, texts, ns="default", ext_ids=None, rid_ext=None):
    ps = tuple(PassageDraft(text=t, ext_id=(ext_ids or [None] * len(texts))[i]) for i, t in enumerate(texts))
    with write_tx(conn):
        return insert_record(conn, RecordDraft(body="\n".join(texts), namespace=ns, ext_id=rid_ext,
                                               kind="conversation", passages=ps), ps)


def _fts(conn, word):
    return keyword_rows(conn, "facts_fts", word)


def test_add_fact_resolves_every_evidence_form(conn):
    rid = _rec(conn, ["alpha one", "beta two"], ns="c1", ext_ids=["D1:1", "D1:2"], rid_ext="s1")
    r1 = fops.add_fact(conn, FactDraft("Alpha is one", (f"{rid}:0",), namespace="c1"), embed=False)
    r2 = fops.add_fact(conn, FactDraft("whole record", (rid,), namespace="c1"), embed=False)
    r3 = fops.add_fact(conn, FactDraft("by record ext id", ("s1",), namespace="c1"), embed=False)
    r4 = fops.add_fact(conn, FactDraft("by turn id", ("D1:2",), namespace="c1"), embed=False)
    assert r1.evidence == (f"{rid}:0",)
    assert r2.evidence == (f"{rid}:0", f"{rid}:1") == r3.evidence
    assert r4.evidence == (f"{rid}:1",)
    again = fops.add_fact(conn, FactDraft("Alpha  is one", (f"{rid}:0",), namespace="c1"), embed=False)
    assert again.status == "skipped" and again.fact_id == r1.fact_id
    f = fops.get_fact(conn, r1.fact_id)
    assert f.text == "Alpha is one" and f.evidence[0].passage_id == f"{rid}:0" and f.content_hash
    assert _fts(conn, "alpha") == [conn.execute("SELECT pk FROM facts WHERE id = ?", (r1.fact_id,)).fetchone()[0]]


def test_bad_evidence_is_one_clear_error_and_writes_nothing(conn):
    rid = _rec(conn, ["alpha"])
    with pytest.raises(ValidationError, match="nope.*no passage"):
        fops.add_fact(conn, FactDraft("x", (f"{rid}:0", "nope"),), embed=False)
    with pytest.raises(ValidationError, match="at least one evidence"):
        fops.add_fact(conn, FactDraft("x", ()), embed=False)
    assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM fact_evidence").fetchone()[0] == 0
    if not is_postgres(conn):   # PostgreSQL's keyword index is the fact row's own tsv
        assert conn.execute("SELECT count(*) FROM facts_fts").fetchone()[0] == 0


def test_supersede_forget_purge_and_reindex(conn):
    rid = _rec(conn, ["alpha", "beta"])
    a = fops.add_fact(conn, FactDraft("old wording", (f"{rid}:0",)), embed=False)
    s = fops.supersede_fact(conn, a.fact_id, "new wording")
    assert s.evidence == (f"{rid}:0",)
    old = fops.get_fact(conn, a.fact_id)
    assert old.superseded_by == s.new_id and old.superseded_at == s.superseded_at
    with pytest.raises(ValidationError, match="already superseded"):
        fops.supersede_fact(conn, a.fact_id, "again")
    assert [f.id for f in fops.list_facts(conn)] == [s.new_id]
    assert len(fops.list_facts(conn, include_superseded=True)) == 2
    b = fops.add_fact(conn, FactDraft("other", (f"{rid}:1",)), embed=False)
    with pytest.raises(ConfirmationRequired):
        fops.forget_facts(conn, [s.new_id, b.fact_id])
    with pytest.raises(NotFound):
        fops.forget_facts(conn, ["fnope"])
    rep = fops.forget_facts(conn, [b.fact_id])
    assert rep.forgotten == (b.fact_id,)
    assert [f.id for f in fops.list_facts(conn, evidence=rid)] == [s.new_id]
    purged = ops.purge(conn, confirm=True)
    assert purged.fact_ids == (b.fact_id,)
    assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 2
    assert _fts(conn, "other") == []
    conn.execute("UPDATE facts SET tsv = NULL" if is_postgres(conn)
                 else "INSERT INTO facts_fts(facts_fts) VALUES ('delete-all')")
    assert _fts(conn, "wording") == []
    rep = ops.reindex(conn)
    assert rep.facts == 2 and len(_fts(conn, "wording")) == 2
    if not is_postgres(conn):
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_purged_evidence_leaves_the_fact_without_evidence(conn):
    rid = _rec(conn, ["alpha"])
    a = fops.add_fact(conn, FactDraft("about alpha", (rid,)), embed=False)
    ops.forget(conn, [rid])
    ops.purge(conn, confirm=True)
    assert fops.get_fact(conn, a.fact_id).evidence == ()


def test_fact_vectors_are_queued_and_backfilled(conn):
    rid = _rec(conn, ["alpha", "beta"])
    fops.add_fact(conn, FactDraft("alpha fact", (f"{rid}:0",)), embed=False)
    fops.add_fact(conn, FactDraft("beta fact", (f"{rid}:1",)), embed=False)
    assert pending_fact_count(conn, "fake-model") == 2
    rep = backfill(conn, embedder=Fake(), progress=False)
    assert rep.facts_embedded == 2 and rep.facts_pending_after == 0 and rep.embedded == 2
    idx = get_fact_index(conn, "fake-model", DIM)

    def search(q):   # PostgreSQL: the fact vectors are searched in the server (pgvector)
        if is_postgres(conn):
            return fact_vector_topk(conn, "fake-model", q, [r[0] for r in conn.execute("SELECT pk FROM facts")], 5)
        return idx.search(conn, q, None, 5)

    hits = search(_vec("alpha fact"))
    first = conn.execute("SELECT pk FROM facts WHERE text = 'alpha fact'").fetchone()[0]
    assert hits[0][0] == first and hits[0][1] == pytest.approx(1.0)
    # a purge reloads the matrix (shared vectors epoch)
    fid = conn.execute("SELECT id FROM facts WHERE pk = ?", (first,)).fetchone()[0]
    fops.forget_facts(conn, [fid])
    ops.purge(conn, confirm=True)
    assert [h[0] for h in search(_vec("alpha fact"))] != [first]
    service.clear_caches()
