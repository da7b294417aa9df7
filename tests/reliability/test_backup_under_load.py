"""R16 (reduced): `memo backup` while another process keeps writing.  Every copy passes
integrity_check, its row counts equal the snapshot it copied, and it opens and searches."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memo import ops
from memo.store.connect import connect
from memo.store.db import open_db

WORKER = Path(__file__).with_name("_worker.py")


@pytest.mark.slow
def test_backups_during_writes_are_consistent(tmp_path):
    db = tmp_path / "live.db"
    open_db(db).close()
    out = tmp_path / "w.out"
    writer = subprocess.Popen([sys.executable, str(WORKER), "writer", str(db), str(out), "6", "bw"],
                              stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    conn = open_db(db, write=False)
    reports = []
    for i in range(5):
        reports.append(ops.backup(conn, tmp_path / f"copy{i}.db"))
        time.sleep(0.5)
    _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err[-1500:]
    assert all(r.integrity == "ok" for r in reports)
    assert reports[-1].counts["records"] > reports[0].counts["records"] > 0  # writes went on meanwhile
    copy = connect(tmp_path / "copy4.db")
    assert copy.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'conc'").fetchone()[0] \
        == reports[-1].counts["passages"]
