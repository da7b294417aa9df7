"""The background embedder (memo/embed/background.py; issue 9.9): a server's add returns
after its commit with its passages queued, a daemon thread embeds them moments later, a
model failure leaves them queued (and says so) for `memo backfill`, and stopping drains
what was submitted or leaves it queued in the database, never lost."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import memo
from memo import ops
from memo.embed import backfill as backfill_mod
from memo.embed.background import BackgroundEmbedder, BatchOutcome
from memo.embed.registry import default_model_id
from memo.embed.vectors import pending_count
from memo.errors import ModelUnavailable
from memo.ops.facts import add_fact
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft

pytestmark = pytest.mark.timeout(60)
DIM = 8


class GatedEmbedder:
    """Deterministic vectors under the default model's id; ``embed_passages`` waits for
    ``gate`` (set by default), so a test can hold the thread mid-batch."""

    dimensions = DIM

    def __init__(self) -> None:
        self.model_id = default_model_id()
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.calls: list[int] = []

    def embed_passages(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        self.entered.set()
        assert self.gate.wait(20), "the test never opened the gate"
        self.calls.append(len(texts))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, len(t) % DIM] = 1.0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


@pytest.fixture
def model(monkeypatch) -> GatedEmbedder:
    emb = GatedEmbedder()
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: emb)
    return emb


@pytest.fixture
def outcomes() -> list[BatchOutcome]:
    return []


@pytest.fixture
def embedder(db_path: Path, outcomes: list[BatchOutcome]):
    open_db(db_path).close()       # create and migrate before the thread opens it
    emb = BackgroundEmbedder(db_path, backfill_at_start=False, on_batch=outcomes.append).start()
    yield emb
    emb.stop(drain=False, timeout=5)


def vectors_of(conn, record_id: str) -> int:
    return conn.execute("SELECT count(*) FROM vectors v JOIN passages p ON p.pk = v.passage_pk "
                        "WHERE p.record_id = ?", (record_id,)).fetchone()[0]


def test_add_returns_before_the_vector_exists_then_it_appears(db_path, model, embedder, outcomes):
    conn = open_db(db_path)
    model.gate.clear()              # the thread will block inside the embedding
    t0 = time.monotonic()
    rep = ops.add_record(conn, RecordDraft(body="the narwhal feeding schedule is at dawn"), background=embedder)
    assert time.monotonic() - t0 < 5, "add_record waited for the embedding"
    assert rep.status == "added"
    assert (rep.vectors.embedded, rep.vectors.queued, rep.vectors.error) == (0, rep.passages, None)
    assert rep.vectors.model_id == default_model_id()
    assert model.entered.wait(5)    # the thread has the batch and is embedding it
    assert vectors_of(conn, rep.record_id) == 0
    # Keyword search finds it before its vector exists.
    res = memo.search("narwhal feeding", db=db_path, services={})
    assert rep.record_id in {r.record_id for r in res.results}
    model.gate.set()
    assert embedder.wait_idle(10)
    assert vectors_of(conn, rep.record_id) == rep.passages == 1
    assert pending_count(conn, default_model_id()) == 0
    (out,) = outcomes
    assert out.error is None and out.embedded == 1 and out.jobs[0].record_ids == (rep.record_id,)
    assert out.finished >= out.jobs[0].submitted


def test_adds_waiting_while_a_batch_embeds_go_together(db_path, model, embedder, outcomes):
    conn = open_db(db_path)
    model.gate.clear()
    first = ops.add_record(conn, RecordDraft(body="first note about otters"), background=embedder)
    assert model.entered.wait(5)
    rest = [ops.add_record(conn, RecordDraft(body=f"otter note number {i}"), background=embedder).record_id
            for i in range(5)]
    assert embedder.queued() == 5
    model.gate.set()
    assert embedder.wait_idle(10)
    assert [len(o.jobs) for o in outcomes] == [1, 5]          # one ONNX pass for the five
    assert model.calls == [1, 5]
    assert all(vectors_of(conn, r) == 1 for r in [first.record_id, *rest])


def test_model_failure_leaves_the_passages_queued_and_says_why(db_path, monkeypatch, embedder, outcomes, caplog):
    def unavailable(spec):
        raise ModelUnavailable("model file missing: model.onnx")

    monkeypatch.setattr(backfill_mod, "load_model", unavailable)
    conn = open_db(db_path)
    rep = ops.add_record(conn, RecordDraft(body="the ibis migration route"), background=embedder)
    assert rep.status == "added" and rep.vectors.queued == 1
    assert embedder.wait_idle(10)
    assert "model file missing" in outcomes[0].error and "model file missing" in embedder.last_error
    assert "stay queued" in caplog.text
    assert pending_count(conn, default_model_id()) == 1       # still queued, for `memo backfill`
    assert embedder.running                                  # the thread goes on serving

    good = GatedEmbedder()
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: good)
    assert backfill_mod.backfill(conn, progress=False).embedded == 1
    assert pending_count(conn, default_model_id()) == 0


def test_embedding_error_mid_batch_is_logged_not_raised(db_path, monkeypatch, embedder, outcomes):
    class Broken(GatedEmbedder):
        def embed_passages(self, texts, batch_size=64):
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION")

    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: Broken())
    conn = open_db(db_path)
    rep = ops.add_record(conn, RecordDraft(body="the heron nesting survey"), background=embedder)
    assert rep.status == "added" and rep.vectors.error is None
    assert embedder.wait_idle(10)
    assert "RUNTIME_EXCEPTION" in outcomes[0].error
    assert pending_count(conn, default_model_id()) == 1


def test_stop_drains_what_was_submitted(db_path, model, outcomes):
    open_db(db_path).close()
    emb = BackgroundEmbedder(db_path, backfill_at_start=False, on_batch=outcomes.append).start()
    conn = open_db(db_path)
    model.gate.clear()
    ids = [ops.add_record(conn, RecordDraft(body=f"lemur note {i}"), background=emb).record_id for i in range(3)]
    threading.Timer(0.2, model.gate.set).start()
    assert emb.stop(drain=True, timeout=10)
    assert all(vectors_of(conn, r) == 1 for r in ids)
    # Stopped: a later add embeds itself before returning (nothing is left behind).
    late = ops.add_record(conn, RecordDraft(body="lemur note after the stop"), background=emb)
    assert (late.vectors.embedded, late.vectors.queued) == (1, 0)


def test_stop_without_drain_leaves_the_rest_queued_in_the_database(db_path, model, outcomes):
    open_db(db_path).close()
    emb = BackgroundEmbedder(db_path, backfill_at_start=False, on_batch=outcomes.append).start()
    conn = open_db(db_path)
    model.gate.clear()
    first = ops.add_record(conn, RecordDraft(body="gecko note one"), background=emb)
    assert model.entered.wait(5)
    second = ops.add_record(conn, RecordDraft(body="gecko note two"), background=emb)
    threading.Timer(0.2, model.gate.set).start()
    assert emb.stop(drain=False, timeout=10)
    assert vectors_of(conn, first.record_id) == 1            # the batch in hand finishes
    assert vectors_of(conn, second.record_id) == 0           # the rest stays queued...
    assert pending_count(conn, default_model_id()) == 1
    assert BackgroundEmbedder(db_path).start().stop(drain=True)   # ...and the next start embeds it
    assert vectors_of(conn, second.record_id) == 1


def test_fact_add_and_supersede_go_to_the_background(db_path, model, embedder, outcomes):
    conn = open_db(db_path)
    rec = ops.add_record(conn, RecordDraft(body="the kea is a parrot of the southern alps"))
    model.gate.clear()
    fact = add_fact(conn, FactDraft(text="keas live in the alps", evidence=(rec.record_id,)), background=embedder)
    assert fact.status == "added" and fact.embedded is False
    sup = ops.supersede(conn, rec.record_id, "the kea is a parrot of New Zealand's southern alps",
                        background=embedder)
    assert (sup.vectors.embedded, sup.vectors.queued) == (0, 1)
    model.gate.set()
    assert embedder.wait_idle(10)
    assert conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0] == 1
    assert vectors_of(conn, sup.new_id) == 1
    assert not any(o.error for o in outcomes)


def test_backfill_at_start_embeds_what_was_queued_before(db_path, monkeypatch):
    def unavailable(spec):
        raise ModelUnavailable("not yet")

    monkeypatch.setattr(backfill_mod, "load_model", unavailable)
    conn = open_db(db_path)
    ops.add_record(conn, RecordDraft(body="queued while the model was missing"))
    assert pending_count(conn, default_model_id()) == 1
    good = GatedEmbedder()
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: good)
    emb = BackgroundEmbedder(db_path).start()
    assert emb.wait_idle(10) and emb.stop()
    assert pending_count(conn, default_model_id()) == 0


def test_stop_ends_a_long_batch_after_the_window_in_hand(db_path, model, outcomes):
    """A big write (here 40 records in one hand-off, 16 passages per window) does not hold
    the shutdown: the thread finishes the window it is embedding and leaves the rest queued."""
    conn = open_db(db_path)
    ids = [ops.add_record(conn, RecordDraft(body=f"walrus note {i}"), background=None).record_id
           for i in range(40)]
    conn.execute("DELETE FROM vectors")
    conn.commit()
    model.calls.clear()
    model.entered.clear()
    emb = BackgroundEmbedder(db_path, backfill_at_start=False, batch_size=2, on_batch=outcomes.append).start()
    model.gate.clear()
    assert emb.submit(ids)
    assert model.entered.wait(5)
    threading.Timer(0.2, model.gate.set).start()
    assert emb.stop(drain=False, timeout=10)
    assert model.calls == [16]                                # one window, then it stopped
    assert pending_count(conn, default_model_id()) == 24
    assert outcomes[0].embedded == 16



@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_the_embedder_thread_runs_at_a_lower_priority_than_the_server(model, embedder, db_path):
    """Background work gives way: the thread that embeds runs at a higher nice value than
    the server thread that added the note, whose own priority is unchanged."""
    import os

    from memo.embed import background

    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []
    real = model.embed_passages

    def recording(texts, batch_size=64):
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real(texts, batch_size)

    model.embed_passages = recording
    conn = open_db(db_path, write=True)
    ops.add_record(conn, RecordDraft(body="the embedder gives way to requests"), background=embedder)
    assert embedder.wait_idle(20)
    assert seen and set(seen) == {min(mine + background.BACKGROUND_NICE, 19)}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine
