"""R1 (reduced): 4 writer processes, 1 writer in another namespace and 4 reader processes on
one database for 30 s.

Acknowledged ids (written by a child only after its commit returned) must equal the ids
stored: nothing lost, nothing duplicated; no error (lock or other) may reach a caller.
Readers run scoped searches (``namespace conc``) while the outsider writes better matches
into ``personal``: any out-of-scope result is an error (issue 9's scope leak).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memo.store.connect import connect
from memo.store.db import open_db

WORKER = Path(__file__).with_name("_worker.py")
SECONDS = float(os.environ.get("MEMO_SOAK_SECONDS", "30"))


@pytest.mark.slow
def test_writers_and_readers_lose_nothing(tmp_path):
    db = tmp_path / "soak.db"
    open_db(db).close()
    work = tmp_path / "work"
    work.mkdir()
    roles = [("writer", "w1"), ("writer", "w2"), ("writer", "w3"), ("importer", "w4"),
             ("outsider", "o1"),
             ("reader", "r1"), ("reader", "r2"), ("reader", "r3"), ("reader", "r4")]
    procs = []
    for role, name in roles:
        out = tmp_path / f"{name}.out"
        out.touch()
        procs.append((name, out, subprocess.Popen(
            [sys.executable, str(WORKER), role, str(db), str(out), str(SECONDS), name, str(work)],
            stderr=subprocess.PIPE, text=True)))
    for name, _, p in procs:
        _, err = p.communicate(timeout=SECONDS + 180)
        assert p.returncode == 0, (name, err[-2000:])

    acked: list[str] = []
    stats = []
    errors = {}
    for name, out, _ in procs:
        acked += [x for x in out.read_text().split() if x]
        stats.append(json.loads(Path(f"{out}.stats").read_text()))
        if Path(f"{out}.err").read_text().strip():
            errors[name] = Path(f"{out}.err").read_text()[-1500:]
    conn = connect(db)
    stored = [r[0] for r in conn.execute("SELECT id FROM records WHERE namespace = 'conc'")]
    summary = {"seconds": SECONDS, "acked": len(acked), "stored": len(stored), "workers": stats}
    print(json.dumps(summary))
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert errors == {}
    assert len(acked) == len(set(acked)), "an id was acknowledged twice"
    assert set(acked) == set(stored), (len(set(acked) - set(stored)), len(set(stored) - set(acked)))
    assert all(s["ops"] > 0 for s in stats)
    searches = sum(s["ops"] for s in stats if s["name"].startswith("r"))
    outsider = conn.execute("SELECT count(*) FROM records WHERE namespace = 'personal'").fetchone()[0]
    assert searches > 100 and outsider > 100, (searches, outsider)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
    n_pass = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0] == n_pass
