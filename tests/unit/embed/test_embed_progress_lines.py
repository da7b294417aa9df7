"""Embedding's progress on a stderr that is no terminal (a log, a pipe, CI): one plain line
at most every ``PLAIN_PROGRESS_EVERY`` seconds, as the import's batches print theirs.
Before, `memo import <folder> 2>log` (and `memo backfill`) printed nothing for the minutes
its embedding ran: a long silent step looks hung.  No bar is drawn there
(test_backfill.py::test_no_progress_bar_off_a_terminal), and nothing at all with progress
off or with --json.  The interval is patched to 0 here: a line after every batch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.embed import backfill as backfill_mod
from memo.embed.backfill import backfill, embed_records
from memo.embed.registry import default_model_id
from memo.ops.after_commit import embed_pending

from .conftest import FakeEmbedder, add

LINE = re.compile(r"^embedding: ([\d,]+)/([\d,]+) passages after \d+ s$")


class DefaultModelEmbedder(FakeEmbedder):
    """The fake, under the registry's default model id (``embed_import`` looks it up)."""

    model_id = default_model_id()


@pytest.fixture
def every_batch(monkeypatch) -> None:
    # raising=False: without the constant (before the fix) the tests fail on what is printed
    monkeypatch.setattr(backfill_mod, "PLAIN_PROGRESS_EVERY", 0.0, raising=False)


def embedding_lines(err: str) -> list[tuple[int, int]]:
    """(done, total) of each embedding progress line of ``err``; any other embedding line fails."""
    out = []
    for line in err.splitlines():
        if line.startswith("embedding"):
            m = LINE.match(line)
            assert m, line
            out.append((int(m[1].replace(",", "")), int(m[2].replace(",", ""))))
    return out


def test_backfill_prints_plain_lines_off_a_terminal(conn, capfd, every_batch):
    for i in range(40):
        add(conn, f"passage {i}")
    capfd.readouterr()
    assert backfill(conn, progress=True, embedder=FakeEmbedder(), batch_size=16).embedded == 40
    err = capfd.readouterr().err
    assert embedding_lines(err) == [(16, 40), (32, 40), (40, 40)]
    assert "\x1b" not in err and "\r" not in err           # plain lines, no bar


def test_embed_records_prints_plain_lines_off_a_terminal(conn, capfd, every_batch):
    ids = [add(conn, f"record {i}") for i in range(20)]
    capfd.readouterr()
    assert embed_records(conn, ids, progress=True, batch_size=8, embedder=FakeEmbedder()).embedded == 20
    assert embedding_lines(capfd.readouterr().err) == [(8, 20), (16, 20), (20, 20)]


def test_an_imports_embedding_prints_plain_lines(conn, capfd, every_batch, monkeypatch):
    """``memo import``'s embedding: embed_pending -> embed_import -> embed_records."""
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: DefaultModelEmbedder())
    ids = [add(conn, f"imported {i}") for i in range(70)]
    capfd.readouterr()
    rep = embed_pending(conn, ids, progress=True, passages=70)
    assert rep.error is None and rep.embedded == 70
    assert embedding_lines(capfd.readouterr().err)[-1] == (70, 70)


def test_nothing_with_progress_off(conn, capfd, every_batch, monkeypatch):
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: DefaultModelEmbedder())
    ids = [add(conn, f"quiet {i}") for i in range(20)]
    capfd.readouterr()
    assert embed_pending(conn, ids[:10], progress=False).embedded == 10
    assert backfill(conn, progress=False, embedder=DefaultModelEmbedder(), batch_size=4).embedded == 10
    assert capfd.readouterr().err == ""


def _cli(*args: str):
    from memo.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result


def test_cli_import_and_backfill_print_lines_in_a_log_but_not_with_json(tmp_path: Path, every_batch, monkeypatch):
    monkeypatch.setattr(backfill_mod, "load_model", lambda spec: DefaultModelEmbedder())
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(12):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nokapi habitat notes number {i}\n")
    db = str(tmp_path / "m.db")
    res = _cli("import", str(folder), "--db", db)
    assert embedding_lines(res.stderr)[-1] == (12, 12)
    assert "embedded 12 passages" in res.stdout
    # --json: the document alone, nothing on stderr about embedding
    (folder / "extra.md").write_text("# Extra\n\ntapir habitat notes\n")
    res = _cli("import", str(folder), "--db", db, "--json")
    assert json.loads(res.stdout)["embedding"]["embedded"] == 1
    assert embedding_lines(res.stderr) == []
    # --no-progress: none either
    (folder / "more.md").write_text("# More\n\ncapybara habitat notes\n")
    res = _cli("import", str(folder), "--db", db, "--no-progress")
    assert embedding_lines(res.stderr) == []

    # `memo backfill` of --no-embed imports: lines in a log, none with --json
    (folder / "later.md").write_text("# Later\n\nquokka habitat notes\n")
    _cli("import", str(folder), "--db", db, "--no-embed")
    res = _cli("backfill", "--db", db)
    assert embedding_lines(res.stderr) == [(1, 1)]
    (folder / "last.md").write_text("# Last\n\nwombat habitat notes\n")
    _cli("import", str(folder), "--db", db, "--no-embed")
    res = _cli("backfill", "--db", db, "--json")
    assert json.loads(res.stdout)["embedded"] == 1 and embedding_lines(res.stderr) == []
