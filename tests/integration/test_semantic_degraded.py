"""Degraded mode with the REAL model: each way the semantic arm can be unavailable, made
with a damaged temporary copy of the real ONNX file (the installed file is never touched).
Search still answers from the keyword arm, reports degraded{flag, reason}, counts
memo_search_degraded_total, and the write path queues vectors for backfill."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from memo import metrics
from memo.embed import integrity, service
from memo.embed.backfill import backfill
from memo.embed.integrity import sha256_file
from memo.embed.registry import load_registry
from memo.embed.service import semantic_services
from memo.embed.vectors import pending_count
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

REAL = load_registry().get("all-minilm-l6-v2-int8")
MODEL_ID = "minilm-copy"


def _register(tmp_path: Path, monkeypatch, onnx: Path, sha: str) -> None:
    f = tmp_path / "models.toml"
    f.write_text(f'default = "{MODEL_ID}"\n[models."{MODEL_ID}"]\nonnx = "{onnx}"\nsha256 = "{sha}"\n'
                 f'tokenizer = "{REAL.tokenizer}"\ndimensions = 384\npooling = "mean"\nmax_tokens = 256\n'
                 f'[models."{MODEL_ID}".bands]\nsemantic_floor = 0.39\nweak = 0.39\nmoderate = 0.47\nstrong = 0.67\n')
    monkeypatch.setenv("MEMO_MODELS", str(f))


@pytest.fixture(autouse=True)
def _fresh_caches():
    service.clear_caches()
    integrity.forget()
    yield
    service.clear_caches()


@pytest.fixture
def db(tmp_path: Path):
    conn = open_db(tmp_path / "deg.db")
    for text in ("the connection pool is exhausted under load", "tomatoes grow best in full sun"):
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=text), (PassageDraft(text=text),))
    yield conn
    conn.close()


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "model.onnx"
    shutil.copyfile(REAL.onnx, dst)
    return dst


def _degraded_search(conn):
    before = metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable")._value.get()
    resp = search(conn, SearchRequest("connection pool"), "rrf", semantic_services(conn))
    after = metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable")._value.get()
    assert after == before + 1                                   # memo_search_degraded_total counts it
    assert resp.trace.degraded["flag"] is True
    sem = next(a for a in resp.trace.arms if a.name == "semantic")
    assert not sem.ran
    assert resp.results and "connection pool" in resp.results[0].text   # keyword arm still answers
    return resp.trace.degraded["reason"]


def test_missing_model_file(tmp_path, monkeypatch, db):
    _register(tmp_path, monkeypatch, tmp_path / "gone.onnx", REAL.sha256)
    assert "missing" in _degraded_search(db)
    exported = generate_latest().decode()
    assert 'memo_search_degraded_total{reason="arm_unavailable"}' in exported


def test_wrong_hash(tmp_path, monkeypatch, db):
    copy = _copy(tmp_path)
    with copy.open("r+b") as fh:                                  # flip bytes in the middle
        fh.seek(copy.stat().st_size // 2)
        fh.write(b"\x00" * 64)
    _register(tmp_path, monkeypatch, copy, REAL.sha256)
    assert "sha256" in _degraded_search(db)


def test_truncated_file_with_its_hash_registered_fails_to_load(tmp_path, monkeypatch, db):
    copy = _copy(tmp_path)
    with copy.open("r+b") as fh:
        fh.truncate(copy.stat().st_size // 2)
    _register(tmp_path, monkeypatch, copy, sha256_file(copy))      # passes the hash check...
    assert "failed to load" in _degraded_search(db)               # ...but onnxruntime rejects it
    # The failure is remembered for this file state, not forever: a repaired file (same path,
    # registered with its real hash) loads at once in the same process.
    assert "failed to load" in semantic_services(db)["semantic"].model_status()[1]
    shutil.copyfile(REAL.onnx, copy)
    _register(tmp_path, monkeypatch, copy, REAL.sha256)
    assert semantic_services(db)["semantic"].model_status()[0] is True


def test_passages_without_vectors_then_backfill_recovers(tmp_path, monkeypatch, db):
    _register(tmp_path, monkeypatch, _copy(tmp_path), REAL.sha256)
    assert "no vectors yet" in _degraded_search(db)
    assert pending_count(db, MODEL_ID) == 2                        # the write path queued them
    rep = backfill(db, progress=False)
    assert rep.embedded == 2 and rep.pending_after == 0
    resp = search(db, SearchRequest("database connections running out"), "rrf", semantic_services(db))
    assert resp.trace.degraded["flag"] is False
    assert next(a for a in resp.trace.arms if a.name == "semantic").ran
    assert "connection pool" in resp.results[0].text


def test_keyword_mode_is_not_degraded(tmp_path, monkeypatch, db):
    _register(tmp_path, monkeypatch, tmp_path / "gone.onnx", REAL.sha256)
    resp = search(db, SearchRequest("connection pool", mode="keyword"), "rrf", semantic_services(db))
    assert resp.trace.degraded["flag"] is False
    sem = next(a for a in resp.trace.arms if a.name == "semantic")
    assert sem.reason == "mode keyword"
