"""Child process of test_pg_faults.py (run as a script, not collected by pytest).

    python _pg_fault_worker.py URL NAME WORKDIR

Prints ``ready`` once connected, then writes through memo's library API until killed or
until WORKDIR/stop exists, cycling through add, vectors for that add, import, supersede
and forget (namespace ``pgfault``).  One line per operation goes to stdout, flushed, only
after the call returned (committed): the acknowledged writes the test counts afterwards.

    A <record id> <passages>           add_record
    V <record id> <passages>           write_vectors for every passage of that record
    I <file name> <record id> ...      import_path of a 6-line JSONL file in batches of 3
    S <old id> <new id> <passages>     supersede
    F <record id>                      forget
    E <error class> <operation>        a typed memo error (the operation is not acknowledged)

A ``MemoError`` is printed as an ``E`` line and the loop goes on with the same connection
(a server restart: the connection must recover by itself, memo.store.postgres.connection);
any other exception is a traceback on stderr and exit code 3: the test fails on it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
import uuid
from pathlib import Path

NAMESPACE = "pgfault"
MODEL = "fake-8"        # vectors written as the background embedder writes them, 8 dimensions
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit " * 30


class NoEmbed:
    """A background embedder that takes the ids and does nothing: the worker writes its
    own vectors (``V``), so no model is loaded."""

    model_id = None

    def submit(self, record_ids=(), fact_pks=()) -> bool:  # noqa: ANN001
        return True


def fake_vectors(n: int, seed: str):  # noqa: ANN201
    import numpy as np

    rng = np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16))
    v = rng.normal(size=(n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _body(name: str, i: int) -> str:
    marker = f"mk{name}n{i}q{uuid.uuid4().hex[:10]}"
    if i % 3 == 0:      # several passages
        return "\n\n".join(f"Paragraph {n} of {name} step {i} {marker}. {FILLER}" for n in range(4))
    return f"pgfault note {i} by {name} marker {marker}"


def main(url: str, name: str, workdir: Path) -> None:
    from memo.embed.vectors import write_vectors
    from memo.errors import MemoError
    from memo.ops import import_path
    from memo.ops.add import add_record
    from memo.ops.importer import ImportOptions
    from memo.ops.records import forget, supersede
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    conn = open_db(url)
    bg = NoEmbed()
    live: list[str] = []          # this worker's acknowledged live records (supersede / forget pick from them)
    stop = workdir / "stop"
    print("ready", flush=True)
    i = 0
    while not stop.exists():
        i += 1
        step = i % 5
        op = "ASIFV"[step]
        try:
            if step in (0, 1):
                rep = add_record(conn, RecordDraft(body=_body(name, i), namespace=NAMESPACE, tags=(name,)),
                                 background=bg)
                if rep.status != "added":
                    raise AssertionError(f"add reported {rep}")
                print(f"A {rep.record_id} {rep.passages}", flush=True)
                live.append(rep.record_id)
                if step == 1:
                    op = "V"
                    pks = [r[0] for r in conn.execute("SELECT pk FROM passages WHERE record_id = ? ORDER BY pk",
                                                      (rep.record_id,))]
                    write_vectors(conn, MODEL, pks, fake_vectors(len(pks), rep.record_id))
                    print(f"V {rep.record_id} {len(pks)}", flush=True)
            elif step == 2:
                f = workdir / f"{name}-{i}.jsonl"
                f.write_text("".join(json.dumps({"text": f"pgfault import {name} {i} line {k} {uuid.uuid4().hex}"})
                                     + "\n" for k in range(6)))
                rep = import_path(conn, f, ImportOptions(namespace=NAMESPACE, batch_size=3))
                if rep.added != 6 or rep.rejected:
                    raise AssertionError(f"import of 6 lines reported {rep}")
                print(f"I {f.name} {' '.join(rep.record_ids)}", flush=True)
                live.extend(rep.record_ids)
            elif step == 3 and live:
                old = live.pop(0)     # its state is unknown if this fails: never picked again
                sup = supersede(conn, old, _body(name, i), background=bg)
                print(f"S {sup.old_id} {sup.new_id} {sup.passages}", flush=True)
                live.append(sup.new_id)
            elif step == 4 and live:
                rid = live.pop(0)
                rep = forget(conn, [rid])
                if rep.forgotten != (rid,):
                    raise AssertionError(f"forget reported {rep}")
                print(f"F {rid}", flush=True)
        except MemoError as exc:
            print(f"E {type(exc).__name__} {op} {exc.one_line()[:300]!r}", flush=True)
            time.sleep(0.05)


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
    except Exception:   # noqa: BLE001 - an untyped error: the test fails on exit code 3
        traceback.print_exc()
        sys.exit(3)
