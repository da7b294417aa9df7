"""A deterministic fake embedder (unit tests only; integration tests use the real model)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memo.embed import service
from memo.embed.integrity import forget
from memo.embed.registry import Bands, ModelSpec
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

DIM = 8


def fake_vec(text: str) -> np.ndarray:
    """Bag of hashed words -> unit vector: texts sharing words have higher cosine."""
    v = np.zeros(DIM, dtype=np.float32)
    for word in text.lower().split():
        h = int(hashlib.sha256(word.encode()).hexdigest(), 16)
        v[h % DIM] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


class FakeEmbedder:
    model_id = "fake-model"
    dimensions = DIM

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed_passages(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(len(texts))
        return np.stack([fake_vec(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return fake_vec(text)


def fake_spec(tmp_path: Path) -> ModelSpec:
    return ModelSpec(id="fake-model", onnx=tmp_path / "none.onnx", sha256="0" * 64,
                     tokenizer=tmp_path / "none.json", tokenizer_sha256=None, dimensions=DIM,
                     pooling="mean", max_tokens=256, bands=Bands(0.3, 0.3, 0.5, 0.7))


def add(conn: sqlite3.Connection, text: str, section: str = "", **fields) -> str:
    with write_tx(conn):
        return insert_record(conn, RecordDraft(body=text, **fields), (PassageDraft(text=text, section=section),))


@pytest.fixture(autouse=True)
def _clean_caches() -> Iterator[None]:
    service.clear_caches()
    forget()
    yield
    service.clear_caches()
    forget()


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path / "embed.db")
    yield c
    c.close()


@pytest.fixture
def backend_conn(backend_db: str) -> Iterator[sqlite3.Connection]:
    """A fresh database on each backend (SQLite file, real PostgreSQL; issue 17.3) for the
    modules whose ``conn`` runs on both."""
    c = open_db(backend_db)
    yield c
    c.close()
