"""The semantic arm end to end with the real MiniLM model: embedding properties, search by
meaning, CLI commands (backfill, models list/check/fetch) and the server-start backfill."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.embed import integrity, service
from memo.embed.background import BackgroundEmbedder
from memo.embed.registry import load_registry
from memo.embed.service import load_model, semantic_services
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

REAL = load_registry().get()
TEXTS = ["the connection pool is exhausted under heavy load",
         "tomatoes grow best in full sun and warm soil",
         "the quarterly revenue rose by twelve percent"]


@pytest.fixture(autouse=True)
def _fresh():
    service.clear_caches()
    integrity.forget()
    yield
    service.clear_caches()


def _fill(path: Path) -> None:
    conn = open_db(path)
    for t in TEXTS:
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=t), (PassageDraft(text=t),))
    conn.close()


def test_embedding_properties():
    m = load_model(REAL)
    vecs = m.embed_passages(["a b c", "word " * 600, "hello world"])      # 600 words: truncated at 256
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # order-independent: batching / length sorting must not change a text's vector
    alone = m.embed_passages(["hello world"])[0]
    assert np.allclose(alone, vecs[2], atol=1e-4)
    assert len(m.tokenize(["word " * 600])[0]) == 256
    # "title\n\ntext" tokenises exactly like "title text"
    assert m.tokenize(["Title\n\nsome text"]) == m.tokenize(["Title some text"])


def test_search_by_meaning_and_cli(tmp_path: Path, monkeypatch):
    db = tmp_path / "s.db"
    _fill(db)
    runner = CliRunner()
    res = runner.invoke(app, ["backfill", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["embedded"] == 3 and rep["pending_after"] == 0 and rep["model_id"] == REAL.id

    conn = open_db(db, write=False)
    resp = search(conn, SearchRequest("running out of database connections", mode="semantic",
                                      response_format="explain"), "rrf", semantic_services(conn))
    assert "connection pool" in resp.results[0].text
    assert resp.results[0].relevance is not None and resp.results[0].relevance > 0.39
    conn.close()

    res = runner.invoke(app, ["models", "check", "--db", str(db), "--json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["ok"] and doc["dimensions"] == 384 and doc["vectors"] == 3
    res = runner.invoke(app, ["models", "list", "--db", str(db), "--json"])
    doc = json.loads(res.stdout)
    assert doc["default"] == REAL.id and doc["models"][0]["vectors"] == 3


def test_models_check_reports_a_broken_model(tmp_path: Path, monkeypatch):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    f = tmp_path / "models.toml"
    f.write_text(f'[models.bad]\nonnx = "{bad}"\nsha256 = "{"0" * 64}"\ntokenizer = "{REAL.tokenizer}"\n'
                 "[models.bad.bands]\nsemantic_floor = 0.3\nweak = 0.3\nmoderate = 0.5\nstrong = 0.7\n")
    monkeypatch.setenv("MEMO_MODELS", str(f))
    res = CliRunner().invoke(app, ["models", "check", "bad", "--json"])
    assert res.exit_code == 7
    assert "sha256" in json.loads(res.stdout)["reason"]


def test_models_fetch_from_a_file_url(tmp_path: Path, monkeypatch):
    f = tmp_path / "models.toml"
    f.write_text(f'[models.fetched]\nurl = "{REAL.onnx.as_uri()}"\nsha256 = "{REAL.sha256}"\n'
                 f'tokenizer_url = "{REAL.tokenizer.as_uri()}"\ntokenizer_sha256 = "{REAL.tokenizer_sha256}"\n'
                 "[models.fetched.bands]\nsemantic_floor = 0.39\nweak = 0.39\nmoderate = 0.47\nstrong = 0.67\n"
                 f'[models.wrong]\nurl = "{REAL.onnx.as_uri()}"\nsha256 = "{"1" * 64}"\ntokenizer = "{REAL.tokenizer}"\n'
                 "[models.wrong.bands]\nsemantic_floor = 0.39\nweak = 0.39\nmoderate = 0.47\nstrong = 0.67\n")
    monkeypatch.setenv("MEMO_MODELS", str(f))
    runner = CliRunner()
    spec = load_registry().get("fetched")
    assert not spec.onnx.exists()                                 # nothing downloaded implicitly
    res = runner.invoke(app, ["models", "fetch", "fetched", "--json"])
    assert res.exit_code == 0, res.output
    files = json.loads(res.stdout)["files"]
    assert [x["what"] for x in files] == ["model", "tokenizer"] and not files[0]["skipped"]
    assert spec.onnx.is_file() and "memo" in str(spec.onnx)       # user cache dir
    assert load_model(spec).embed_query("hi").shape == (384,)
    res = runner.invoke(app, ["models", "fetch", "fetched", "--json"])
    assert json.loads(res.stdout)["files"][0]["skipped"] is True
    res = runner.invoke(app, ["models", "fetch", "wrong", "--json"])
    assert res.exit_code == 7 and "sha256" in json.loads(res.stdout)["message"]
    assert not load_registry().get("wrong").onnx.exists()          # a bad download never lands


def test_server_start_backfills_in_the_background(tmp_path: Path):
    db = tmp_path / "srv.db"
    _fill(db)
    # What memo-mcp and memo web start: the embedder backfills the queue before its first job.
    embedder = BackgroundEmbedder(db).start()
    try:
        assert embedder.wait_idle(120)
    finally:
        embedder.stop(drain=False, timeout=10)
    conn = open_db(db, write=False)
    assert conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 3
    conn.close()
