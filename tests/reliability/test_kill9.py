"""R3 (reduced): SIGKILL a process in the middle of an import, again and again.

After every kill the database passes integrity_check and the FTS integrity check, every
id the child acknowledged (printed after its import returned) is stored, and no batch is
half visible: each 10-record file committed in batches of 5 has 0, 5 or 10 records.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memo.store.connect import connect
from memo.store.db import open_db

WORKER = Path(__file__).with_name("_worker.py")
ITERATIONS = int(os.environ.get("MEMO_KILL_ITERATIONS", "12"))


@pytest.mark.slow
def test_kill9_during_import(tmp_path):
    db = tmp_path / "kill.db"
    open_db(db).close()
    rng = random.Random(1234)
    acked: set[str] = set()
    for it in range(ITERATIONS):
        work = tmp_path / f"w{it}"
        work.mkdir()
        child = subprocess.Popen([sys.executable, str(WORKER), "killee", str(db), str(work)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait until it has started (imports take seconds on a loaded machine), then kill
        # it at a random moment of the import loop.
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.05 + rng.random())
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL, err[-1500:]
        acked |= {x for line in out.splitlines() for x in line.split()}

        conn = connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
        stored = {r[0] for r in conn.execute("SELECT id FROM records WHERE namespace = 'kill'")}
        assert acked <= stored, f"iteration {it}: {len(acked - stored)} acknowledged ids lost"
        per_file = Counter(r[0].split(":")[0] for r in conn.execute(
            "SELECT import_path FROM records WHERE namespace = 'kill'"))
        assert set(per_file.values()) <= {5, 10}, per_file
        n_pass = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0] == n_pass
        conn.close()
    assert len(acked) > 0
    print({"iterations": ITERATIONS, "acked": len(acked), "files": dict(Counter(per_file.values()))})
