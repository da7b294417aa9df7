"""Write and search latency under a mixed load: W writer and R reader processes on one
database, each holding its connection open like a server would (issue 9, point 9).

    .venv/bin/python bench/soak.py [--writers 4] [--readers 8] [--seconds 60] [--seed-docs 2000]
                                   [--write-rate 3.5] [--sync] [--seed-cache PATH] [--json]

* writers model a server (``memo-mcp``, ``memo web``): ``memo.ops.add_record`` with the
  process's ``memo.embed.background.BackgroundEmbedder`` (validate, split, one write
  transaction; the new passage is handed to the embedder thread of the same process).
  ``ack`` is what the caller waits for (the whole ``add_record`` call: until the add is
  durable and answered); ``commit`` the write transaction inside it (lock wait + insert +
  FTS + COMMIT), ``lock`` its first part (the writers' queue + BEGIN IMMEDIATE), and
  ``vector_tx`` the embedder's vector write transactions; ``lag`` the time from the hand-off to the vector's commit, i.e. until a
  semantic search can find the note (a search picks new vectors up on its next call).
  With ``--sync`` writers embed before returning (``memo add``, or ``wait=true`` over MCP),
  so ``ack`` includes the embedding and there is no lag.
* ``--write-rate R``: each writer starts an add every 1/R s (open loop, as independent
  clients would); an add that starts late because the previous one ran long is timed from
  when it was due, so queueing in the writer counts (no coordinated omission).  0 = closed
  loop: the next add starts when the previous one returns.
* readers: ``memo.retrieve.search`` in hybrid mode (keyword + semantic, real query
  embedding) with a namespace scope, over a database seeded with ``--seed-docs`` notes
  made from SciFact abstracts (datasets/sample), queries from SciFact claims; closed loop.

Every op of every process is timed; the script prints p50 / p95 / p99 / max (ms) of each
kind, throughput, and errors (any exception counts).  Reader results outside the scope
are counted as leaks (must be 0).  After the window writers wait (up to 120 s) for their
embedder to finish, so the lag of every measured add is counted; ``unembedded`` is the
adds whose vector never landed.  docs/reliability.md quotes the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import random
import shutil
import tempfile
import time
import traceback
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "scifact" / "corpus.jsonl"
QUERIES = ROOT / "datasets" / "scifact" / "queries.jsonl"


def _texts() -> list[str]:
    opener = gzip.open if SAMPLE.suffix == ".gz" else open
    with opener(SAMPLE, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def _queries() -> list[str]:
    with open(QUERIES, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def _timed_write_tx(module, sink: list[float], wait_sink: list[float] | None = None):  # noqa: ANN001, ANN202
    """Wrap ``module.write_tx`` so each transaction's time (lock wait + writes + COMMIT)
    lands in ``sink``, and the time until its body starts (the writers' queue + BEGIN
    IMMEDIATE) in ``wait_sink``."""
    from contextlib import contextmanager

    real = module.write_tx

    @contextmanager
    def timed(conn):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        with real(conn) as c:
            if wait_sink is not None:
                wait_sink.append((time.perf_counter() - t0) * 1000)
            yield c
        sink.append((time.perf_counter() - t0) * 1000)
    module.write_tx = timed


def _writer(db: str, seconds: float, name: str, out: str, go: str, rate: float, sync: bool) -> None:
    import memo.embed.vectors as vectors_mod
    import memo.ops.add as add_mod
    from memo.embed.background import BackgroundEmbedder, BatchOutcome
    from memo.ops.add import add_record
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    commit_ms: list[float] = []
    lock_ms: list[float] = []
    vector_tx_ms: list[float] = []      # the embedder thread's vector write transactions
    _timed_write_tx(add_mod, commit_ms, lock_ms)
    _timed_write_tx(vectors_mod, vector_tx_ms)
    lags: dict[str, float] = {}         # record id -> ms from hand-off to the vector's commit
    measured: list[str] = []

    def observe(batch: BatchOutcome) -> None:   # the embedder thread
        if not batch.error:
            for job in batch.jobs:
                for rid in job.record_ids:
                    lags[rid] = (batch.finished - job.submitted) * 1000

    texts = _texts()
    rng = random.Random(name)
    conn = open_db(db)
    embedder = None if sync else BackgroundEmbedder(db, backfill_at_start=False, on_batch=observe).start()
    # Adds before the clock starts load the model in both paths (a server keeps it loaded).
    add_record(conn, RecordDraft(body=f"warm-up {name} {uuid.uuid4().hex}", namespace="soak"))
    if embedder is not None:
        add_record(conn, RecordDraft(body=f"warm-up 2 {name} {uuid.uuid4().hex}", namespace="soak"),
                   background=embedder)
        embedder.wait_idle(120)
    commit_ms.clear()
    lock_ms.clear()
    vector_tx_ms.clear()
    ack_ms: list[float] = []
    errors: list[str] = []
    late = 0
    _wait(out, go)
    start = time.perf_counter()
    deadline = start + seconds
    i = 0
    while True:
        due = start + i / rate if rate > 0 else time.perf_counter()
        if due >= deadline:
            break
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        elif rate > 0 and now - due > 0.001:
            late += 1
        body = f"{name} note {i}: {rng.choice(texts)[:600]} {uuid.uuid4().hex}"
        t0 = time.perf_counter()
        try:
            rep = add_record(conn, RecordDraft(body=body, namespace="soak"), background=embedder)
            # open loop: from when the add was due (a late start is waiting, too)
            ack_ms.append((time.perf_counter() - min(t0, due)) * 1000)
            measured.append(rep.record_id)
        except Exception:  # noqa: BLE001 - every error is counted and shown
            errors.append(traceback.format_exc(limit=3))
        i += 1
    unembedded = 0
    lag_ms: list[float] = []
    if embedder is not None:
        embedder.wait_idle(120)
        embedder.stop(drain=False, timeout=10)
        lag_ms = [lags[r] for r in measured if r in lags]
        unembedded = len(measured) - len(lag_ms)
        if embedder.last_error:
            errors.append(f"embedder: {embedder.last_error}")
    Path(out).write_text(json.dumps({"commit": commit_ms, "lock": lock_ms, "vector_tx": vector_tx_ms,
                                     "ack": ack_ms, "lag": lag_ms, "errors": errors,
                                     "late": late, "unembedded": unembedded}))


def _reader(db: str, seconds: float, name: str, out: str, go: str) -> None:
    from memo.embed.service import semantic_services
    from memo.profile import load_profile
    from memo.retrieve import SearchRequest, search
    from memo.store.db import open_db
    from memo.types import Scope

    queries = _queries()
    rng = random.Random(name)
    conn = open_db(db, write=False)
    services = semantic_services(conn)
    profile = load_profile("rrf")
    scope = Scope(namespaces=("seed",))
    search(conn, SearchRequest("warm up the model", scope=scope), profile, services)
    lat: list[float] = []
    errors: list[str] = []
    leaks = 0
    _wait(out, go)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        q = rng.choice(queries)
        t0 = time.perf_counter()
        try:
            resp = search(conn, SearchRequest(q, scope=scope), profile, services)
            lat.append((time.perf_counter() - t0) * 1000)
            leaks += sum(1 for r in resp.results if r.namespace != "seed")
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc(limit=3))
    Path(out).write_text(json.dumps({"search": lat, "errors": errors, "leaks": leaks}))


def _wait(out: str, go: str) -> None:
    """Say this process is warm (model loaded), then wait for the common start."""
    Path(out + ".ready").touch()
    while not os.path.exists(go):
        time.sleep(0.005)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * (len(xs) - 1)))], 1) if xs else 0.0


def _summary(xs: list[float], seconds: float) -> dict[str, float]:
    return {"n": len(xs), "per_s": round(len(xs) / seconds, 1), "p50": _pct(xs, 0.5),
            "p95": _pct(xs, 0.95), "p99": _pct(xs, 0.99), "max": _pct(xs, 1.0)}


def seed(db: str, n: int) -> None:
    from memo.embed.backfill import backfill
    from memo.ops.add import prepare, store_draft
    from memo.store.connect import write_tx
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    texts = _texts()
    conn = open_db(db)
    with write_tx(conn):
        for i in range(n):
            d = RecordDraft(body=f"seed {i}: {texts[i % len(texts)]}", namespace="seed")
            store_draft(conn, d, prepare(d), replace_previous=False)
    backfill(conn, progress=False)
    conn.close()


def run(writers: int, readers: int, seconds: float, seed_docs: int, *, rate: float = 0.0, sync: bool = False,
        seed_cache: str | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "soak.db")
        go = os.path.join(tmp, "go")
        if seed_cache and os.path.exists(seed_cache):
            shutil.copyfile(seed_cache, db)     # a seeded, fully embedded copy (same --seed-docs)
        else:
            seed(db, seed_docs)
            if seed_cache:
                shutil.copyfile(db, seed_cache)
        ctx = mp.get_context("spawn")
        procs, outs = [], []
        for role, count, target, extra in (("w", writers, _writer, (rate, sync)), ("r", readers, _reader, ())):
            for i in range(count):
                out = os.path.join(tmp, f"{role}{i}.json")
                outs.append(out)
                procs.append(ctx.Process(target=target, args=(db, seconds, f"{role}{i}", out, go, *extra)))
        for p in procs:
            p.start()
        # Start together once every process is warm (model loaded): a slow warm-up must
        # not eat into the measured window.
        deadline = time.monotonic() + 300
        while not all(os.path.exists(o + ".ready") for o in outs):
            if time.monotonic() > deadline or not all(p.is_alive() for p in procs):
                raise SystemExit("a worker did not get ready (died or took > 300 s)")
            time.sleep(0.2)
        Path(go).touch()
        load = []
        while any(p.is_alive() for p in procs):
            load.append(os.getloadavg()[0])
            time.sleep(1.0)
        for p in procs:
            p.join()
        got: dict[str, list] = {k: [] for k in ("commit", "lock", "vector_tx", "ack", "lag", "search", "errors")}
        leaks = late = unembedded = 0
        for out in outs:
            d = json.loads(Path(out).read_text())
            for k in got:
                got[k] += d.get(k, [])
            leaks += d.get("leaks", 0)
            late += d.get("late", 0)
            unembedded += d.get("unembedded", 0)
    return {"writers": writers, "readers": readers, "seconds": seconds, "seed_docs": seed_docs,
            "write_rate": rate, "path": "sync" if sync else "background",
            "synchronous": os.environ.get("MEMO_SYNCHRONOUS", "FULL"),
            "ack": _summary(got["ack"], seconds), "commit": _summary(got["commit"], seconds),
            "lock": _summary(got["lock"], seconds), "vector_tx": _summary(got["vector_tx"], seconds),
            "lag": _summary(got["lag"], seconds), "search": _summary(got["search"], seconds),
            "late_starts": late, "unembedded": unembedded,
            "errors": len(got["errors"]), "error_samples": got["errors"][:3], "leaks": leaks,
            "load_avg_1m": {"min": round(min(load), 2) if load else None,
                            "max": round(max(load), 2) if load else None},
            "cpus": os.cpu_count()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed-docs", type=int, default=2000)
    ap.add_argument("--write-rate", type=float, default=0.0,
                    help="adds per second per writer, open loop (0 = closed loop)")
    ap.add_argument("--sync", action="store_true", help="writers embed before returning (memo add / wait=true)")
    ap.add_argument("--seed-cache", help="reuse (or create) this seeded database copy between runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    row = run(args.writers, args.readers, args.seconds, args.seed_docs, rate=args.write_rate, sync=args.sync,
              seed_cache=args.seed_cache)
    if args.json:
        print(json.dumps(row, indent=2))
        return
    rate = f"{row['write_rate']:g}/s per writer (open loop)" if row["write_rate"] else "closed loop"
    print(f"{row['writers']} writers ({row['path']} embedding, {rate}) + {row['readers']} readers, "
          f"{row['seconds']:g} s, {row['seed_docs']} seeded notes, synchronous={row['synchronous']}, "
          f"{row['cpus']} CPUs, load avg {row['load_avg_1m']['min']}-{row['load_avg_1m']['max']} (ms)")
    for name in ("ack", "commit", "lock", "vector_tx", "lag", "search"):
        s = row[name]
        print(f"  {name:9s} n={s['n']:6d} ({s['per_s']}/s)  p50 {s['p50']}  p95 {s['p95']}  "
              f"p99 {s['p99']}  max {s['max']}")
    print(f"  errors {row['errors']}, out-of-scope results {row['leaks']}, late starts {row['late_starts']}, "
          f"adds never embedded {row['unembedded']}")
    for e in row["error_samples"]:
        print("  " + e.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
