"""Corpus builders and a fake semantic service for the pipeline tests (imported by name:
pytest puts this directory on sys.path)."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.types import PassageDraft, RecordDraft


def add(conn: sqlite3.Connection, text: str, *, recorded_at: str | None = None, section: str = "",
        **fields: Any) -> str:
    """Insert one record with one passage; returns the record id."""
    draft = RecordDraft(body=text, **fields)
    with write_tx(conn):
        return insert_record(conn, draft, (PassageDraft(text=text, section=section),), recorded_at=recorded_at)


def pk_of(conn: sqlite3.Connection, record_id: str) -> int:
    return conn.execute("SELECT pk FROM passages WHERE record_id = ?", (record_id,)).fetchone()[0]


class FakeIndex:
    def __init__(self, sims: dict[int, float]) -> None:
        self.sims = sims

    def search(self, conn, qvec, allowed, k):  # noqa: ANN001 - mirrors memo.embed.index
        ok = None if allowed is None else {int(x) for x in np.asarray(allowed).tolist()}
        items = [(pk, c) for pk, c in self.sims.items() if ok is None or pk in ok]
        items.sort(key=lambda x: (-x[1], x[0]))
        return items[:k]


class FakeSemantic:
    """Stands in for memo.embed.service.SemanticService: fixed cosines per passage pk."""

    def __init__(self, sims: dict[int, float], *, available: bool = True,
                 model_id: str = "all-minilm-l6-v2-int8") -> None:
        self.model_id = model_id
        self.index = FakeIndex(sims)
        self.available = available

    def status(self) -> tuple[bool, str]:
        return (True, "fake model") if self.available else (False, "fake model missing")

    def embed_query(self, text: str) -> np.ndarray:
        return np.zeros(384, dtype=np.float32)




def assert_why_reproduces_final(res: Any) -> None:
    """``why`` rebuilds the score exactly: contributions summed in arm order = fused, and
    fused x recency x speaker x date x heading x context, left to right = final = the result's score."""
    w = res.why
    total = 0.0
    for arm in w.arms.values():
        total += arm.contribution
    assert total == w.fused
    assert (w.fused * w.recency_factor * w.speaker_factor * w.date_factor * w.heading_factor * w.context_factor
            == w.final == res.score)
