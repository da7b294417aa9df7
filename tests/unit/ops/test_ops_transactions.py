"""Every write made by an operation happens inside memo's write transaction: BEGIN
IMMEDIATE ... COMMIT on SQLite; on PostgreSQL BEGIN, the writers' advisory lock, ... COMMIT."""

from memo import ops
from memo.store.dialect import is_postgres
from memo.stored import RecordDraft
from tests.unit.ops.statements import is_write_begin, traced

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def _check_writes_in_immediate_tx(conn, statements):
    pg = is_postgres(conn)
    open_tx = False
    writes = 0
    for s in statements:
        head = s.lstrip().split(None, 1)[0].upper() if s.strip() else ""
        if s.startswith("BEGIN"):
            # SQLite: BEGIN IMMEDIATE, or a plain BEGIN for a read snapshot (an add's search
            # for a near-identical record, memo.ops.near_dup) in which no write may happen.
            assert pg or s in ("BEGIN IMMEDIATE", "BEGIN"), s
            open_tx = is_write_begin(conn, s)      # PostgreSQL: a REPEATABLE READ read is no write tx
            locked = not pg
        elif "pg_advisory_xact_lock" in s:
            locked = True
        elif head in ("COMMIT", "ROLLBACK"):
            open_tx = False
        elif head in WRITES:
            assert open_tx and locked, f"write outside a transaction: {s[:80]}"
            writes += 1
    assert not open_tx
    return writes


def test_every_operation_writes_inside_begin_immediate(fresh_db, tmp_path, monkeypatch):
    with traced(fresh_db, monkeypatch) as statements:
        a = ops.add_record(fresh_db, RecordDraft(body="alpha", tags=("t",))).record_id
        b = ops.add_record(fresh_db, RecordDraft(body="beta")).record_id
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "x.md").write_text("# X\ntext")
        ops.import_path(fresh_db, tmp_path / "d")
        new = ops.supersede(fresh_db, a, "alpha two").new_id
        ops.forget(fresh_db, [new, b], confirm=True)
        ops.purge(fresh_db, confirm=True)
        ops.reindex(fresh_db)
    assert _check_writes_in_immediate_tx(fresh_db, statements) > 10
