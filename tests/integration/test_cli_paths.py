"""Issue 33.5: an odd path-like argument (a name longer than the file system allows, a
path through a file) is the typed error of its kind, exit 2, never a bare OSError text
(a 300-character --profile, --db or DEST was "failed: File name too long", exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.store.db import open_db

runner = CliRunner()
LONG = "a" * 300          # over NAME_MAX (255) on every common file system


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "m.db"
    open_db(path).close()
    monkeypatch.setenv("MEMO_DB", str(path))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    return path


@pytest.mark.parametrize("args, error", [
    (["search", "hello", "--profile", LONG], "ProfileError"),
    (["search", "hello", "--profile", f"/tmp/{LONG}.toml"], "ProfileError"),
    (["stats", "--db", f"/tmp/{LONG}.db"], "ValidationError"),
    (["stats", "--db", "{db}/x.db"], "ValidationError"),
    (["add", "note", "--db", f"/tmp/{LONG}/m.db"], "ValidationError"),
    (["backup", f"/tmp/{LONG}.db"], "ValidationError"),
    (["restore", f"/tmp/{LONG}.db", "--yes"], "ValidationError"),
    (["import", f"/tmp/{LONG}.md"], "ValidationError"),
    (["doctor", "--db", f"/tmp/{LONG}.db"], "ValidationError"),
])
def test_odd_paths_are_typed_errors(db: Path, args: list[str], error: str) -> None:
    res = runner.invoke(app, [*(a.replace("{db}", str(db)) for a in args), "--json"])
    doc = json.loads(res.stdout)
    assert (res.exit_code, doc["error"]) == (2, error), doc
    assert "cannot be used" in doc["message"] or "does not exist" in doc["message"], doc
    assert len(doc["message"]) < 500, doc      # the path is shown, cut


def test_memo_mcp_with_an_unusable_db_path_says_so_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "memo.serve.mcp", "--db", str(tmp_path / f"{LONG}.db")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("memo-mcp: error: the database path")
