"""The keyword postings' rebuild and the bulk import that ends with it (memo.store.kw_postings:
``rebuild``, ``hold_bulk`` / ``end_bulk``; memo.ops.importer's ``_Batcher``): the base equals
FTS5's own postings, a bulk import writes no delta, another process's open does not rebuild
under a running import's lease but does once it runs out, and an import stopped half way
leaves postings that the next open rebuilds."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from memo.ops.importer import ImportOptions, import_path
from memo.store import kw_postings
from memo.store.connect import write_tx
from memo.store.db import open_db
from tests.property.test_kw_postings_differential import check_postings, truth

WORDS = [f"w{i}" for i in range(300)] + ["common"] * 40 + ["Kestrel", "Lighthouse"]


def _jsonl(path: Path, n: int, seed: int = 7, start: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(start, start + n):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
            f.write(json.dumps({"id": f"r{i}", "title": f"title {rng.choice(WORDS)}", "text": text}) + "\n")
    return path


def _meta(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT key, value FROM kw_meta").fetchall())


def _base(conn: sqlite3.Connection) -> list[tuple]:
    return [tuple(r) for r in conn.execute("SELECT term, df, codes, pks, tfs, secs, dls FROM kw_base ORDER BY term")]


def test_rebuild_python_and_numpy_packing_agree_with_fts5(tmp_path, monkeypatch):
    conn = open_db(tmp_path / "m.db")
    import_path(conn, _jsonl(tmp_path / "in.jsonl", 120), ImportOptions(batch_size=50))
    with write_tx(conn):     # one passage whose word occurs 300 times: tf past one byte
        conn.execute("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, '')",
                     (10_000, " ".join(["repeated"] * 300)))
    got = {}
    for name, limit in (("python", 10**9), ("numpy", 0), ("mixed", 16)):
        monkeypatch.setattr(kw_postings, "_PY_INSTANCES", limit)
        with write_tx(conn):
            kw_postings.rebuild(conn)
        got[name] = _base(conn)
        want = truth(conn)
        for term, df, *_ in got[name]:
            assert kw_postings.term_postings(conn, term) == want[term] and df == len(want[term])
        assert {r[0] for r in got[name]} == set(want)
    assert got["python"] == got["numpy"] == got["mixed"]
    assert [r[0] for r in got["python"] if r[2][1] == "I"] == ["repeat"]     # FTS5's porter stem


def test_bulk_import_writes_no_delta_and_ends_built(tmp_path):
    conn = open_db(tmp_path / "m.db")
    rep = import_path(conn, _jsonl(tmp_path / "in.jsonl", 200), ImportOptions(batch_size=40))
    assert rep.added == 200 and rep.batches == 5
    meta = _meta(conn)
    assert meta["built"] == 1 and meta["delta"] == 0 and kw_postings.BULK_KEY not in meta
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
    check_postings(conn)


def test_small_import_into_a_larger_base_keeps_the_delta(tmp_path):
    conn = open_db(tmp_path / "m.db")
    import_path(conn, _jsonl(tmp_path / "a.jsonl", 200), ImportOptions(batch_size=40))
    generation = _meta(conn)["generation"]
    import_path(conn, _jsonl(tmp_path / "b.jsonl", 20, seed=8, start=1000), ImportOptions(batch_size=40))
    meta = _meta(conn)
    assert meta["built"] == 1 and meta["generation"] == generation      # no rebuild
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == meta["delta"] > 0
    check_postings(conn)


def test_an_import_that_outgrows_the_base_becomes_bulk_part_way(tmp_path):
    conn = open_db(tmp_path / "m.db")
    import_path(conn, _jsonl(tmp_path / "a.jsonl", 30), ImportOptions(batch_size=40))
    import_path(conn, _jsonl(tmp_path / "b.jsonl", 100, seed=9, start=1000), ImportOptions(batch_size=20))
    assert _meta(conn)["built"] == 1
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
    check_postings(conn)


def test_another_open_waits_for_the_lease_then_rebuilds(tmp_path):
    path = tmp_path / "m.db"
    conn = open_db(path)
    import_path(conn, _jsonl(tmp_path / "in.jsonl", 50), ImportOptions(batch_size=40))
    with write_tx(conn):      # a bulk import's batch, as another process holds it
        kw_postings.hold_bulk(conn)
    other = open_db(path)
    assert _meta(other)["built"] == 0 and kw_postings.bulk_held(other)    # not rebuilt under the lease
    other.close()
    with write_tx(conn):      # the importing process died: its lease runs out
        conn.execute("UPDATE kw_meta SET value = 1 WHERE key = ?", (kw_postings.BULK_KEY,))
    third = open_db(path)
    assert _meta(third)["built"] == 1
    check_postings(third)
    third.close()


def test_a_stopped_bulk_import_gives_up_its_lease(tmp_path):
    path = tmp_path / "m.db"
    conn = open_db(path)
    seen = []

    def interrupt(p):     # Ctrl-C once the first batches have committed
        seen.append(p)
        if len(seen) == 70:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_path(conn, _jsonl(tmp_path / "in.jsonl", 100), ImportOptions(batch_size=20), progress=interrupt)
    meta = _meta(conn)
    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 60      # three batches kept
    assert meta["built"] == 0 and kw_postings.BULK_KEY not in meta
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
    conn.close()
    again = open_db(path)     # the next open for writing rebuilds
    assert _meta(again)["built"] == 1
    check_postings(again)
    again.close()


def test_a_search_during_a_bulk_import_reads_fts5(tmp_path):
    """Between two batches of a bulk import another connection searches: the postings are
    not built, so the keyword arm answers from FTS5, with the committed records only; after
    the import the postings describe FTS5 again."""
    from memo.retrieve import kw_search
    from memo.search_api import search

    path = tmp_path / "m.db"
    conn = open_db(path)
    during = {}

    def look(p):
        if p.done == 50 and not during:     # two batches of 20 committed, the third pending
            reader = open_db(path, write=False)
            assert kw_search.usable(reader) is None
            reader.close()
            got = search("common Kestrel", db=path, mode="keyword", services={}, limit=100)
            during.update({r.record_id: r.score for r in got.results})

    import_path(conn, _jsonl(tmp_path / "in.jsonl", 100), ImportOptions(batch_size=20), progress=look)
    stored = {r[0]: r[1] for r in conn.execute("SELECT id, rowid FROM records")}
    assert during and set(during) <= {rid for rid, rowid in stored.items() if rowid <= 40}
    reader = open_db(path, write=False)
    assert kw_search.usable(reader) is not None
    reader.close()


def test_the_end_of_a_bulk_import_builds_outside_the_write_lock(tmp_path, monkeypatch):
    """While the new base is packed, another connection takes the write lock at once (a
    0.2 s busy timeout) and commits a passage; the staged base is then stale, so it is not
    installed: the import stages again, and the base it installs holds that passage too."""
    from memo import ops
    from memo.stored import RecordDraft

    path = tmp_path / "m.db"
    conn = open_db(path)
    real_rows, real_install = kw_postings._base_rows, kw_postings._install_staged
    installs = []

    def rows_then_write(c, sizes):
        gen = real_rows(c, sizes)
        yield next(gen)
        if not installs:
            other = sqlite3.connect(path, timeout=0.2, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")      # fails at once if the import held the lock
            other.execute("ROLLBACK")
            other.close()
            writer = open_db(path)
            ops.add_record(writer, RecordDraft(body="Kestrel backups every Friday", id="late"))
            writer.close()
        yield from gen

    def install(*args, **kw):
        installs.append(real_install(*args, **kw) is not None)
        return 1 if installs[-1] else None

    monkeypatch.setattr(kw_postings, "_base_rows", rows_then_write)
    monkeypatch.setattr(kw_postings, "_install_staged", install)
    import_path(conn, _jsonl(tmp_path / "in.jsonl", 60), ImportOptions(batch_size=20))
    assert installs == [False, True]
    meta = _meta(conn)
    assert meta["built"] == 1 and kw_postings.BULK_KEY not in meta
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
    check_postings(conn)
    assert "fridai" in {r[0] for r in conn.execute("SELECT term FROM kw_base")}     # porter: friday
