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


def test_backfill_reports_its_progress_after_each_batch(conn):
    """``on_progress(done, total)``: what `memo eval` counts on a terminal and in a log."""
    for i in range(40):
        add(conn, f"passage {i}")
    seen: list[tuple[int, int]] = []
    rep = backfill(conn, progress=False, embedder=FakeEmbedder(), batch_size=16,
                   on_progress=lambda done, total: seen.append((done, total)))
    assert rep.embedded == 40
    assert seen == [(16, 40), (32, 40), (40, 40)]


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


def test_backfill_builds_the_hnsw_index_on_postgresql_from_ann_min(conn, monkeypatch):
    """PostgreSQL: once the model has vectors.ann_min vectors, backfill builds its HNSW
    index, and a search over a large enough scope takes it (same answers as the exact
    scan on this small, well-separated set).  SQLite builds none (its index is in process)."""
    import memo.embed.backfill as bf
    from memo.profile import load_profile
    from memo.store.postgres.vectors import ann_index_exists, vector_topk

    small = load_profile(None).with_overrides({"index.ann_min": 30})
    monkeypatch.setattr(bf, "load_profile", lambda _name: small)
    for i in range(20):
        add(conn, f"first batch {i}")
    assert backfill(conn, progress=False, embedder=FakeEmbedder()).ann_index_built is False   # 20 < 30
    for i in range(20):
        add(conn, f"second batch {i}")
    rep = backfill(conn, progress=False, embedder=FakeEmbedder())
    if not is_postgres(conn):
        assert rep.ann_index_built is False
        return
    assert rep.ann_index_built is True and ann_index_exists(conn, FakeEmbedder().model_id)
    q = fake_vec("second batch 7")
    plan: list[str] = []
    live = "r.superseded_at IS NULL AND r.forgotten_at IS NULL"
    ann = vector_topk(conn, FakeEmbedder().model_id, q, live, (), 10, in_scope=40, cfg=small.index, plan_out=plan)
    exact = vector_topk(conn, FakeEmbedder().model_id, q, live, (), 10)
    assert plan == ["hnsw"] and [pk for pk, _ in ann] == [pk for pk, _ in exact]


def test_no_progress_bar_off_a_terminal(conn, capfd):
    """stderr a pipe or a log (as under pytest): no bar and no blank line left behind
    (the new-user run of issue 32.7 saw `memo import` print one before its report)."""
    for i in range(3):
        add(conn, f"text number {i}")
    capfd.readouterr()
    assert backfill(conn, progress=True, embedder=FakeEmbedder()).embedded == 3
    assert capfd.readouterr().err == ""
