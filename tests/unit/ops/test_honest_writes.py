"""Issue 9.6: add, supersede and import report success once committed.  An embedding
failure after the commit (model missing, onnxruntime error, anything) is reported as
queued vectors, never as a failed write: the record is searchable by keyword at once, its
passages are pending in `memo stats`, and `memo backfill` embeds them later."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import memo
from memo import ops
from memo.embed import backfill as backfill_mod
from memo.embed.backfill import backfill
from memo.embed.registry import default_model_id
from memo.errors import ModelUnavailable
from memo.store.db import open_db
from memo.stored import RecordDraft

pytestmark = pytest.mark.timeout(120)
DIM = 8


class GoodEmbedder:
    """Deterministic vectors under the default model's id (so `memo stats` counts them)."""

    dimensions = DIM

    def __init__(self) -> None:
        self.model_id = default_model_id()

    def embed_passages(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, len(t) % DIM] = 1.0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


class BrokenEmbedder(GoodEmbedder):
    def __init__(self, exc: Exception) -> None:
        super().__init__()
        self.exc = exc

    def embed_passages(self, texts, batch_size=64):
        raise self.exc


FAILURES = {
    "load-unavailable": ("load", ModelUnavailable("model file missing: model.onnx")),
    "load-runtime": ("load", RuntimeError("onnxruntime: cannot create session")),
    "embed-runtime": ("embed", RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION")),
    "embed-unavailable": ("embed", ModelUnavailable("model became unreadable")),
    "embed-unexpected": ("embed", ValueError("shapes do not match")),
}


@pytest.fixture(params=sorted(FAILURES))
def broken(request, monkeypatch) -> str:
    stage, exc = FAILURES[request.param]

    def load(spec):
        if stage == "load":
            raise exc
        return BrokenEmbedder(exc)

    monkeypatch.setattr(backfill_mod, "load_model", load)
    return str(exc)


def heal(monkeypatch) -> None:
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: GoodEmbedder())


def pending(conn) -> int:
    return ops.stats(conn).pending_vectors[default_model_id()]


def found(db: Path, query: str, record_id: str) -> bool:
    res = memo.search(query, db=db, services={})
    return record_id in {r.record_id for r in res.results}


def test_add_is_success_with_queued_vectors(db_path, broken, monkeypatch):
    conn = open_db(db_path)
    rep = ops.add_record(conn, RecordDraft(body="the zanzibar deployment runbook"))
    assert rep.status == "added"
    assert rep.vectors.embedded == 0 and rep.vectors.queued == rep.passages == 1
    assert broken.split(":")[0] in rep.vectors.error
    assert found(db_path, "zanzibar", rep.record_id)
    assert pending(conn) == 1
    heal(monkeypatch)
    assert backfill(conn, progress=False).embedded == 1
    assert pending(conn) == 0


def test_supersede_is_success_with_queued_vectors(db_path, broken, monkeypatch):
    conn = open_db(db_path)
    old = ops.add_record(conn, RecordDraft(body="first version of the quokka note")).record_id
    rep = ops.supersede(conn, old, "second version of the quokka note")
    assert rep.old_id == old and rep.vectors.queued == rep.passages == 1 and rep.vectors.error
    assert found(db_path, "quokka", rep.new_id)
    assert pending(conn) == 1     # the old version is not live: only the new one counts
    heal(monkeypatch)
    backfill(conn, progress=False)
    assert pending(conn) == 0


def test_working_model_reports_embedded(db_path, monkeypatch):
    heal(monkeypatch)
    conn = open_db(db_path)
    rep = ops.add_record(conn, RecordDraft(body="a note that embeds at once"))
    assert (rep.vectors.embedded, rep.vectors.queued, rep.vectors.error) == (1, 0, None)
    assert rep.vectors.model_id == default_model_id()
    again = ops.add_record(conn, RecordDraft(body="a note that embeds at once"))
    assert again.status == "skipped" and again.vectors is None
    new = ops.supersede(conn, rep.record_id, "a changed note that embeds at once")
    assert (new.vectors.embedded, new.vectors.queued) == (1, 0)


def _cli(*args: str, code: int = 0):
    from memo.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    return result


def test_cli_add_supersede_import_exit_0_and_backfill_later(db_path, tmp_path, broken, monkeypatch):
    db = str(db_path)
    res = _cli("add", "the okapi migration plan", "--db", db, "--json")
    doc = json.loads(res.stdout)
    assert doc["status"] == "added"
    assert doc["vectors"]["queued"] == 1 and doc["vectors"]["embedded"] == 0 and doc["vectors"]["error"]
    assert "memo backfill" in res.stderr and len(res.stderr.strip().splitlines()) == 1

    res = _cli("add", "a second note about the okapi", "--db", db)
    assert res.stdout.startswith("added ") and "memo backfill" in res.stderr

    res = _cli("supersede", doc["record_id"], "the okapi migration plan, revised", "--db", db, "--json")
    sup = json.loads(res.stdout)
    assert sup["vectors"]["queued"] == 1 and "memo backfill" in res.stderr

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Okapi\nokapi habitat notes\n")
    (folder / "b.md").write_text("# Tapir\ntapir habitat notes\n")
    res = _cli("import", str(folder), "--db", db, "--json")
    imp = json.loads(res.stdout)
    assert imp["added"] == 2 and imp["embedding"]["error"]
    # the import's own passages; the three of the earlier writes (the superseded version's
    # included: as_of searches) are not this import's, and the note on stderr says so
    assert imp["vectors"]["queued"] == 2 and imp["vectors"]["error"]
    assert imp["embedding"]["pending_after"] == 2
    assert "memo backfill" in res.stderr
    res = _cli("import", str(folder), "--db", db)
    assert "note: 3 passage(s) of other records have no vector yet" in res.stderr

    stats = json.loads(_cli("stats", "--db", db, "--json").stdout)
    assert stats["pending_vectors"][default_model_id()] == 4          # live passages only
    assert json.loads(_cli("search", "okapi", "--db", db, "--json").stdout)["results"]

    heal(monkeypatch)
    assert json.loads(_cli("backfill", "--db", db, "--json").stdout)["embedded"] == 5
    stats = json.loads(_cli("stats", "--db", db, "--json").stdout)
    assert stats["pending_vectors"][default_model_id()] == 0


def test_cli_add_with_working_model_prints_no_note(db_path, monkeypatch):
    heal(monkeypatch)
    res = _cli("add", "nothing to say about vectors", "--db", str(db_path), "--json")
    assert json.loads(res.stdout)["vectors"] == {"embedded": 1, "queued": 0, "model_id": default_model_id(),
                                                "error": None, "reused": 0}
    assert res.stderr == ""


def test_cli_import_embeds_its_own_passages_only(db_path, tmp_path, monkeypatch):
    """An import embeds the passages of the records it added, updated or matched (an import
    run again finishes the embedding a first run did not), never those an earlier
    ``--no-embed`` import left queued: that choice stands until ``memo backfill``."""
    heal(monkeypatch)
    db = str(db_path)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(6):
        (big / f"n{i}.md").write_text(f"# Note {i}\nwombat burrow survey number {i}\n")
    imp = json.loads(_cli("import", str(big), "--db", db, "--no-embed", "--json").stdout)
    assert imp["added"] == 6 and imp["embedding"] is None and imp["vectors"]["queued"] == 6
    small = tmp_path / "small"
    small.mkdir()
    (small / "one.md").write_text("# One\nthe quokka enclosure\n")
    res = _cli("import", str(small), "--db", db, "--json")
    imp = json.loads(res.stdout)
    assert imp["embedding"]["embedded"] == 1 and imp["embedding"]["pending_after"] == 0
    assert imp["vectors"] == {"embedded": 1, "queued": 0, "model_id": default_model_id(), "error": None, "reused": 0}
    assert "6 passage(s) of other records have no vector yet" in res.stderr
    assert json.loads(_cli("stats", "--db", db, "--json").stdout)["pending_vectors"][default_model_id()] == 6
    # the same folder again: every input skipped, their stored records' passages embedded now
    imp = json.loads(_cli("import", str(big), "--db", db, "--json").stdout)
    assert imp["skipped"] == 6 and len(imp["skipped_record_ids"]) == 6 and imp["embedding"]["embedded"] == 6
    assert json.loads(_cli("stats", "--db", db, "--json").stdout)["pending_vectors"][default_model_id()] == 0


def test_import_embedding_that_cannot_count_reports_its_passages_pending(db_path, monkeypatch):
    """The server went away while an import embedded: neither the embedding nor the count
    of what is left can run; the import's passages are reported pending, not 0."""
    from memo.ops import after_commit

    def gone(*a, **k):
        raise ConnectionError("server closed the connection")

    monkeypatch.setattr(backfill_mod, "embed_import", gone)
    monkeypatch.setattr(after_commit, "_counts", gone)
    rep = after_commit.embed_pending(open_db(db_path), ["r1", "r2"], progress=False, passages=7)
    assert (rep.pending_before, rep.pending_after, rep.embedded) == (7, 7, 0) and "server closed" in rep.error
