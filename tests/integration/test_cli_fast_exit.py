"""A search that loads the model ends its process without the interpreter's teardown once
its output is flushed (memo.cli.common.skip_teardown; 45-70 ms of a cold hybrid search):
the output and the exit code are whole, and a keyword search still ends the usual way.

The driver registers an atexit handler that writes a marker file: it runs at a normal
exit and not after ``os._exit``."""

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
atexit.register(lambda: open(os.environ["MEMO_TEST_MARKER"], "w").close())
sys.argv = ["memo", *sys.argv[1:]]
from memo.cli import main
main()
"""


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    marker = tmp_path / "tore-down"
    marker.unlink(missing_ok=True)
    env = dict(os.environ, MEMO_DB=str(tmp_path / "memo.db"), MEMO_TEST_MARKER=str(marker))
    proc = subprocess.run([sys.executable, "-c", DRIVER, *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
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
    assert tore_down                                                       # nothing loaded: the usual exit


def test_an_error_keeps_its_message_and_exit_code(tmp_path: Path) -> None:
    proc, tore_down = _run(tmp_path, "search", "anything", "--db", str(tmp_path / "missing" / "x.db"), "--json")
    assert proc.returncode == 6, (proc.returncode, proc.stderr[-2000:])
    assert json.loads(proc.stdout)["exit_code"] == 6
    assert not tore_down
    proc, _ = _run(tmp_path, "search", "anything", "--db", str(tmp_path / "missing" / "x.db"))
    assert proc.returncode == 6 and proc.stderr.startswith("error: no database at"), proc.stderr[-2000:]
