import json
import threading

import numpy as np
import pytest

from memo.embed.backfill import backfill, embed_records
from memo.embed.vectors import decode, pending_count, vector_count
from memo.store.db import open_db
from memo.store.dialect import is_postgres

from .conftest import DIM, FakeEmbedder, add, fake_vec


@pytest.fixture
def conn(backend_conn):
    """This module runs on both backends (issue 17.3)."""
    return backend_conn


def test_backfill_embeds_pending_in_short_transactions(conn):
    for i in range(150):
        add(conn, f"text number {i}", section="head" if i % 2 else "")
    emb = FakeEmbedder()
    seen_tx = []
    orig = emb.embed_passages

    def spy(texts, batch_size=64):
        seen_tx.append(conn.in_transaction)         # embedding never inside a transaction
        return orig(texts, batch_size)

    emb.embed_passages = spy
    rep = backfill(conn, progress=False, embedder=emb, batch_size=16)
    assert rep.pending_before == 150 and rep.embedded == 150 and rep.pending_after == 0
    assert not any(seen_tx)
    assert emb.calls == [128, 22]                  # windows of 8 batches
    row = conn.execute("SELECT p.section, p.text, v.vec FROM passages p JOIN vectors v ON v.passage_pk = p.pk "
                       "WHERE p.section = 'head' LIMIT 1").fetchone()
    # SQLite stores the float32 blob, pgvector hands back its text form ('[0.5,0,...]')
    vec = np.asarray(json.loads(row[2]), dtype=np.float32) if is_postgres(conn) else decode(row[2], DIM)
    assert np.allclose(vec, fake_vec(f"head\n\n{row[1]}"))
    assert backfill(conn, progress=False, embedder=emb).embedded == 0   # idempotent


def test_concurrent_backfills_do_not_clash(backend_db, conn):
    for i in range(200):
        add(conn, f"row {i}")
    errors, reports = [], []

    def run():
        c = open_db(backend_db)
        try:
            reports.append(backfill(c, progress=False, embedder=FakeEmbedder(), batch_size=8))
        except Exception as exc:  # pragma: no cover - the assertion below shows it
            errors.append(exc)
        finally:
            c.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert vector_count(conn, "fake-model") == 200
    assert sum(r.embedded for r in reports) == 200


def test_passage_deleted_while_embedding_is_skipped(conn):
    add(conn, "keep me")
    rid = add(conn, "delete me")
    emb = FakeEmbedder()
    orig = emb.embed_passages

    def delete_then_embed(texts, batch_size=64):
        conn.execute("DELETE FROM records WHERE id = ?", (rid,))
        return orig(texts, batch_size)

    emb.embed_passages = delete_then_embed
    rep = backfill(conn, progress=False, embedder=emb)
    assert rep.embedded == 1 and rep.skipped == 1 and pending_count(conn, "fake-model") == 0


def test_embed_records_degrades_without_model(conn, monkeypatch):
    rid = add(conn, "queued text")
    monkeypatch.setenv("MEMO_MODEL", "no-such-model")
    rep = embed_records(conn, [rid])
    assert rep.error and "unknown embedding model" in rep.error
    assert pending_count(conn, "all-minilm-l6-v2-int8") == 1     # still queued
