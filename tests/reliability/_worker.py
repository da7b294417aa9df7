"""Child process for the reliability tests (run as a script, not collected by pytest).

    python _worker.py coldopen DB GO_FILE
    python _worker.py writer   DB OUT SECONDS NAME
    python _worker.py importer DB OUT SECONDS NAME WORKDIR
    python _worker.py reader   DB OUT SECONDS NAME     (scoped searches: any leak is an error)
    python _worker.py outsider DB OUT SECONDS NAME     (fast writer in another namespace)
    python _worker.py killee   DB WORKDIR

Writers append one acknowledged record id per line to OUT only after the commit returned;
every exception is written to OUT.err.  The last line of OUT.stats is a JSON summary.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path


def coldopen(db: str, go: str) -> None:
    from memo.store.db import open_db
    from memo.store.migrations import LATEST, user_version
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    conn = open_db(db)
    assert user_version(conn) == LATEST
    conn.execute("SELECT count(*) FROM records").fetchone()


def _loop(db: str, out: str, seconds: float, name: str, step) -> None:
    from memo.store.db import open_db
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    errors = 0
    ops = 0
    conn = None
    stop = Path(out + ".stop")   # a test may end the loop early (or keep it going until it has what it needs)
    with open(out, "a") as ack, open(out + ".err", "a") as err:
        while time.monotonic() < deadline and not stop.exists():
            t0 = time.perf_counter()
            try:
                if conn is None or ops % 50 == 0:
                    if conn is not None:
                        conn.close()
                    conn = step.open(open_db, db)
                for line in step(conn, ops):
                    ack.write(line + "\n")
                ack.flush()
            except Exception:  # noqa: BLE001 - every error is a failure the test reports
                errors += 1
                err.write(traceback.format_exc() + "\n")
                err.flush()
                conn = None
            latencies.append(time.perf_counter() - t0)
            ops += 1
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0.0
    Path(out + ".stats").write_text(json.dumps({"name": name, "ops": ops, "errors": errors,
                                                "p99_ms": round(p99 * 1000, 1)}))


class Writer:
    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def open(open_db, db):  # noqa: ANN001
        return open_db(db)

    def __call__(self, conn, i: int) -> list[str]:  # noqa: ANN001
        from memo.ops import add_record
        from memo.stored import RecordDraft
        rep = add_record(conn, RecordDraft(body=f"conc zebra {self.name} {i} tok{uuid.uuid4().hex}",
                                           namespace="conc", tags=(self.name,)))
        return [rep.record_id]


class Outsider(Writer):
    """A fast writer in another namespace whose text matches the readers' query better
    than anything in theirs: the scope-leak probe of issue 9.  It writes canonical and
    keyword rows only (no embedding), so it commits many times per reader search."""

    def __call__(self, conn, i: int) -> list[str]:  # noqa: ANN001
        from memo.store.connect import write_tx
        from memo.store.records import insert_record
        from memo.stored import PassageDraft, RecordDraft
        text = f"zebra zebra password is hunter2 {i} {uuid.uuid4().hex}"
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=text, namespace="personal"), (PassageDraft(text=text),))
        return []


class Importer(Writer):
    def __init__(self, name: str, workdir: str) -> None:
        super().__init__(name)
        self.workdir = Path(workdir)

    def __call__(self, conn, i: int) -> list[str]:  # noqa: ANN001
        from memo.ops import import_path
        from memo.ops.importer import ImportOptions
        f = self.workdir / f"{self.name}-{i}.jsonl"
        f.write_text("".join(json.dumps({"text": f"imp {self.name} {i} {k} {uuid.uuid4().hex}"}) + "\n"
                             for k in range(20)))
        rep = import_path(conn, f, ImportOptions(namespace="conc", batch_size=7))
        assert rep.added == 20 and not rep.rejected, rep
        return list(rep.record_ids)


class Reader(Writer):
    @staticmethod
    def open(open_db, db):  # noqa: ANN001
        return open_db(db, write=False)

    def __call__(self, conn, i: int) -> list[str]:  # noqa: ANN001
        from memo.ops import ListFilter, list_records, stats
        from memo.retrieve import SearchRequest, search
        from memo.types import Scope
        conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'conc OR imp'").fetchone()
        resp = search(conn, SearchRequest("zebra password", scope=Scope(namespaces=("conc",)),
                                          mode="keyword", limit=20), "rrf")
        leaked = [r.passage_id for r in resp.results if r.namespace != "conc"]
        if leaked:
            raise AssertionError(f"scope leak: {leaked} outside namespace conc")
        list_records(conn, ListFilter(namespaces=("conc",), limit=20))
        if i % 10 == 0:
            stats(conn)
        return []


def killee(db: str, workdir: str) -> None:
    """Print "ready" once started, then import 10-record JSONL files in batches of 5 until
    killed; print each file's ids (one line, space-separated) only after the import
    returned."""
    from memo.ops import import_path
    from memo.ops.importer import ImportOptions
    from memo.store.db import open_db
    conn = open_db(db)
    print("ready", flush=True)     # started: the parent times its kill from here
    i = 0
    while True:
        f = Path(workdir) / f"k{os.getpid()}-{i}.jsonl"
        f.write_text("".join(json.dumps({"text": f"kill {f.name} {k} {uuid.uuid4().hex}"}) + "\n"
                             for k in range(10)))
        rep = import_path(conn, f, ImportOptions(namespace="kill", batch_size=5))
        print(" ".join(rep.record_ids), flush=True)
        i += 1


def main(argv: list[str]) -> None:
    role = argv[1]
    if role == "coldopen":
        coldopen(argv[2], argv[3])
        return
    if role == "killee":
        killee(argv[2], argv[3])
        return
    db, out, seconds, name = argv[2], argv[3], float(argv[4]), argv[5]
    step = {"writer": lambda: Writer(name), "reader": lambda: Reader(name),
            "outsider": lambda: Outsider(name),
            "importer": lambda: Importer(name, argv[6])}[role]()
    _loop(db, out, seconds, name, step)


if __name__ == "__main__":
    main(sys.argv)
