"""Write latency of ``memo add`` under concurrent writer processes: where the time goes.

    .venv/bin/python bench/write_latency.py [--writers 1,2,4] [--seconds 15] [--embed/--no-embed]
                                            [--sync FULL|NORMAL] [--json]

Each writer process runs ``memo.ops.add_record``'s two steps in a loop on one shared, fresh
database and times them separately:

* ``commit``: ``write_tx`` (BEGIN IMMEDIATE, waiting for the lock) + insert + FTS indexing
  + COMMIT (an fsync of the WAL under synchronous=FULL);
* ``embed``: ``after_commit`` (ONNX embedding of the new passage + a second small write
  transaction for its vector); skipped with ``--no-embed``.

Prints p50 / p95 / p99 / max in ms per writer count, over every op of every writer.
docs/results-log.md "Writes under contention" logs the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import tempfile
import time
import uuid
from pathlib import Path


def _writer(db: str, seconds: float, embed: bool, name: str, out: str) -> None:
    from memo.ops.add import prepare, store_draft
    from memo.ops.after_commit import after_commit
    from memo.store.connect import write_tx
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    conn = open_db(db)
    if embed:   # one add before the clock starts: loads the model (a server keeps it loaded)
        warm = RecordDraft(body=f"warm-up note {name} {uuid.uuid4().hex}", namespace="bench")
        with write_tx(conn):
            rid = store_draft(conn, warm, prepare(warm), replace_previous=False).record_id
        after_commit(conn, [rid])
    commit_ms, embed_ms = [], []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        draft = RecordDraft(body=f"bench note {name} {i}: the deploy of {uuid.uuid4().hex} went out on Tuesday",
                            namespace="bench")
        passages = prepare(draft)
        t0 = time.perf_counter()
        with write_tx(conn):
            rep = store_draft(conn, draft, passages, replace_previous=False)
        t1 = time.perf_counter()
        if embed:
            after_commit(conn, [rep.record_id])
        t2 = time.perf_counter()
        commit_ms.append((t1 - t0) * 1000)
        embed_ms.append((t2 - t1) * 1000)
        i += 1
    Path(out).write_text(json.dumps({"commit": commit_ms, "embed": embed_ms}))


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * (len(xs) - 1)))], 1) if xs else 0.0


def run(writers: int, seconds: float, embed: bool) -> dict[str, object]:
    from memo.store.db import open_db

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        open_db(db).close()
        ctx = mp.get_context("spawn")
        outs = [os.path.join(tmp, f"w{i}.json") for i in range(writers)]
        procs = [ctx.Process(target=_writer, args=(db, seconds, embed, f"w{i}", outs[i])) for i in range(writers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        commit: list[float] = []
        emb: list[float] = []
        for o in outs:
            d = json.loads(Path(o).read_text())
            commit += d["commit"]
            emb += d["embed"]
    total = [c + e for c, e in zip(commit, emb, strict=True)]
    row: dict[str, object] = {"writers": writers, "ops": len(commit), "ops_per_s": round(len(commit) / seconds, 1)}
    for name, xs in (("commit", commit), ("embed", emb), ("total", total)):
        if name == "embed" and not embed:
            continue
        row[name] = {"p50": _pct(xs, 0.5), "p95": _pct(xs, 0.95), "p99": _pct(xs, 0.99), "max": _pct(xs, 1.0)}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", default="1,2,4")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--embed", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--sync", choices=["FULL", "NORMAL"], default=None, help="MEMO_SYNCHRONOUS for the run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.sync:
        os.environ["MEMO_SYNCHRONOUS"] = args.sync
    rows = [run(int(w), args.seconds, args.embed) for w in args.writers.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    sync = os.environ.get("MEMO_SYNCHRONOUS", "FULL")
    print(f"synchronous={sync}, embed={'on' if args.embed else 'off'}, {args.seconds:g} s per row (ms)")
    for r in rows:
        parts = [f"{r['writers']} writer(s): {r['ops']} ops ({r['ops_per_s']}/s)"]
        for name in ("commit", "embed", "total"):
            if name in r:
                s = r[name]
                parts.append(f"{name} p50 {s['p50']} p95 {s['p95']} p99 {s['p99']} max {s['max']}")
        print("  " + "; ".join(parts))


if __name__ == "__main__":
    main()
