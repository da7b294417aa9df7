"""Corpus builders and a fake semantic service for the pipeline tests (imported by name:
pytest puts this directory on sys.path)."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft


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
    fused x each factor of ``why.factors``, left to right = final = the result's score."""
    w = res.why
    total = 0.0
    for arm in w.arms.values():
        total += arm.contribution
    assert total == w.fused
    score = w.fused
    for f in w.factors:
        score *= f.value
    assert score == w.final == res.score


def factor_of(x: Any, name: str) -> float:
    """The value of the factor ``name`` on a candidate or a why (1.0 when it has none)."""
    return next((f.value for f in x.factors if f.name == name), 1.0)


def label_of(x: Any, name: str) -> str | None:
    """The label of the factor ``name`` on a candidate or a why (None when it has none)."""
    return next((f.label for f in x.factors if f.name == name), None)


def rescore(rescorer: Any, cands: Any, meta: Any, query: str = "", *, profile: str = "base", now: Any = None,
            **overrides: Any) -> list:
    """Run one rescorer over candidates as the pipeline does (``memo.retrieve.rescore.apply``),
    with a profile's keys overridden (``context__boost=1.0`` for ``context.boost``)."""
    from datetime import UTC, datetime

    from memo.profile import load_profile
    from memo.retrieve.rescore import RescoreInput, apply

    p = load_profile(profile)
    if overrides:
        p = p.with_overrides({k.replace("__", "."): list(v) if isinstance(v, tuple) else v
                              for k, v in overrides.items()})
    inp = RescoreInput(query, meta, now or datetime(2026, 1, 1, tzinfo=UTC), p)
    return apply(rescorer, cands, inp)[0]


def rescore_named(rescorer: Any, cands: Any, meta: Any, query: str = "", **kw: Any) -> tuple[list, tuple]:
    """``rescore``, and what the query named (the trace's ``rescore[name]``)."""
    from datetime import UTC, datetime

    from memo.profile import load_profile
    from memo.retrieve.rescore import RescoreInput, apply

    p = load_profile(kw.pop("profile", "base"))
    if kw:
        p = p.with_overrides({k.replace("__", "."): list(v) if isinstance(v, tuple) else v for k, v in kw.items()})
    ranked, out = apply(rescorer, cands, RescoreInput(query, meta, datetime(2026, 1, 1, tzinfo=UTC), p))
    return ranked, out.named
