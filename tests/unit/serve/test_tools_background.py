"""MemoTools (the MCP and web servers' state) with its background embedder (issue 9.9):
add, supersede, fact add and fact supersede answer after the commit with their vectors queued; ``wait``
keeps the synchronous path; ``close`` drains what was acknowledged."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memo.embed import backfill as backfill_mod
from memo.embed import service
from memo.embed.registry import default_model_id
from memo.serve.mcp_tools import MemoTools

pytestmark = pytest.mark.timeout(60)


class Embedder:
    dimensions = 8

    def __init__(self) -> None:
        self.model_id = default_model_id()

    def embed_passages(self, texts, batch_size=64):
        out = np.zeros((len(texts), 8), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def test_server_writes_are_acknowledged_then_embedded(tmp_path, monkeypatch):
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: Embedder())
    tools = MemoTools(tmp_path / "m.db")
    try:
        tools.start_embedder(backfill=False)
        queued = tools.add("the capybara enclosure needs a new heater")
        assert queued["vectors"] == {"embedded": 0, "queued": 1, "model_id": default_model_id(), "error": None, "reused": 0}
        waited = tools.add("the tapir enclosure is fine", wait=True)
        assert (waited["vectors"]["embedded"], waited["vectors"]["queued"]) == (1, 0)
        sup = tools.supersede(queued["record_id"], "the capybara enclosure got its new heater")
        assert (sup["vectors"]["embedded"], sup["vectors"]["queued"]) == (0, 1)
        fact = tools.fact_add("capybaras need heat", [sup["new_id"]])
        assert fact["status"] == "added" and fact["embedded"] is False
        assert tools.fact_add("tapirs are fine", [waited["record_id"]], wait=True)["embedded"] is True
    finally:
        tools.close()          # drains the background embedder first
    check = MemoTools(tmp_path / "m.db")
    try:
        stats = check.stats()
        assert stats["pending_vectors"] == {default_model_id(): 0}
        assert stats["pending_fact_vectors"] == {default_model_id(): 0}
    finally:
        check.close()


def test_without_an_embedder_writes_embed_before_answering(tmp_path, monkeypatch):
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: Embedder())
    tools = MemoTools(tmp_path / "m.db")        # library use and tests: no thread started
    try:
        assert tools.add("a note embedded in the call")["vectors"]["embedded"] == 1
    finally:
        tools.close()


def test_web_add_answers_queued_and_wait_embeds(tmp_path, monkeypatch):
    from starlette.testclient import TestClient

    from memo.serve.web import create_app

    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: Embedder())
    token = "t" * 20
    app = create_app(tmp_path / "w.db", token=token)
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        app.state.tools.start_embedder(backfill=False)      # what `memo web` (serve) does
        queued = client.post("/api/memories", json={"text": "a web note"}, headers=auth)
        assert queued.status_code == 201 and queued.json()["vectors"]["queued"] == 1
        waited = client.post("/api/memories", json={"text": "another web note", "wait": True}, headers=auth)
        assert waited.status_code == 201 and waited.json()["vectors"]["embedded"] == 1
        assert client.post("/api/memories", json={"text": "x", "wait": "yes"}, headers=auth).status_code == 400
        assert app.state.tools.embedder.wait_idle(10)
        assert client.get("/api/stats", headers=auth).json()["pending_vectors"] == {default_model_id(): 0}


class GatedEmbedder(Embedder):
    """``Embedder`` whose embedding waits for ``gate``: the background thread is held."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed_passages(self, texts, batch_size=64):
        assert self.gate.wait(20), "the test never opened the gate"
        return super().embed_passages(texts, batch_size)


def _fact_vectors(tools: MemoTools) -> int:
    with tools._read_lock:
        return tools.read_conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0]


def test_fact_supersede_is_acknowledged_then_embedded_as_fact_add_is(tmp_path, monkeypatch):
    """memory_fact_supersede answers after the commit with the new version's vector queued
    for the server's embedder (it embedded it in the call, holding the write connection,
    while memory_fact_add handed it over); ``wait`` keeps the synchronous path."""
    background = GatedEmbedder()
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: background)

    def in_the_call(spec):
        raise AssertionError("the supersede loaded the model itself instead of queueing the vector")

    monkeypatch.setattr(service, "load_model", in_the_call)
    tools = MemoTools(tmp_path / "m.db")
    try:
        tools.start_embedder(backfill=False)
        background.gate.set()
        rid = tools.add("the capybara enclosure needs a new heater")["record_id"]
        old = tools.fact_add("capybaras need heat", [rid])
        assert tools.embedder.wait_idle(10) and _fact_vectors(tools) == 1
        background.gate.clear()                     # the thread holds the next batch
        sup = tools.fact_supersede(old["fact_id"], "capybaras need a heated enclosure")
        assert sup["embedded"] is False and sup["evidence"] == old["evidence"]
        assert _fact_vectors(tools) == 1            # answered before the vector exists
        background.gate.set()
        assert tools.embedder.wait_idle(10) and _fact_vectors(tools) == 2
        monkeypatch.setattr(service, "load_model", lambda spec: Embedder())
        waited = tools.fact_supersede(sup["new_id"], "capybaras need a heated enclosure in winter", wait=True)
        assert waited["embedded"] is True and _fact_vectors(tools) == 3
    finally:
        background.gate.set()
        tools.close()


def test_fact_supersede_without_a_model_stays_queued(tmp_path, monkeypatch):
    """The embedder cannot load the model: the supersede still answers, its vector stays
    queued (memory_stats counts it) for `memo backfill` or the next start, as fact_add's."""
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    tools = MemoTools(tmp_path / "m.db")
    try:
        tools.start_embedder(backfill=False)
        rid = tools.add("the tapir enclosure is fine")["record_id"]
        old = tools.fact_add("tapirs are fine", [rid])
        sup = tools.fact_supersede(old["fact_id"], "tapirs are doing well")
        assert sup["embedded"] is False
        assert tools.embedder.wait_idle(10)
        pending = tools.stats()["pending_fact_vectors"]
        assert sum(pending.values()) == 2, pending           # the added fact and the new version
    finally:
        tools.close()
