"""``memo import FOLDER --watch`` as a user runs it: a real process that keeps a folder
imported, prints one JSON document per import with --json, and stops cleanly on SIGTERM or
Ctrl-C (exit 0, said on stderr)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXE = Path(sys.executable).with_name("memo")
CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "memo"]


def _lines(proc: subprocess.Popen, n: int, timeout: float = 60.0) -> list[dict]:
    out: list[dict] = []
    end = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < end, "no import reported in time"
        line = proc.stdout.readline()
        if line:
            out.append(json.loads(line))
    return out


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_watch_imports_each_change_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "first.md").write_text("# First\n\nThe first note of the vault.\n")
    env = dict(os.environ, MEMO_DB=str(tmp_path / "kb.db"))
    proc = subprocess.Popen([*CMD, "import", str(vault), "--watch", "--interval", "0.2", "--no-embed", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = _lines(proc, 1)[0]
        assert (first["format"], first["added"]) == ("files", 1)
        (vault / "second.md").write_text("# Second\n\nWritten while memo watched.\n")
        second = _lines(proc, 1)[0]
        assert (second["added"], second["skipped"]) == (1, 0)      # the new file alone
        assert second["at"].endswith("Z")
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped watching" in err and "after 2 import(s)" in err
    found = subprocess.run([*CMD, "search", "written while watched", "--mode", "keyword", "--json"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(found.stdout)["results"][0]["section"] == "Second"


def test_watch_refuses_what_is_imported_once(tmp_path: Path) -> None:
    lines = tmp_path / "records.jsonl"
    lines.write_text('{"body": "a record"}\n')
    env = dict(os.environ, MEMO_DB=str(tmp_path / "kb.db"))
    for args, said in (([str(lines), "--watch"], "read as jsonl, which is imported once"),
                       ([str(tmp_path), "--watch", "--interval", "0"], "--interval must be 0.1 to 3600"),
                       ([str(tmp_path), "--watch", "--interval", "nan"], "--interval must be"),
                       ([str(tmp_path), "--interval", "5"], "--interval applies to --watch only")):
        out = subprocess.run([*CMD, "import", *args], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 2, args
        assert said in out.stderr and "watching" not in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "kb.db").exists()
