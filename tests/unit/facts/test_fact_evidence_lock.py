"""Issue 33.1: a fact's evidence is resolved before the write transaction, by index
lookups, within documented caps; what was resolved is re-checked inside the transaction so
nothing dangling is stored.  The cross-process timing is tests/reliability/test_fact_evidence_lock.py."""

from __future__ import annotations

import sqlite3

import pytest

from memo import ops
from memo.errors import ValidationError
from memo.ops import facts as fops
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.facts import resolve_evidence
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from memo.text.limits import MAX_ENTITIES, MAX_EVIDENCE_IDS, MAX_EVIDENCE_PASSAGES, MAX_IDS, MAX_TAGS


@pytest.fixture
def conn(backend_db):
    c = open_db(backend_db)
    yield c
    c.close()


def _rec(conn, n: int, ns: str = "default", tag: str = "r") -> str:
    ps = tuple(PassageDraft(text=f"passage {tag} {i}", ext_id=f"{tag}:{i}") for i in range(n))
    with write_tx(conn):
        return insert_record(conn, RecordDraft(body=f"record {tag}", namespace=ns, ext_id=f"doc-{tag}",
                                               kind="conversation", passages=ps), ps)


def _facts(conn) -> int:
    return conn.execute("SELECT count(*) FROM facts").fetchone()[0]


@pytest.mark.sqlite_only
def test_resolution_runs_before_the_write_transaction_and_never_scans(conn: sqlite3.Connection) -> None:
    rid = _rec(conn, 3, ns="a")
    _rec(conn, 3, ns="b", tag="s")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    refs = (f"{rid}:0", rid, "doc-r", "r:1", "doc-s", "s:2", "no-such-id", "no-such-ext")
    with pytest.raises(ValidationError, match="no-such-id.*no-such-ext"):
        fops.add_fact(conn, FactDraft(text="x", evidence=refs, namespace="a"), embed=False)
    conn.set_trace_callback(None)
    assert "BEGIN IMMEDIATE" not in statements     # refused before the writers' queue
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")
             and "sqlite_schema" not in s]      # read_tx's snapshot read: a handful of rows
    assert len(reads) >= len(refs)
    for sql in reads:
        plan = " | ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "SCAN" not in plan, (sql, plan)

    statements.clear()
    conn.set_trace_callback(statements.append)
    fops.add_fact(conn, FactDraft(text="y", evidence=refs[:6], namespace="a"), embed=False)
    conn.set_trace_callback(None)
    begin = statements.index("BEGIN IMMEDIATE")
    inside = statements[begin:]
    assert not any("ext_id" in s for s in inside), inside    # no lookup by id inside the lock


def test_evidence_forgotten_after_resolution_is_refused_inside_the_write(conn, backend_db, monkeypatch) -> None:
    keep, gone = _rec(conn, 1, tag="k"), _rec(conn, 2, tag="g")
    real = fops._resolve

    def resolve_then_forget(c, draft):  # another writer forgets one record in between
        out = real(c, draft)
        other = open_db(backend_db)
        try:
            ops.forget(other, [gone])
        finally:
            other.close()
        return out

    monkeypatch.setattr(fops, "_resolve", resolve_then_forget)
    with pytest.raises(ValidationError, match=f"{gone}:0.*forgotten or deleted"):
        fops.add_fact(conn, FactDraft(text="cites both", evidence=(keep, gone)), embed=False)
    assert _facts(conn) == 0
    assert conn.execute("SELECT count(*) FROM fact_evidence").fetchone()[0] == 0


def test_evidence_list_over_its_cap_is_refused_before_any_lookup(conn) -> None:
    rid = _rec(conn, 1)
    over = tuple(f"{rid}:0" for _ in range(MAX_EVIDENCE_IDS + 1))
    with pytest.raises(ValidationError, match=f"{MAX_EVIDENCE_IDS + 1} evidence ids.*cap of {MAX_EVIDENCE_IDS}"):
        fops.add_fact(conn, FactDraft(text="too many", evidence=over), embed=False)
    assert fops.add_fact(conn, FactDraft(text="at the cap", evidence=over[:-1]), embed=False).status == "added"
    fid = fops.list_facts(conn)[0].id
    with pytest.raises(ValidationError, match="cap"):
        fops.supersede_fact(conn, fid, "new text", evidence=over)
    report = fops.import_facts(conn, [("line 1", FactDraft(text="imported", evidence=over))], embed=False)
    assert report.added == 0 and "cap" in report.rejected[0][1]


def test_evidence_resolving_to_too_many_passages_is_refused(conn) -> None:
    big = _rec(conn, MAX_EVIDENCE_PASSAGES + 1, tag="big")
    with pytest.raises(ValidationError, match=f"more than {MAX_EVIDENCE_PASSAGES:,} passages"):
        resolve_evidence(conn, (big,), "default")
    with pytest.raises(ValidationError, match="passages"):
        fops.add_fact(conn, FactDraft(text="a whole book", evidence=(big,)), embed=False)
    assert _facts(conn) == 0
    assert fops.add_fact(conn, FactDraft(text="one page", evidence=(f"{big}:7",)), embed=False).status == "added"


def test_tags_entities_and_forget_ids_have_caps(conn) -> None:
    with pytest.raises(ValidationError, match=f"{MAX_TAGS + 1} tags"):
        ops.add_record(conn, RecordDraft(body="tagged", tags=tuple(f"t{i}" for i in range(MAX_TAGS + 1))))
    with pytest.raises(ValidationError, match=f"{MAX_ENTITIES + 1} entities"):
        ops.add_record(conn, RecordDraft(body="named", meta={"entities": [f"E{i}" for i in range(MAX_ENTITIES + 1)]}))
    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 0
    rid = ops.add_record(conn, RecordDraft(body="ok", tags=tuple(f"t{i}" for i in range(MAX_TAGS)))).record_id
    with pytest.raises(ValidationError, match="tags"):
        ops.supersede(conn, rid, "ok 2", tags=tuple(f"t{i}" for i in range(MAX_TAGS + 1)))
    ids = [rid, *(f"r-missing-{i}" for i in range(MAX_IDS))]
    with pytest.raises(ValidationError, match=f"{MAX_IDS + 1:,} record ids"):
        ops.forget(conn, ids, confirm=True)
    with pytest.raises(ValidationError, match=f"{MAX_IDS + 1:,} fact ids"):
        fops.forget_facts(conn, [f"f{i}" for i in range(MAX_IDS + 1)], confirm=True)
