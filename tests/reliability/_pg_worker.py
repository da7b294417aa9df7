"""Child process of test_pg_concurrency.py (run as a script, not collected by pytest).

    python _pg_worker.py writer URL OUT SECONDS NAME WORKDIR
    python _pg_worker.py reader URL OUT SECONDS NAME WORKDIR

Both touch OUT.ready once connected and start their SECONDS only when WORKDIR/go exists
(so every process runs in the same window).

Writers add records to namespace ``pgconc`` through memo's library API (``add_record``;
every 8th step a 6-line JSONL ``import_path`` in batches of 4, i.e. 2 transactions), each
record's body holding a marker word no other record has; some bodies are long enough to
be split into several passages.  Only after the call returned (committed) does a writer
append one JSON line per record to OUT: ``{"id", "m" (marker), "p" (passages)}``.
Nothing is embedded: ``add_record`` gets a background queue that takes the ids and does
nothing, and ``import_path`` never embeds (its caller would).

Readers follow every writer's OUT (WORKDIR/w*.out).  Each step reads the lines acknowledged
so far, then searches (``memo.retrieve.pipeline.search``, modes keyword and exact) for the
marker of the newest acknowledged record, or a random older one: the record was committed
before the search started, so the search must find it, and nothing else.  Every 4th step
is a broad scoped search (``zebra``), every 10th reads records, passages and exact_fts
in separate statements of one read transaction, which must agree (one snapshot).  The
record ids of every result go to OUT.seen (the test checks they were all committed).

``StoreBusy`` is retried (and counted); any other exception, or a failed check, is
written to OUT.err.  OUT.stats holds a JSON summary.
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
import uuid
from pathlib import Path

NAMESPACE = "pgconc"
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit " * 30


class NoEmbed:
    """A background embedder that takes the ids and does nothing: writers never embed."""

    model_id = None

    def submit(self, record_ids=(), fact_pks=()) -> bool:  # noqa: ANN001
        return True


def _marker(name: str, i: int, k: int = 0) -> str:
    # Letters and digits only: one word to the keyword parser and one exact-arm token.
    return f"mk{name}n{i}k{k}q{uuid.uuid4().hex[:10]}"


def _body(name: str, i: int, marker: str) -> str:
    if i % 5 == 0:
        # Several passages; the marker sits in the third paragraph only.
        paras = [f"Paragraph {n} of zebra notes by {name}. {FILLER}" for n in range(5)]
        paras[2] = f"Paragraph 2 of zebra notes by {name} holds {marker}. {FILLER}"
        return "\n\n".join(paras)
    return f"zebra pgconc note {i} by {name} marker {marker}"


def _wait_go(out: str, workdir: Path) -> None:
    Path(out + ".ready").touch()
    go = workdir / "go"
    limit = time.monotonic() + 600
    while not go.exists():
        if time.monotonic() > limit:
            raise SystemExit("no go file")
        time.sleep(0.01)


def _retry(stats: dict, fn, *args, **kwargs):  # noqa: ANN001
    """fn(*args, **kwargs) until it does not raise StoreBusy (the only error a caller may retry)."""
    from memo.errors import StoreBusy

    while True:
        try:
            return fn(*args, **kwargs)
        except StoreBusy:
            stats["busy"] += 1
            time.sleep(0.05)


def writer(url: str, out: str, seconds: float, name: str, workdir: Path) -> None:
    from memo.errors import StoreBusy
    from memo.ops import import_path
    from memo.ops.add import add_record
    from memo.ops.importer import ImportOptions
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    stats = {"name": name, "role": "writer", "ops": 0, "adds": 0, "imports": 0, "records": 0,
             "passages": 0, "txs": 0, "busy": 0, "errors": 0}
    conn = open_db(url)
    _wait_go(out, workdir)
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    bg = NoEmbed()
    i = 0
    with open(out, "a") as ack, open(out + ".err", "a") as err:
        while time.monotonic() < deadline:
            i += 1
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = open_db(url)
                lines: list[dict] = []
                if i % 8 == 0:
                    texts = []
                    for k in range(6):
                        m = _marker(name, i, k)
                        texts.append((m, f"zebra pgconc import {name} {i} line {k} marker {m}"))
                    f = workdir / f"{name}-{i}.jsonl"
                    f.write_text("".join(json.dumps({"text": t}) + "\n" for _, t in texts))
                    try:
                        rep = import_path(conn, f, ImportOptions(namespace=NAMESPACE, batch_size=4))
                    except StoreBusy:
                        # Part of it may have committed: import it again (what is stored is
                        # skipped) and read every line's record id back.
                        stats["busy"] += 1
                        _retry(stats, import_path, conn, f, ImportOptions(namespace=NAMESPACE, batch_size=4))
                        stats["txs"] = None   # no longer countable
                        for m, t in texts:
                            rid = conn.execute("SELECT id FROM records WHERE namespace = ? AND body = ?",
                                               (NAMESPACE, t)).fetchone()[0]
                            lines.append({"id": rid, "m": m, "p": 1})
                    else:
                        if rep.added != 6 or rep.rejected or len(rep.record_ids) != 6 or rep.passages != 6:
                            raise AssertionError(f"import of 6 lines reported {rep}")
                        lines = [{"id": rid, "m": m, "p": 1} for rid, (m, _) in zip(rep.record_ids, texts, strict=True)]
                        if stats["txs"] is not None:
                            stats["txs"] += rep.batches
                    stats["imports"] += 1
                else:
                    m = _marker(name, i)
                    draft = RecordDraft(body=_body(name, i, m), namespace=NAMESPACE, tags=(name,))
                    rep = _retry(stats, add_record, conn, draft, background=bg)
                    passages = rep.passages
                    if rep.status == "skipped":
                        # Only after a StoreBusy retry: the first try had committed after all.
                        passages = conn.execute("SELECT count(*) FROM passages WHERE record_id = ?",
                                                (rep.record_id,)).fetchone()[0]
                        stats["txs"] = None
                    elif rep.status != "added":
                        raise AssertionError(f"add reported {rep}")
                    if stats["txs"] is not None:
                        stats["txs"] += 1
                    lines = [{"id": rep.record_id, "m": m, "p": passages}]
                    stats["adds"] += 1
                for line in lines:
                    ack.write(json.dumps(line) + "\n")
                    stats["records"] += 1
                    stats["passages"] += line["p"]
                ack.flush()
            except Exception:  # noqa: BLE001 - every error is a failure the test reports
                stats["errors"] += 1
                err.write(traceback.format_exc() + "\n")
                err.flush()
                if conn is not None:
                    conn.close()
                conn = None
            latencies.append(time.perf_counter() - t0)
            stats["ops"] += 1
    latencies.sort()
    stats["p99_ms"] = round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 1) if latencies else 0.0
    Path(out + ".stats").write_text(json.dumps(stats))


class Acks:
    """Every writer's acknowledged records, read incrementally (complete lines only)."""

    def __init__(self, workdir: Path) -> None:
        self.files = sorted(workdir.glob("w*.out"))
        self.offsets = {f: 0 for f in self.files}
        self.records: list[dict] = []

    def refresh(self) -> None:
        for f in self.files:
            with open(f, "rb") as fh:
                fh.seek(self.offsets[f])
                data = fh.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[f] += end + 1
            self.records += [json.loads(x) for x in data[:end].split(b"\n") if x]


def reader(url: str, out: str, seconds: float, name: str, workdir: Path) -> None:
    from memo.retrieve.pipeline import search
    from memo.retrieve.types import SearchRequest
    from memo.store.connect import read_tx
    from memo.store.db import open_db
    from memo.types import Scope

    stats = {"name": name, "role": "reader", "ops": 0, "searches": 0, "marker_checks": 0,
             "broad": 0, "snapshot_checks": 0, "busy": 0, "errors": 0, "max_acked_seen": 0}
    rng = random.Random(name)
    conn = open_db(url, write=False)
    acks = Acks(workdir)
    seen: set[str] = set()
    scope = Scope(namespaces=(NAMESPACE,))
    _wait_go(out, workdir)
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    i = 0

    def check_results(resp, query: str) -> None:  # noqa: ANN001
        pids = [r.passage_id for r in resp.results]
        if len(pids) != len(set(pids)) or len({r.pk for r in resp.results}) != len(pids):
            raise AssertionError(f"{query!r}: a passage twice in one response: {pids}")
        for r in resp.results:
            if r.namespace != NAMESPACE or not r.passage_id.startswith(r.record_id + ":"):
                raise AssertionError(f"{query!r}: inconsistent result {r}")
            seen.add(r.record_id)

    with open(out + ".err", "a") as err:
        while time.monotonic() < deadline:
            i += 1
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = open_db(url, write=False)
                if i % 10 == 0:
                    def snapshot(conn) -> tuple:  # noqa: ANN001
                        # Separate statements, a pause between them: one read transaction
                        # must still see one state (memo's read_tx: REPEATABLE READ).
                        with read_tx(conn):
                            n_rec = conn.execute("SELECT count(*) FROM records").fetchone()[0]
                            time.sleep(0.02)
                            n_pass = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
                            time.sleep(0.02)
                            n_exact = conn.execute("SELECT count(*) FROM exact_fts").fetchone()[0]
                            n_with = conn.execute("SELECT count(DISTINCT record_id) FROM passages").fetchone()[0]
                            no_tsv = conn.execute("SELECT count(*) FROM passages WHERE tsv IS NULL").fetchone()[0]
                            return n_rec, n_pass, n_exact, n_with, no_tsv
                    n_rec, n_pass, n_exact, n_with, no_tsv = _retry(stats, snapshot, conn)
                    if n_pass != n_exact or n_with != n_rec or no_tsv:
                        raise AssertionError(f"one read transaction saw {n_rec} records, {n_with} records with "
                                             f"passages, {n_pass} passages, {n_exact} exact_fts rows, "
                                             f"{no_tsv} passages without tsv")
                    stats["snapshot_checks"] += 1
                elif i % 4 == 0:
                    req = SearchRequest("zebra", scope=scope, mode="keyword" if i % 8 else "exact", limit=20)
                    resp = _retry(stats, search, conn, req)
                    check_results(resp, "zebra")
                    stats["searches"] += 1
                    stats["broad"] += 1
                else:
                    acks.refresh()   # acknowledged before this search starts
                    if acks.records:
                        newest = len(acks.records) - 1
                        k = newest if i % 2 else rng.randrange(len(acks.records))
                        rec = acks.records[k]
                        mode = "keyword" if (i // 2) % 2 else "exact"
                        req = SearchRequest(rec["m"], scope=scope, mode=mode, limit=20)
                        resp = _retry(stats, search, conn, req)
                        check_results(resp, rec["m"])
                        got = {r.record_id for r in resp.results}
                        if got != {rec["id"]}:
                            raise AssertionError(
                                f"{mode} search for {rec['m']} (record {rec['id']}, acknowledged before the "
                                f"search began) returned records {sorted(got)}; cause {resp.cause}: {resp.reason}")
                        wrong = [r.passage_id for r in resp.results
                                 if int(r.passage_id.rsplit(":", 1)[1]) >= rec["p"]]
                        if wrong:
                            raise AssertionError(f"passages beyond the record's {rec['p']}: {wrong}")
                        stats["searches"] += 1
                        stats["marker_checks"] += 1
                        stats["max_acked_seen"] = len(acks.records)
            except Exception:  # noqa: BLE001 - every error is a failure the test reports
                stats["errors"] += 1
                err.write(traceback.format_exc() + "\n")
                err.flush()
                if conn is not None:
                    conn.close()
                conn = None
            latencies.append(time.perf_counter() - t0)
            stats["ops"] += 1
    latencies.sort()
    stats["p99_ms"] = round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 1) if latencies else 0.0
    Path(out + ".seen").write_text("".join(x + "\n" for x in sorted(seen)))
    Path(out + ".stats").write_text(json.dumps(stats))


def main(argv: list[str]) -> None:
    role, url, out, seconds, name, workdir = argv[1], argv[2], argv[3], float(argv[4]), argv[5], Path(argv[6])
    try:
        {"writer": writer, "reader": reader}[role](url, out, seconds, name, workdir)
    except Exception:
        with open(out + ".err", "a") as err:
            err.write(traceback.format_exc() + "\n")
        raise


if __name__ == "__main__":
    main(sys.argv)
