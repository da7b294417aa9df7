"""A running ``memo web`` embeds the passages another process queued after it started
(memo/serve/pending_vectors.py): the ``vectors_pending`` hint says a server embeds them within
moments, and until this fix only a restart or a manual ``memo backfill`` did.

Real processes: ``memo web --port 0`` (the real embedding model) and a second process,
``memo import --no-embed``, writing to the same database while the server runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from web_server import REPO, memo_web

from memo import ops
from memo.store.db import open_db
from memo.stored import RecordDraft

QUOKKA = "The quokka enclosure is cleaned on Tuesdays by the keeper."


def test_the_server_embeds_what_another_process_queued(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    conn = open_db(db)
    ops.add_record(conn, RecordDraft(body="The staging deploy key rotates every 30 days.", namespace="ops"))
    conn.close()
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "quokka.txt").write_text(QUOKKA + "\n")
    with memo_web(db) as srv, httpx.Client(base_url=srv.base, headers=srv.auth(), timeout=60) as http:
        # First the server's start-up backfill must be over (else it would embed the import
        # below): an add's vector lands only after it, through the same embedder thread.
        added = http.post("/api/memories", json={"text": "Lunch on Fridays is pizza.", "namespace": "team"})
        assert added.status_code == 201 and added.json()["vectors"]["queued"] == 1, added.text
        deadline = time.monotonic() + 60
        while sum(http.get("/api/stats").json()["pending_vectors"].values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        run = subprocess.run([sys.executable, "-m", "memo", "import", str(zoo), "--no-embed", "--namespace", "zoo"],
                             cwd=REPO, env={**os.environ, "MEMO_DB": str(db)}, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr
        first = http.get("/api/stats").json()
        (model, queued), = first["pending_vectors"].items()
        assert queued == 1, first["pending_vectors"]        # the other process left it queued
        # Search by meaning only (the semantic arm sees vectors, nothing else) until the
        # passage is found: every search is answered meanwhile, none waits for the backfill.
        deadline, doc, answers = time.monotonic() + 60, None, 0
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            doc = http.get("/api/search", params={"q": "when is the quokka enclosure cleaned", "namespace": "zoo",
                                                  "mode": "semantic"}).json()
            answers += 1
            assert time.monotonic() - t0 < 30
            if doc["results"]:
                break
            time.sleep(0.5)
        assert doc is not None and doc["results"], (answers, doc and doc["reason"], srv.stderr())
        assert doc["results"][0]["text"] == QUOKKA and not doc["trace"]["degraded"]["flag"]
        assert http.get("/api/stats").json()["pending_vectors"][model] == 0
    assert "Traceback" not in srv.stderr(), srv.stderr()
