"""Issue 17.3: 8 writer and 8 reader processes on one real PostgreSQL database for 60 s.

Writers add records through memo's library API (``add_record``, and ``import_path`` in
batches), each body with a marker word of its own, and acknowledge a record only after
the call returned; readers search (``memo.retrieve.pipeline.search``, modes keyword and
exact) for markers acknowledged before the search began, which must be found, and for a
word every record holds (tests/reliability/_pg_worker.py).  Then: every acknowledged
record is stored exactly once and nothing else is; records and passages match what the
writers reported; passage pks and ids are unique and each record's ords run 0..n-1;
exact_fts, the tsvector columns and bm25's postings tables are in step with the
passages; every record a reader was shown is a committed one; readers ran many searches;
no process met an error other than ``StoreBusy`` (retried).

Without the writers' advisory lock (memo/store/postgres/tx.py) concurrent adds pick the
same max(pk) + 1 for their passages and collide (``passages_pkey``): the writers get
errors and this test fails.  With READ COMMITTED instead of REPEATABLE READ in
``read_tx`` the readers' one-transaction checks see two states and it fails too.
``MEMO_PG_CONCURRENCY_S`` shortens the run for a quick local check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memo.store.db import open_db
from memo.text.identifiers import exact_terms

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)

WORKER = Path(__file__).with_name("_pg_worker.py")
ROOT = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("MEMO_PG_CONCURRENCY_S", "60"))
WRITERS = 8
READERS = 8


def _start(tmp_path: Path, url: str) -> list[tuple[str, Path, subprocess.Popen]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    names = [("writer", f"w{n}") for n in range(1, WRITERS + 1)] + [("reader", f"r{n}") for n in range(1, READERS + 1)]
    for _, name in names:        # readers follow every writer's file: all exist before anyone starts
        (tmp_path / f"{name}.out").touch()
    procs = []
    for role, name in names:
        out = tmp_path / f"{name}.out"
        procs.append((name, out, subprocess.Popen(
            [sys.executable, str(WORKER), role, url, str(out), str(SECONDS), name, str(tmp_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)))
    return procs


def _go(tmp_path: Path, procs: list) -> None:
    limit = time.monotonic() + 300
    while not all(Path(f"{out}.ready").exists() for _, out, _ in procs):
        dead = [(name, p.returncode) for name, _, p in procs if p.poll() is not None]
        assert not dead, f"workers exited before starting: {dead}"
        assert time.monotonic() < limit, "workers did not start within 300 s"
        time.sleep(0.05)
    (tmp_path / "go").touch()


@pytest.mark.slow
def test_pg_writers_and_readers_lose_nothing(tmp_path):
    from tests.pg_server import drop_database, new_database

    url = new_database()
    procs: list = []
    try:
        open_db(url).close()            # the schema, before anyone races for it
        procs = _start(tmp_path, url)
        t0 = time.monotonic()
        _go(tmp_path, procs)
        for name, _, p in procs:
            _, err = p.communicate(timeout=SECONDS + 300)
            assert p.returncode == 0, (name, err[-2000:])
        wall = time.monotonic() - t0
        _check(tmp_path, url, procs, wall)
    finally:
        for _, _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        drop_database(url)


def _check(tmp_path: Path, url: str, procs: list, wall: float) -> None:
    acked: list[dict] = []
    stats: dict[str, dict] = {}
    errors: dict[str, str] = {}
    seen: set[str] = set()
    for name, out, _ in procs:
        acked += [json.loads(x) for x in out.read_text().splitlines() if x]
        stats[name] = json.loads(Path(f"{out}.stats").read_text())
        text = Path(f"{out}.err").read_text().strip()
        if text:
            errors[name] = text[-3000:]
        if Path(f"{out}.seen").exists():
            seen |= set(Path(f"{out}.seen").read_text().split())
    writers = [s for s in stats.values() if s["role"] == "writer"]
    readers = [s for s in stats.values() if s["role"] == "reader"]
    ids = [a["id"] for a in acked]

    conn = open_db(url, write=False)
    try:
        q = conn.execute_native
        stored = {r[0]: r[1] for r in q("SELECT id, body FROM records")}
        n_records = q("SELECT count(*) FROM records").fetchone()[0]
        n_pass, n_pks, n_pids = q("SELECT count(*), count(DISTINCT pk), count(DISTINCT id) FROM passages").fetchone()
        per_record = {r[0]: (r[1], r[2], r[3]) for r in q(
            "SELECT record_id, count(*), min(ord), max(ord) FROM passages GROUP BY record_id")}
        passages = q("SELECT pk, section, text FROM passages").fetchall()
        exact = {r[0]: r[1] for r in q("SELECT rowid, terms FROM exact_fts")}
        exact_stale = q("SELECT count(*) FROM exact_fts WHERE tsv IS DISTINCT FROM to_tsvector('simple', terms) "
                        "OR dl IS DISTINCT FROM memo_token_count(tsv)").fetchone()[0]
        tsv_stale = q(
            "SELECT count(*) FROM passages WHERE tsv IS DISTINCT FROM "
            "(setweight(to_tsvector('english', memo_words(text)), 'A') "
            " || setweight(to_tsvector('english', memo_words(section)), 'B')) "
            "OR dl IS DISTINCT FROM memo_token_count(tsv)").fetchone()[0]
        generation = int(q("SELECT value FROM memo_meta WHERE key = 'generation'").fetchone()[0])
        postings_stale = {}
        for table, rows, key in (("passage_terms", "passages", "pk"), ("exact_terms", "exact_fts", "rowid")):
            if q("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]:   # bm25's postings (eb64da1)
                postings_stale[table] = q(
                    f"SELECT (SELECT count(*) FROM (SELECT r.{key}, u.lexeme FROM {rows} r, unnest(r.tsv) u "
                    f"                              EXCEPT SELECT key, lex FROM {table}) a) "
                    f"     + (SELECT count(*) FROM (SELECT key, lex FROM {table} EXCEPT "
                    f"                              SELECT r.{key}, u.lexeme FROM {rows} r, unnest(r.tsv) u) b) "
                    f"     + (SELECT count(*) FROM {table} t JOIN {rows} r ON r.{key} = t.key "
                    f"        WHERE t.dl IS DISTINCT FROM r.dl)").fetchone()[0]
    finally:
        conn.close()

    summary = {
        "seconds": SECONDS, "wall_s": round(wall, 1), "records": len(ids), "passages": n_pass,
        "adds": sum(s["adds"] for s in writers), "imports": sum(s["imports"] for s in writers),
        "searches": sum(s["searches"] for s in readers),
        "marker_checks": sum(s["marker_checks"] for s in readers),
        "snapshot_checks": sum(s["snapshot_checks"] for s in readers),
        "busy_retries": sum(s["busy"] for s in stats.values()),
        "writer_p99_ms": max(s["p99_ms"] for s in writers), "reader_p99_ms": max(s["p99_ms"] for s in readers),
        "generation": generation,
    }
    print(json.dumps(summary))
    (tmp_path / "summary.json").write_text(json.dumps(summary))

    assert errors == {}, "\n\n".join(f"--- {k}\n{v}" for k, v in errors.items())
    assert all(s["errors"] == 0 for s in stats.values()), stats
    # Every acknowledged record is stored exactly once, and nothing else is.
    assert len(ids) == len(set(ids)), "a record id was acknowledged twice"
    assert n_records == len(stored) == len(ids), (n_records, len(ids))
    assert set(stored) == set(ids), (len(set(ids) - set(stored)), len(set(stored) - set(ids)))
    assert all(a["m"] in stored[a["id"]] for a in acked), "a record holds another record's marker"
    assert sum(s["records"] for s in writers) == len(ids)
    # Passages: as many as the writers were told, unique pks and ids, each record's ords 0..n-1.
    assert n_pass == sum(a["p"] for a in acked) == sum(s["passages"] for s in writers), (
        n_pass, sum(a["p"] for a in acked))
    assert n_pks == n_pids == n_pass, (n_pass, n_pks, n_pids)
    bad = [a["id"] for a in acked if per_record.get(a["id"]) != (a["p"], 0, a["p"] - 1)]
    assert not bad, f"{len(bad)} records whose passages are not the {bad[:3]} ... reported"
    assert any(a["p"] > 1 for a in acked), "no record was split into several passages"
    # The derived full-text rows are in step with the passages.
    assert set(exact) == {p[0] for p in passages}, (len(exact), n_pass)
    assert all(exact[pk] == exact_terms(section + "\n" + text) for pk, section, text in passages)
    assert exact_stale == 0 and tsv_stale == 0, (exact_stale, tsv_stale)
    assert not any(postings_stale.values()), postings_stale
    # Every write transaction committed moved the data generation once (readers' caches key on it).
    counted = [s["txs"] for s in writers]
    if None not in counted:
        assert generation == 1 + sum(counted), (generation, counted)
    # Readers were only ever shown committed records, and did plenty of work.
    assert seen <= set(stored), f"readers saw {len(seen - set(stored))} records that were never committed"
    assert all(s["adds"] > 0 and s["imports"] > 0 for s in writers), writers
    assert all(s["marker_checks"] > 0 and s["broad"] > 0 and s["snapshot_checks"] > 0 for s in readers), readers
    assert summary["searches"] >= 3 * SECONDS, summary
    assert summary["marker_checks"] >= 2 * SECONDS, summary
