"""A search ends its process without the interpreter's teardown once its output is flushed
(memo.cli.common.skip_teardown; 45-70 ms of a cold hybrid search, 12-14 ms of a keyword
one): the output and the exit code are whole, atexit handlers still run, and a write ends
the usual way.

The driver keeps an object whose finalizer writes one marker file (finalizers run in the
teardown, not after ``os._exit``) and registers an atexit handler that writes another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTES = REPO / "datasets" / "sample" / "notes"
DRIVER = """
import atexit, os, sys
class Finalized:
    def __del__(self):
        open(os.environ["MEMO_TEST_MARKER"], "w").close()
sys.modules["memo_test_finalized"] = Finalized()
atexit.register(lambda: open(os.environ["MEMO_TEST_MARKER"] + ".atexit", "w").close())
sys.argv = ["memo", *sys.argv[1:]]
from memo.cli import main
main()
"""


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """(the process, whether it went through the teardown); its atexit handler must have run."""
    marker, at_exit = tmp_path / "tore-down", tmp_path / "tore-down.atexit"
    marker.unlink(missing_ok=True)
    at_exit.unlink(missing_ok=True)
    env = dict(os.environ, MEMO_DB=str(tmp_path / "memo.db"), MEMO_TEST_MARKER=str(marker))
    proc = subprocess.run([sys.executable, "-c", DRIVER, *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert at_exit.exists(), "the atexit handlers did not run"
    return proc, marker.exists()


def test_a_hybrid_search_skips_the_teardown_and_keeps_its_output(tmp_path: Path) -> None:
    proc, tore_down = _run(tmp_path, "import", str(NOTES), "--json")
    assert proc.returncode == 0 and tore_down, proc.stderr[-2000:]        # a write ends normally

    proc, tore_down = _run(tmp_path, "search", "what to do when the database is locked", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)                                          # whole: flushed before the exit
    assert doc["results"] and not doc["trace"]["degraded"]["flag"]
    assert not tore_down

    proc, tore_down = _run(tmp_path, "search", "what to do when the database is locked")
    assert proc.returncode == 0 and proc.stdout.rstrip().splitlines()[-1].startswith("-- ")
    assert not tore_down

    proc, tore_down = _run(tmp_path, "search", "what to do when the database is locked", "--mode", "keyword",
                           "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]
    assert not tore_down

    proc, tore_down = _run(tmp_path, "list", "--json")
    assert proc.returncode == 0 and tore_down                              # not a search: the usual exit


def test_an_error_keeps_its_message_and_exit_code(tmp_path: Path) -> None:
    proc, tore_down = _run(tmp_path, "search", "anything", "--db", str(tmp_path / "missing" / "x.db"), "--json")
    assert proc.returncode == 6, (proc.returncode, proc.stderr[-2000:])
    assert json.loads(proc.stdout)["exit_code"] == 6
    assert not tore_down
    proc, _ = _run(tmp_path, "search", "anything", "--db", str(tmp_path / "missing" / "x.db"))
    assert proc.returncode == 6 and proc.stderr.startswith("error: no database at"), proc.stderr[-2000:]
