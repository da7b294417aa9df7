"""MemoTools (the MCP and web servers' state) with its background embedder (issue 9.9):
add, supersede and fact add answer after the commit with their vectors queued; ``wait``
keeps the synchronous path; ``close`` drains what was acknowledged."""

from __future__ import annotations

import numpy as np
import pytest

from memo.embed import backfill as backfill_mod
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
        assert queued["vectors"] == {"embedded": 0, "queued": 1, "model_id": default_model_id(), "error": None}
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
