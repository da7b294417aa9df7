"""Issue 33.5: a backup or restore killed with SIGKILL leaves its private copy
(``.X.db.backup-PID-*``, ``.X.db.restore-PID-*``) behind.  The next backup / restore
removes those of dead processes and never one of a live process; ``memo doctor`` lists
what remains beside the database with the command that removes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from memo import ops
from memo.cli import app
from memo.store.db import open_db
from memo.stored import RecordDraft

runner = CliRunner()

# A real backup / restore in a child process, killed with SIGKILL right after its private
# copy is written (at the verification step): what a kill -9 mid-run leaves.
KILLED = """
import importlib, os, signal
m = importlib.import_module("memo.ops.{module}")   # memo.ops.restore the attribute is the function
def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)
m.verify_copy = die
{call}
"""


def _killed(tmp_path: Path, module: str, call: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED.format(module=module, call=call)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, (proc.returncode, proc.stderr[-2000:])


def _hidden(folder: Path, tag: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and f".{tag}-" in p.name)


def _cli(*args: str) -> tuple[int, dict]:
    res = runner.invoke(app, [*args, "--json"])
    return res.exit_code, json.loads(res.stdout)


def test_killed_copies_are_cleaned_by_the_next_run_and_listed_by_doctor(tmp_path: Path, monkeypatch) -> None:
    db, backups = tmp_path / "m.db", tmp_path / "backups"
    backups.mkdir()
    monkeypatch.setenv("MEMO_DB", str(db))
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    conn = open_db(db)
    for i in range(5):
        ops.add_record(conn, RecordDraft(body=f"note {i} about the staging deploy key"))
    conn.close()
    assert _cli("backup", str(backups / "good.db"))[0] == 0

    _killed(tmp_path, "maintenance", f"from memo.ops import backup; from memo.store.db import open_db; "
                                     f"backup(open_db({str(db)!r}), {str(backups / 'b1.db')!r})")
    _killed(tmp_path, "restore", f"from memo.ops.restore import restore; "
                                 f"restore({str(backups / 'good.db')!r}, {str(db)!r}, confirm=True)")
    left_backup, left_restore = _hidden(backups, "backup"), _hidden(tmp_path, "restore")
    assert left_backup and left_restore, (os.listdir(backups), os.listdir(tmp_path))
    assert not (backups / "b1.db").exists()

    # A copy of a process that is still running: an operation in progress, never touched.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        live = [backups / f".b2.db.backup-{sleeper.pid}-0123abcd", tmp_path / f".m.db.restore-{sleeper.pid}-89abcdef"]
        for p in live:
            p.write_bytes(b"in progress")

        code, report = _cli("doctor")
        assert code == 0, report
        (note,) = [f for f in report["findings"] if f["check"] == "leftovers"]
        assert note["severity"] == "notice"
        assert all(name in note["problem"] for name in left_restore if not name.endswith(("-wal", "-shm")))
        assert note["action"].startswith("rm -f -- ") and str(live[1]) not in note["action"]
        assert all(str(tmp_path / name) in note["action"] for name in left_restore)

        assert _cli("backup", str(backups / "b3.db"))[0] == 0
        assert _hidden(backups, "backup") == [live[0].name]
        assert _cli("restore", str(backups / "good.db"), "--yes")[0] == 0
        assert _hidden(tmp_path, "restore") == [live[1].name]
        code, report = _cli("doctor")
        assert code == 0 and not [f for f in report["findings"] if f["check"] == "leftovers"], report
        assert all(p.read_bytes() == b"in progress" for p in live)
    finally:
        sleeper.kill()
        sleeper.wait()
