"""Which database a command opens, and when it may create one (docs/cli-json.md, "Errors"):
an empty or URL-like --db, a folder that cannot be written, and the commands that only make
sense on an existing database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()


def invoke(*args: str) -> tuple[int, dict]:
    res = runner.invoke(app, [*args, "--json"])
    return res.exit_code, json.loads(res.stdout)


def default_file() -> Path:
    """The file memo falls back to without --db and $MEMO_DB (under the test's XDG dirs)."""
    return Path(os.environ["XDG_DATA_HOME"]) / "memo" / "memo.db"


# --- issue 1: an empty --db, a URL that is not PostgreSQL's ------------------------------------
@pytest.mark.parametrize("cmd", [["add", "a note meant for another database"], ["import", "."],
                                 ["search", "q"], ["doctor"], ["stats"]], ids=" ".join)
@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_or_blank_db_is_refused(cmd: list[str], value: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env_db = Path(os.environ["MEMO_DB"])
    code, doc = invoke(*cmd, "--db", value)
    assert code == 2 and doc["error"] == "ValidationError", doc
    assert doc["message"].startswith("--db is "), doc
    assert "postgresql://" in doc["hint"]
    assert not env_db.exists() and not default_file().exists()
    assert list(tmp_path.iterdir()) == []


def test_an_empty_memo_db_means_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented choice: MEMO_DB="" is how environments that cannot unset a variable
    clear it; the default database is used."""
    monkeypatch.setenv("MEMO_DB", "")
    code, doc = invoke("add", "into the default database")
    assert code == 0 and doc["status"] == "added", doc
    assert default_file().exists()


def test_a_blank_memo_db_is_refused_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMO_DB", "  ")
    code, doc = invoke("add", "x")
    assert code == 2 and doc["message"].startswith("$MEMO_DB is blank"), doc
    assert not default_file().exists()


@pytest.mark.parametrize("value", ["sqlite:///tmp/x.db", "file:///tmp/x.db", "mysql://u:secret@h/db",
                                   " SQLite://x.db"])
def test_a_url_other_than_postgresql_is_refused(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, doc = invoke("add", "x", "--db", value)
    assert code == 2 and doc["error"] == "ValidationError", doc
    assert "URL" in doc["message"] and "postgresql://" in doc["hint"], doc
    assert "secret" not in doc["message"]                 # a password is never echoed
    assert list(tmp_path.iterdir()) == []                 # no folder named "sqlite:"
    monkeypatch.setenv("MEMO_DB", value)
    code, doc = invoke("stats")
    assert code == 2 and doc["message"].startswith("$MEMO_DB "), doc


# --- issue 2: a new database in a folder that cannot be written --------------------------------
def _memo() -> list[str]:
    exe = Path(sys.executable).with_name("memo")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "memo"]


def _without_write_privilege() -> list[str]:
    """A prefix that runs a command without root's file-permission override; skip when
    this process cannot drop it (root without setpriv)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--inh-caps=-all"] if setpriv else []
    if not prefix or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root without a working setpriv: cannot drop the permission override")
    return prefix


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize("name", ["new.db", "sub/new.db"])
def test_a_new_database_in_a_folder_without_write_permission_is_exit_2(read_only_folder: Path, name: str) -> None:
    prefix = _without_write_privilege()
    target = read_only_folder / name
    proc = subprocess.run([*prefix, *_memo(), "add", "x", "--db", str(target), "--json"],
                          capture_output=True, text=True, timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and doc["error"] == "ValidationError", (proc.returncode, doc, proc.stderr)
    assert "no permission" in doc["message"] and str(read_only_folder) in doc["message"], doc
    assert "unable to open" not in doc["message"] and "memo stats" not in doc["hint"], doc
    assert not target.exists()


# --- issue 3: commands that need an existing database create none ------------------------------
NEEDS_A_DATABASE = [
    ["reindex"], ["backfill"], ["purge", "--yes"], ["forget", "rX"], ["supersede", "rX", "new text"],
    ["stats", "--migrate"], ["fact", "add", "a fact", "--evidence", "rX"], ["fact", "list"], ["fact", "get", "fX"],
    ["fact", "supersede", "fX", "new"], ["fact", "forget", "fX"],
]


@pytest.mark.parametrize("cmd", NEEDS_A_DATABASE, ids=" ".join)
def test_a_command_on_a_missing_database_creates_none(cmd: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "mistyped.db"
    code, doc = invoke(*cmd, "--db", str(missing))
    assert code == 6 and doc["error"] == "StoreError", doc
    assert doc["message"] == f"no database at {missing}", doc
    assert list(tmp_path.iterdir()) == []


def test_memo_mcp_backfill_on_a_missing_database_creates_none(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`memo-mcp backfill` is `memo backfill --json`: a mistyped --db is exit 6, not a new empty database."""
    from memo.serve.mcp import run_backfill

    missing = tmp_path / "mistyped.db"
    assert run_backfill(str(missing), None, 64) == 6
    out = capsys.readouterr()
    assert out.out == "" and f"no database at {missing}" in out.err, out
    assert list(tmp_path.iterdir()) == []


def test_add_still_creates_the_database(tmp_path: Path) -> None:
    new = tmp_path / "new.db"
    code, doc = invoke("add", "the first note", "--db", str(new))
    assert code == 0 and doc["status"] == "added" and new.exists()
