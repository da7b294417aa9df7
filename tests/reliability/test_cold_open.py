"""R2: 16 processes open a fresh database at the same instant; all succeed, one migration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memo.store.connect import connect
from memo.store.migrations import LATEST, user_version

WORKER = Path(__file__).with_name("_worker.py")


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_sixteen_processes_cold_open(tmp_path, trial):
    db, go = tmp_path / "cold.db", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(WORKER), "coldopen", str(db), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(16)]
    for p in procs:  # every child imported memo and is spinning on the go file
        assert p.stdout.readline().strip() == "ready"
    go.touch()
    failures = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        if p.returncode != 0:
            failures.append(err.strip().splitlines()[-1:])
    assert failures == []
    conn = connect(db)
    assert user_version(conn) == LATEST
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name = 'records'")]
    assert names == ["records"]
