"""Every write made by an operation happens inside BEGIN IMMEDIATE ... COMMIT."""

import pytest

from memo import ops
from memo.types import RecordDraft

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def _check_writes_in_immediate_tx(statements):
    open_tx = False
    writes = 0
    for s in statements:
        head = s.lstrip().split(None, 1)[0].upper() if s.strip() else ""
        if s.startswith("BEGIN"):
            assert s == "BEGIN IMMEDIATE", s
            open_tx = True
        elif head in ("COMMIT", "ROLLBACK"):
            open_tx = False
        elif head in WRITES:
            assert open_tx, f"write outside a transaction: {s[:80]}"
            writes += 1
    assert not open_tx
    return writes


@pytest.mark.sqlite_only   # reads SQLite's statement trace (set_trace_callback) for BEGIN IMMEDIATE
def test_every_operation_writes_inside_begin_immediate(fresh_db, tmp_path):
    statements: list[str] = []
    fresh_db.set_trace_callback(statements.append)
    a = ops.add_record(fresh_db, RecordDraft(body="alpha", tags=("t",))).record_id
    b = ops.add_record(fresh_db, RecordDraft(body="beta")).record_id
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.md").write_text("# X\ntext")
    ops.import_path(fresh_db, tmp_path / "d")
    new = ops.supersede(fresh_db, a, "alpha two").new_id
    ops.forget(fresh_db, [new, b], confirm=True)
    ops.purge(fresh_db, confirm=True)
    ops.reindex(fresh_db)
    assert _check_writes_in_immediate_tx(statements) > 10
