"""Child process for tests/reliability/test_fact_evidence_lock.py (run as a script).

    python _fact_lock_worker.py facts  DB OUT SECONDS  fact adds with the largest evidence lists
    python _fact_lock_worker.py adder  DB OUT STOP     `memo add`s until STOP exists

``adder`` records, for every add, how long it waited for its write transaction (the
writers' queue and ``BEGIN IMMEDIATE``): the delay another writer caused it.  It wraps the
``write_tx`` that ``memo.ops.add`` uses with a stopwatch and changes nothing else.  OUT
gets one JSON document at the end.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path


def facts(db: str, out: str, seconds: float) -> None:
    import memo.ops.facts as facts_module
    from memo.errors import ValidationError
    from memo.ops.facts import add_fact
    from memo.store.db import open_db
    from memo.stored import FactDraft
    from memo.text.limits import MAX_EVIDENCE_IDS, MAX_EVIDENCE_PASSAGES

    conn = open_db(db)
    rids = [r[0] for r in conn.execute("SELECT id FROM records WHERE namespace = 'big' ORDER BY id")]
    per_record = conn.execute("SELECT count(*) FROM passages WHERE record_id = ?", (rids[0],)).fetchone()[0]
    # The largest list that is accepted: whole records up to the passage cap, then ext_ids
    # of their passages (the lookups that were full scans), MAX_EVIDENCE_IDS references in all.
    whole = rids[:MAX_EVIDENCE_PASSAGES // per_record]
    ext = [r[0] for r in conn.execute("SELECT ext_id FROM passages WHERE record_id IN "
                                      f"({','.join('?' * len(whole))}) ORDER BY pk", whole)]
    valid = [*whole, *ext[:MAX_EVIDENCE_IDS - len(whole)]]
    bogus = [f"no-such-ext-{i}" for i in range(MAX_EVIDENCE_IDS)]
    added = refused = 0
    timings: list[float] = []
    holds: list[float] = []
    real = facts_module.write_tx

    @contextmanager
    def timed(conn):  # noqa: ANN001, ANN202 - how long the fact add holds the lock
        with real(conn) as c:
            t0 = time.perf_counter()
            try:
                yield c
            finally:
                holds.append(time.perf_counter() - t0)

    facts_module.write_tx = timed  # type: ignore[assignment]
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        i += 1
        t0 = time.perf_counter()
        rep = add_fact(conn, FactDraft(text=f"Ada Lovelace reviewed release {i} {uuid.uuid4().hex}",
                                       evidence=tuple(valid), namespace="big"), embed=False)
        timings.append(time.perf_counter() - t0)
        added += rep.status == "added"
        try:
            add_fact(conn, FactDraft(text=f"bogus {i}", evidence=tuple(bogus), namespace="big"), embed=False)
        except ValidationError:
            refused += 1
    Path(out).write_text(json.dumps({"added": added, "refused": refused, "evidence": len(valid),
                                     "max_s": max(timings), "max_hold_s": max(holds)}))


def adder(db: str, out: str, stop: str) -> None:
    import memo.ops.add as add_module
    from memo.ops import add_record
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    real = add_module.write_tx
    waits: list[float] = []

    @contextmanager
    def timed(conn):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        with real(conn) as c:
            waits.append(time.perf_counter() - t0)
            yield c

    add_module.write_tx = timed  # type: ignore[assignment]
    conn = open_db(db)
    add_record(conn, RecordDraft(body="the first add loads the model", namespace="small"))
    waits.clear()
    print("ready", flush=True)
    while not Path(stop).exists():
        add_record(conn, RecordDraft(body=f"small note {uuid.uuid4().hex}", namespace="small"))
        time.sleep(0.002)
    Path(out).write_text(json.dumps({"adds": len(waits), "waits": waits}))


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    if role == "facts":
        facts(args[0], args[1], float(args[2]))
    elif role == "adder":
        adder(*args)
    else:
        raise SystemExit(f"unknown role {role}")
