"""The vector sidecar and the int8 shortlist (memo/embed/sidecar.py, quantise.py, index.py):
the quantised path against the exact scan, stale sidecars, the scope mask and the read
snapshot (issue 16.3 / 16.5)."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.embed import quantise, sidecar
from memo.embed.index import VectorIndex
from memo.embed.vectors import write_vectors
from memo.ops.maintenance import reindex
from memo.ops.records import forget, purge
from memo.profile import load_profile
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import connect, read_tx, write_tx
from memo.store.db import open_db
from memo.store.derived import index_passages
from memo.types import Scope
from tests.fast_examples import examples

D = 32


def _index_cfg(**values):
    """The profile's [index] section with these keys changed."""
    return load_profile("base").with_overrides({f"index.{k}": v for k, v in values.items()}).index


QUANT = _index_cfg(quantised_min=1, shortlist=4, sidecar_min=1, sidecar_tail=0.05)
EXACT = _index_cfg(quantised_min=10**9, shortlist=4, sidecar_min=1, sidecar_tail=0.05)
NO_SIDECAR = _index_cfg(quantised_min=10**9, shortlist=4, sidecar_min=0, sidecar_tail=0.05)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, D)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _fill(conn: sqlite3.Connection, n: int, start: int = 0) -> list[int]:
    """n one-passage records (raw rows: fast), their pks."""
    with write_tx(conn):
        conn.executemany("INSERT INTO records(id, kind, recorded_at, content_hash, body) "
                         "VALUES (?, 'doc', '2025-01-01T00:00:00.000000Z', ?, 'x')",
                         [(f"r{i}", f"h{i}") for i in range(start, start + n)])
        conn.executemany("INSERT INTO passages(id, record_id, ord, text, tokens) VALUES (?, ?, 0, 'x', 1)",
                         [(f"r{i}:0", f"r{i}") for i in range(start, start + n)])
        pks = [int(r[0]) for r in conn.execute(
            "SELECT pk FROM passages ORDER BY pk DESC LIMIT ?", (n,))][::-1]
        index_passages(conn, pks)       # the keyword indexes a purge must find
    return pks


@pytest.fixture
def db(tmp_path: Path) -> tuple[sqlite3.Connection, Path, list[int], np.ndarray]:
    path = tmp_path / "v.db"
    conn = open_db(path)
    pks = _fill(conn, 3000)
    vecs = _unit(np.random.default_rng(7), len(pks))
    write_vectors(conn, "m", pks, vecs)
    yield conn, path, pks, vecs
    conn.close()


def _search(idx: VectorIndex, conn, q, allowed, k, cfg):
    with read_tx(conn):
        return idx.search(conn, q, allowed, k, cfg)


def _live(conn) -> np.ndarray:
    s = build_scope_sql(Scope())
    return np.asarray([r[0] for r in conn.execute(
        "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE " + s.where, s.params)],
        dtype=np.int64)


def test_profiles_ship_the_vectors_section():
    cfg = load_profile("rrf").index
    assert cfg.quantised_min > 1 and cfg.shortlist >= 1 and cfg.sidecar_min >= 0


def test_int8_shortlist_recall_and_exact_cosines(db):
    """Differential: random unit vectors (the worst case for quantisation), fixed seed:
    recall@100 of the int8 shortlist + rescoring >= 0.99 against the exact scan, and every
    returned cosine is the exact float32 one."""
    conn, path, pks, vecs = db
    assert quantise.kernel() is not None, "numkong (a dependency) should be installed"
    idx = VectorIndex("m", D, db_path=str(path))
    qs = _unit(np.random.default_rng(99), 20)
    pk_arr = np.asarray(pks)
    hits = 0
    for q in qs:
        got = _search(idx, conn, q, None, 100, QUANT)
        assert idx.last_path == "int8"
        exact = vecs @ q
        want = set(pk_arr[np.argsort(-exact)[:100]].tolist())
        hits += len(want & {p for p, _ in got})
        by_pk = dict(zip(pks, exact, strict=True))
        assert all(abs(c - by_pk[p]) < 1e-5 for p, c in got)
        assert [c for _, c in got] == sorted((c for _, c in got), reverse=True)
    assert hits / (100 * len(qs)) >= 0.99


def test_forced_exact_path_is_identical(db):
    conn, path, pks, vecs = db
    q = _unit(np.random.default_rng(3), 1)[0]
    plain = VectorIndex("m", D)                     # no database path: the old in-memory index
    want = _search(plain, conn, q, None, 50, None)
    with_sidecar = VectorIndex("m", D, db_path=str(path))
    assert _search(with_sidecar, conn, q, None, 50, EXACT) == want
    assert with_sidecar.base_rows == len(pks) and with_sidecar.last_path == "exact"


def test_no_kernel_falls_back_to_exact(db, monkeypatch):
    conn, path, _, _ = db
    q = _unit(np.random.default_rng(4), 1)[0]
    want = _search(VectorIndex("m", D), conn, q, None, 20, None)
    monkeypatch.setenv("MEMO_NO_INT8_KERNEL", "1")
    quantise.reset_kernel()
    try:
        idx = VectorIndex("m", D, db_path=str(path))
        assert _search(idx, conn, q, None, 20, QUANT) == want
        assert idx.last_path == "exact"
    finally:
        monkeypatch.delenv("MEMO_NO_INT8_KERNEL")
        quantise.reset_kernel()


def test_sidecar_is_mapped_by_a_new_process_and_appends_are_read(db):
    conn, path, pks, vecs = db
    first = VectorIndex("m", D, db_path=str(path))
    q = vecs[10]
    _search(first, conn, q, None, 5, EXACT)
    assert sidecar.sidecar_path(path, "m").exists()
    # A passage written after the sidecar: a fresh index maps the sidecar and reads the
    # new row from the table (the tail), and finds it.
    new = _fill(conn, 1, start=5000)
    write_vectors(conn, "m", new, np.asarray([-q]))
    fresh = VectorIndex("m", D, db_path=str(path))
    got = _search(fresh, conn, -q, None, 3, QUANT)
    assert fresh.sidecar_note == "ok" and fresh.base_rows == len(pks) and len(fresh) == len(pks) + 1
    assert got[0][0] == new[0] and got[0][1] == pytest.approx(1.0, abs=1e-5)


def test_stale_sidecar_after_delete_is_not_used(db):
    conn, path, pks, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    victim = conn.execute("SELECT record_id FROM passages WHERE pk = ?", (pks[0],)).fetchone()[0]
    forget(conn, [victim])
    fresh = VectorIndex("m", D, db_path=str(path))
    got = _search(fresh, conn, vecs[0], _live(conn), 5, QUANT)
    assert pks[0] not in [p for p, _ in got]          # forgotten: masked by the live scope
    purge(conn)                                       # deleted for good: the epoch moves
    with read_tx(conn):
        sc, why = sidecar.open_valid(conn, sidecar.sidecar_path(path, "m"), "m", D)
    assert sc is None and "stale" in why
    fresh = VectorIndex("m", D, db_path=str(path))
    got = _search(fresh, conn, vecs[0], None, 5, QUANT)
    assert pks[0] not in [p for p, _ in got] and fresh.sidecar_note == "written"   # stale: rewritten
    assert len(fresh) == len(pks) - 1                 # rebuilt from the table, then rewritten
    with read_tx(conn):
        assert sidecar.open_valid(conn, sidecar.sidecar_path(path, "m"), "m", D)[0] is not None


def _counted(conn) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in conn.execute("SELECT model_id, rows FROM vector_counts") if r[1]}


def _actual(conn) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in conn.execute("SELECT model_id, count(*) FROM vectors GROUP BY model_id")}


def test_vector_counts_follow_every_write(db):
    """schema v7: the triggers keep each model's rows through inserts (a duplicate ignored),
    deletes, a passage's cascade and a change of model."""
    conn, path, pks, vecs = db
    assert _counted(conn) == _actual(conn) == {"m": len(pks)}
    assert write_vectors(conn, "m", pks[:5], vecs[:5]) == 0          # already there: nothing
    assert write_vectors(conn, "other", pks[:7], vecs[:7]) == 7
    assert _counted(conn) == _actual(conn) == {"m": len(pks), "other": 7}
    with write_tx(conn):
        conn.execute("DELETE FROM vectors WHERE model_id = 'm' AND passage_pk IN (?, ?)", (pks[0], pks[1]))
        conn.execute("DELETE FROM passages WHERE pk = ?", (pks[2],))      # its vectors cascade
        conn.execute("UPDATE vectors SET model_id = 'third' WHERE model_id = 'other' AND passage_pk = ?", (pks[3],))
    assert _counted(conn) == _actual(conn) == {"m": len(pks) - 3, "other": 5, "third": 1}


def test_sidecar_check_reads_the_kept_count_not_the_table(db):
    """The sidecar's row check uses the kept count less the rows after it (no count of every
    row), and still refuses a sidecar whose rows were deleted behind the epoch's back; a
    database at an older schema (no kept count) counts the rows as before."""
    conn, path, pks, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    write_vectors(conn, "m", _fill(conn, 2, start=7000), vecs[:2])         # two rows after the sidecar
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        with read_tx(conn):
            assert sidecar.open_valid(conn, sidecar.sidecar_path(path, "m"), "m", D)[1] == "ok"
    finally:
        conn.set_trace_callback(None)
    assert not [q for q in seen if "count(*) FROM vectors WHERE model_id" in q], seen
    assert [q for q in seen if "FROM vector_counts" in q], seen
    with write_tx(conn):    # a row gone with no epoch bump (another tool): the kept count says so
        conn.execute("DELETE FROM vectors WHERE passage_pk = ? AND model_id = 'm'", (pks[100],))
    with read_tx(conn):
        sc, why = sidecar.open_valid(conn, sidecar.sidecar_path(path, "m"), "m", D)
    assert sc is None and "rows" in why, why
    with write_tx(conn):
        conn.execute("PRAGMA user_version = 6")      # as a v6 file is read: the rows are counted
    with read_tx(conn):
        assert sidecar.rows_up_to(conn, "m", 10**9) == _actual(conn)["m"]
        sc, why = sidecar.open_valid(conn, sidecar.sidecar_path(path, "m"), "m", D)
    assert sc is None and "rows" in why, why


def test_reads_after_a_seq_take_the_rowid_range(db):
    """The sidecar's tail count and the index's tail read seek the rows after a seq by
    rowid: through the (model_id, passage) index they read every row of the model (and
    sorted them), ~80 ms at 1M passages for a tail of ten."""
    conn, path, pks, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    write_vectors(conn, "m", _fill(conn, 3, start=8000), vecs[:3])
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        fresh = VectorIndex("m", D, db_path=str(path))
        _search(fresh, conn, vecs[0], None, 5, QUANT)
    finally:
        conn.set_trace_callback(None)
    assert fresh.sidecar_note == "ok" and len(fresh) == len(pks) + 3
    tails = [q for q in seen if "FROM vectors WHERE" in q and "seq >" in q]
    assert len(tails) >= 2, seen          # the check's count and the index's read
    for q in tails:
        plan = " ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + q))
        assert "INTEGER PRIMARY KEY" in plan and "TEMP B-TREE" not in plan, (q, plan)


def test_sidecar_of_another_database_is_refused(db, tmp_path):
    conn, path, pks, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    other = tmp_path / "other.db"
    oconn = open_db(other)
    opks = _fill(oconn, 3000)
    write_vectors(oconn, "m", opks, _unit(np.random.default_rng(8), len(opks)))   # same shape, other rows
    epoch = conn.execute("SELECT value FROM memo_meta WHERE key = 'vectors_epoch'").fetchone()[0]
    with write_tx(oconn):   # as two databases from before random epochs (both '0'): the checks behind it
        oconn.execute("UPDATE memo_meta SET value = ? WHERE key = 'vectors_epoch'", (epoch,))
    shutil.copy(sidecar.sidecar_path(path, "m"), sidecar.sidecar_path(other, "m"))
    with read_tx(oconn):
        sc, why = sidecar.open_valid(oconn, sidecar.sidecar_path(other, "m"), "m", D)
    assert sc is None and "differs" in why
    oconn.close()


def test_truncated_sidecar_is_refused(db):
    conn, path, _, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    f = sidecar.sidecar_path(path, "m")
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size // 2)
    with read_tx(conn):
        assert sidecar.open_valid(conn, f, "m", D)[0] is None


def test_vectors_newer_than_the_snapshot_are_not_returned(db):
    """A reader whose snapshot predates a vector must not get it back, even when another
    connection already loaded it into the shared index."""
    conn, path, pks, vecs = db
    idx = VectorIndex("m", D, db_path=str(path))
    new = _fill(conn, 1, start=7000)
    q = vecs[5]
    for cfg in (EXACT, QUANT):
        reader = connect(path)
        try:
            with read_tx(reader):
                _ = idx.search(reader, q, None, 3, cfg)         # snapshot taken, vector not there yet
                writer = connect(path)
                write_vectors(writer, "m", new, np.asarray([q]))
                with read_tx(writer):
                    assert idx.search(writer, q, None, 1, cfg)[0][0] == new[0]   # loaded now
                writer.close()
                got = idx.search(reader, q, None, 3, cfg)
                assert new[0] not in [p for p, _ in got]
        finally:
            reader.close()
        with write_tx(conn):
            conn.execute("DELETE FROM vectors WHERE passage_pk = ?", (new[0],))
            conn.execute("UPDATE memo_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_epoch'")


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.sets(st.integers(0, 2999), max_size=3000), qseed=st.integers(0, 10**6))
def test_scope_mask_applies_before_topk(db, keep, qseed):
    """Whatever subset the scope allows, the int8 path returns only allowed pks, as many as
    the exact path, with recall >= 0.9 per query and exact cosines."""
    conn, path, pks, vecs = db
    idx = VectorIndex("m", D, db_path=str(path))
    allowed = np.asarray(sorted(pks[i] for i in keep), dtype=np.int64)
    q = _unit(np.random.default_rng(qseed), 1)[0]
    got = _search(idx, conn, q, allowed, 50, QUANT)
    want = _search(idx, conn, q, allowed, 50, EXACT)
    allowed_set = set(allowed.tolist())
    assert {p for p, _ in got} <= allowed_set and len(got) == len(want) == min(50, len(allowed_set))
    if want:
        assert len({p for p, _ in got} & {p for p, _ in want}) >= 0.9 * len(want)
        by_pk = dict(zip(pks, vecs @ q, strict=True))
        assert all(abs(c - by_pk[p]) < 1e-5 for p, c in got)


def test_quantise_round_trip():
    x = _unit(np.random.default_rng(1), 50)
    q8, scale = quantise.quantise_rows(x)
    assert q8.dtype == np.int8 and np.abs(q8).max() == 127
    assert np.abs(q8 * scale[:, None] - x).max() <= scale.max() / 2 + 1e-7


def test_reindex_rebuilds_a_stale_sidecar(db):
    conn, path, pks, vecs = db
    _search(VectorIndex("m", D, db_path=str(path)), conn, vecs[0], None, 5, EXACT)
    f = sidecar.sidecar_path(path, "m")
    before = f.stat().st_mtime_ns
    report = reindex(conn)                              # moves the epoch, then rewrites the sidecar
    assert "vector sidecar of m: 3000 rows" in report.vectors
    with read_tx(conn):
        sc, why = sidecar.open_valid(conn, f, "m", D)
    assert sc is not None, why
    assert f.stat().st_mtime_ns != before
    with write_tx(conn):
        conn.execute("DELETE FROM vectors")
    reindex(conn)
    assert not f.exists()                               # no vector left: no sidecar


@pytest.mark.parametrize("cfg", [QUANT, EXACT], ids=["int8", "exact"])
def test_excluded_pks_equal_the_allowed_complement(db, cfg):
    """The semantic arm passes the few out-of-scope pks instead of every allowed one: the
    answer must be the one the allowed set gives."""
    conn, path, pks, vecs = db
    idx = VectorIndex("m", D, db_path=str(path))
    q = vecs[42]
    excluded = frozenset(pks[40:45]) | frozenset(pks[::97])
    allowed = np.asarray([p for p in pks if p not in excluded], dtype=np.int64)
    _search(idx, conn, q, None, 60, cfg)                 # loads the index, writes the sidecar
    with read_tx(conn):
        got = idx.search(conn, q, None, 60, cfg, excluded=excluded)
    want = _search(idx, conn, q, allowed, 60, cfg)
    assert got == want and not excluded & {p for p, _ in got}


def test_unwritable_folder_keeps_rows_in_memory(db, monkeypatch):
    conn, path, pks, vecs = db

    def refuse(*a, **k):
        raise PermissionError("read-only folder")

    monkeypatch.setattr(sidecar, "write", refuse)
    idx = VectorIndex("m", D, db_path=str(path))
    got = _search(idx, conn, vecs[3], None, 5, QUANT)
    assert got[0][0] == pks[3] and idx.base_rows == 0 and len(idx) == len(pks)
    assert idx.sidecar_note.startswith("sidecar not written") and idx.last_path == "exact"


def test_packed_scan_gives_the_same_answers_and_drops_the_mapped_rows(db, monkeypatch):
    """From its PACK_AFTER-th full scan the index scans NumKong's packed copy of the int8
    rows; the shortlist (and so every hit and cosine) is the one the plain int8 scan gives."""
    from memo.embed import index as index_mod

    conn, path, _, _ = db
    qs = _unit(np.random.default_rng(11), 6)
    packed = VectorIndex("m", D, db_path=str(path))
    got = [_search(packed, conn, q, None, 100, QUANT) for q in qs]
    assert packed.last_path == "int8"
    assert packed._packed is not None, "numkong's packed kernel should be in use after two scans"
    monkeypatch.setattr(quantise, "pack", lambda rows8: None)     # the plain int8 scan only
    plain = VectorIndex("m", D, db_path=str(path))
    want = [_search(plain, conn, q, None, 100, QUANT) for q in qs]
    assert plain._packed is None
    assert got == want
    assert index_mod.PACK_AFTER >= 2          # a one-shot search never pays the packing


def test_packed_scores_equal_the_int8_kernel():
    rng = np.random.default_rng(5)
    rows8, scale = quantise.quantise_rows(_unit(rng, 500))
    q = _unit(rng, 1)[0]
    p = quantise.pack(rows8)
    assert p is not None
    np.testing.assert_array_equal(quantise.approx_scores(q, rows8, scale, p), quantise.approx_scores(q, rows8, scale))


def _resident_kb(addr: int) -> int:
    """Rss (kB) of this process's mapping that holds ``addr`` (Linux /proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and head == "Rss:":
            return int(line.split()[1])
    raise AssertionError("no mapping holds the address")


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc/self/smaps")
def test_warm_maps_the_int8_rows_once_and_changes_no_answer(tmp_path: Path):
    """The semantic arm's prepare (while a cold process's model loads) maps the int8 rows'
    pages ahead of the first scan; a process that scanned (or packed) already is left alone;
    the answers are the ones without it."""
    path = tmp_path / "w.db"
    conn = open_db(path)
    pks = _fill(conn, 40_000)
    write_vectors(conn, "m", pks, _unit(np.random.default_rng(8), len(pks)))
    qs = _unit(np.random.default_rng(12), 3)
    want = [_search(VectorIndex("m", D, db_path=str(path)), conn, q, None, 50, QUANT) for q in qs]
    conn.close()
    conn = open_db(path)                 # the sidecar exists now: mapped, not read
    idx = VectorIndex("m", D, db_path=str(path))
    with read_tx(conn):
        idx.refresh(conn, QUANT)
    i8 = idx._base.i8
    size_kb = i8.nbytes // 1024
    before = _resident_kb(i8.ctypes.data)
    idx.warm()
    after = _resident_kb(i8.ctypes.data)
    assert before < size_kb // 2 and after >= size_kb * 0.95, (before, after, size_kb)
    got = [_search(idx, conn, q, None, 50, QUANT) for q in qs]
    assert got == want and idx.last_path == "int8"
    # after a scan (or once packed) there is nothing to map: warm does not read the rows
    idx._base = dataclasses.replace(idx._base, i8=_Untouchable())
    idx.warm()
    conn.close()


class _Untouchable:
    def __array__(self, *a, **k):
        raise AssertionError("warm read the int8 rows again after a scan")


def test_a_split_scan_gives_the_one_thread_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SPLIT_ROWS the unpacked scan runs its halves on two threads: the same scores,
    in row order (an odd row count too), and a failure in the helper reaches the caller."""
    rng = np.random.default_rng(11)
    rows8, scale = quantise.quantise_rows(_unit(rng, 1001))
    q = _unit(rng, 1)[0]
    whole = quantise.approx_scores(q, rows8, scale)
    threads: set[str] = set()
    scan = quantise.kernel()
    assert scan is not None

    def seen(q8: np.ndarray, r8: np.ndarray) -> np.ndarray:
        threads.add(threading.current_thread().name)
        return scan(q8, r8)

    monkeypatch.setattr(quantise, "SPLIT_ROWS", 1000)
    monkeypatch.setattr(quantise, "_kernel", seen)
    np.testing.assert_array_equal(quantise.approx_scores(q, rows8, scale), whole)
    assert threads == {threading.current_thread().name, "memo-int8-scan"}

    def fails(q8: np.ndarray, r8: np.ndarray) -> np.ndarray:
        if threading.current_thread().name == "memo-int8-scan":
            raise MemoryError("the helper's half")
        return scan(q8, r8)

    monkeypatch.setattr(quantise, "_kernel", fails)
    with pytest.raises(MemoryError, match="helper"):
        quantise.approx_scores(q, rows8, scale)
