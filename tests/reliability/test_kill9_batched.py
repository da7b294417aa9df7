"""SIGKILL in the middle of a batched import (issue 16.4: canonical rows, keyword and
exact indexes and entity mentions written per batch with one statement per table).

A child imports one 1,200-line JSONL file in batches of 100 and is killed at a random
moment after it has started importing (it says so on stdout first, so a slow start on a
loaded machine never turns into a kill before the import).  After every kill: SQLite's
and FTS5's integrity checks pass, ``memo doctor`` finds nothing to repair, the stored
records are whole batches (a multiple of 100: every line is new, so batch k holds lines
100k+1 .. 100k+100), and every stored passage has its keyword row, its exact row and no
mention pointing elsewhere.  Re-running the import resumes (stored lines are skipped) and
the last run, not killed, completes with all 1,200 records.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memo.ops.doctor import doctor
from memo.store.connect import connect
from memo.store.db import open_db

LINES, BATCH = 1200, 100
CHILD = """
import sys
from pathlib import Path
from memo.ops.importer import ImportOptions, import_path
from memo.store.db import open_db
conn = open_db(sys.argv[1])
print("importing", flush=True)
rep = import_path(conn, Path(sys.argv[2]), ImportOptions(namespace="k", batch_size=int(sys.argv[3]),
                                                          workers=int(sys.argv[4])))
print("done", rep.added, rep.skipped, flush=True)
"""


def _write_input(path: Path) -> None:
    rng = random.Random(164)
    names = ["Alice Smith", "Acme Corp", "New York", "IL-6", "net/http", "Bob", "ERR_CONN_RESET", "p53"]
    with path.open("w") as out:
        for k in range(LINES):
            words = " ".join(rng.choice(["cells", "protein", "signal", "the", "of", "binding", "tumour"])
                             for _ in range(60))
            out.write(json.dumps({"id": f"l{k}", "text": f"{rng.choice(names)} and {rng.choice(names)}: {words}. "
                                                         f"Line {k}."}) + "\n")


def _check(db: Path) -> int:
    conn = connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
        conn.execute("INSERT INTO exact_fts(exact_fts) VALUES ('integrity-check')")
        n = conn.execute("SELECT count(*) FROM records WHERE namespace = 'k'").fetchone()[0]
        assert n % BATCH == 0, f"{n} records: a batch is half stored"
        stored = {int(r[0]) for r in conn.execute("SELECT CAST(substr(ext_id, 2) AS INTEGER) FROM records")}
        assert stored == set(range(n)), "the stored lines are not whole batches from the start"
        n_pass = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
        assert n_pass >= n
        assert conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0] == n_pass
        assert conn.execute("SELECT count(*) FROM passages_fts_docsize").fetchone()[0] == n_pass
        assert conn.execute("SELECT count(*) FROM mentions WHERE passage_pk NOT IN "
                            "(SELECT pk FROM passages)").fetchone()[0] == 0
        if n:
            assert conn.execute("SELECT count(DISTINCT passage_pk) FROM mentions").fetchone()[0] == n_pass
    finally:
        conn.close()
    report = doctor(db)
    assert report.exit_code == 0, report
    return n


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 1])
def test_kill9_in_a_batched_import_leaves_whole_batches(tmp_path, workers):
    """``workers`` 1: a worker process prepares the records (memo.ops.prepare_pool); killed
    with the importing process's, it ends too (else it would hold the pipes ``communicate``
    reads, and this test would time out)."""
    db, src = tmp_path / "kill.db", tmp_path / "in.jsonl"
    _write_input(src)
    open_db(db).close()
    rng = random.Random(16)
    counts = []
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(src), str(BATCH), str(workers)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "importing"
        time.sleep(rng.uniform(0.05, 1.5))
        child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=60)
        assert child.returncode in (-signal.SIGKILL, 0), err[-1500:]
        counts.append(_check(db))
    assert counts == sorted(counts), counts              # a re-run never loses a committed batch
    done = subprocess.run([sys.executable, "-c", CHILD, str(db), str(src), str(BATCH), str(workers)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.split()[-3:] == ["done", str(LINES - counts[-1]), str(counts[-1])]
    assert _check(db) == LINES
    print({"records_after_each_kill": counts})
