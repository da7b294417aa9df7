"""Write and search latency under a mixed load: W writer processes and R reader processes on
one database, each holding its connection open like a server would (issue 9, point 9).

    .venv/bin/python bench/soak.py [--writers 4] [--readers 8] [--seconds 60] [--seed-docs 2000]
                                   [--json]

* writers: ``memo.ops.add_record`` in a loop (validate, split, one write transaction,
  then the ONNX embedding of the new passage after the commit), real model, warm;
  ``commit`` is the time until the write is durable and acknowledged (add_record's write
  transaction), ``add`` the whole call including the embedding.
* readers: ``memo.retrieve.search`` in hybrid mode (keyword + semantic, real query
  embedding) with a namespace scope, over a database seeded with ``--seed-docs`` notes
  made from SciFact abstracts (datasets/sample), queries from SciFact claims.

Every op of every process is timed; the script prints p50 / p95 / p99 / max (ms) of each
kind, throughput, and errors (any exception counts).  Reader results outside the scope
are counted as leaks (must be 0).  docs/reliability.md quotes the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import random
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


def _timed_write_tx(module, sink: list[float]):  # noqa: ANN001, ANN202
    """Wrap ``module.write_tx`` so each transaction's time (lock wait + writes + COMMIT)
    lands in ``sink``: the time until an add is durable and acknowledged."""
    from contextlib import contextmanager

    real = module.write_tx

    @contextmanager
    def timed(conn):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        with real(conn) as c:
            yield c
        sink.append((time.perf_counter() - t0) * 1000)
    module.write_tx = timed


def _writer(db: str, seconds: float, name: str, out: str, go: str) -> None:
    import memo.ops.add as add_mod
    from memo.ops.add import add_record
    from memo.store.db import open_db
    from memo.types import RecordDraft

    commit_ms: list[float] = []
    _timed_write_tx(add_mod, commit_ms)
    texts = _texts()
    rng = random.Random(name)
    conn = open_db(db)
    # One add before the clock starts loads the model (a server keeps it loaded).
    add_record(conn, RecordDraft(body=f"warm-up {name} {uuid.uuid4().hex}", namespace="soak"))
    commit_ms.clear()
    add_ms: list[float] = []
    errors: list[str] = []
    _wait(out, go)
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        body = f"{name} note {i}: {rng.choice(texts)[:600]} {uuid.uuid4().hex}"
        t0 = time.perf_counter()
        try:
            add_record(conn, RecordDraft(body=body, namespace="soak"))
            add_ms.append((time.perf_counter() - t0) * 1000)
        except Exception:  # noqa: BLE001 - every error is counted and shown
            errors.append(traceback.format_exc(limit=3))
        i += 1
    Path(out).write_text(json.dumps({"commit": commit_ms, "add": add_ms, "errors": errors}))


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
    from memo.ops.add import prepare, store_draft
    from memo.ops.after_commit import embed_pending
    from memo.store.connect import write_tx
    from memo.store.db import open_db
    from memo.types import RecordDraft

    texts = _texts()
    conn = open_db(db)
    with write_tx(conn):
        for i in range(n):
            d = RecordDraft(body=f"seed {i}: {texts[i % len(texts)]}", namespace="seed")
            store_draft(conn, d, prepare(d), replace_previous=False)
    embed_pending(conn, progress=False)
    conn.close()


def run(writers: int, readers: int, seconds: float, seed_docs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "soak.db")
        go = os.path.join(tmp, "go")
        seed(db, seed_docs)
        ctx = mp.get_context("spawn")
        procs, outs = [], []
        for role, count, target in (("w", writers, _writer), ("r", readers, _reader)):
            for i in range(count):
                out = os.path.join(tmp, f"{role}{i}.json")
                outs.append(out)
                procs.append(ctx.Process(target=target, args=(db, seconds, f"{role}{i}", out, go)))
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
        for p in procs:
            p.join()
        commit, add, search, errors, leaks = [], [], [], [], 0
        for out in outs:
            d = json.loads(Path(out).read_text())
            commit += d.get("commit", [])
            add += d.get("add", [])
            search += d.get("search", [])
            errors += d["errors"]
            leaks += d.get("leaks", 0)
    return {"writers": writers, "readers": readers, "seconds": seconds, "seed_docs": seed_docs,
            "synchronous": os.environ.get("MEMO_SYNCHRONOUS", "FULL"),
            "commit": _summary(commit, seconds), "add": _summary(add, seconds),
            "search": _summary(search, seconds), "errors": len(errors), "error_samples": errors[:3],
            "leaks": leaks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed-docs", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    row = run(args.writers, args.readers, args.seconds, args.seed_docs)
    if args.json:
        print(json.dumps(row, indent=2))
        return
    print(f"{row['writers']} writers + {row['readers']} readers, {row['seconds']:g} s, "
          f"{row['seed_docs']} seeded notes, synchronous={row['synchronous']} (ms)")
    for name in ("commit", "add", "search"):
        s = row[name]
        print(f"  {name:7s} n={s['n']:6d} ({s['per_s']}/s)  p50 {s['p50']}  p95 {s['p95']}  "
              f"p99 {s['p99']}  max {s['max']}")
    print(f"  errors {row['errors']}, out-of-scope results {row['leaks']}")
    for e in row["error_samples"]:
        print("  " + e.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
