"""``memo list --from/--to`` (MCP memory_list date_from/date_to): the records with a passage
dated in the range, read as a search's --from/--to reads it (memo.retrieve.scope.date_range).
"What is in my notes for that day" had no command: list had no dates, and a search for a day
with a question in no note's words abstained."""

from __future__ import annotations

import pytest

from memo import ops
from memo.errors import ValidationError
from memo.ops.records import ListFilter
from memo.stored import RecordDraft


def _ids(conn, **kw) -> list[str]:  # noqa: ANN001
    return [r.id for r in ops.list_records(conn, ListFilter(**kw))]


def test_list_by_date(fresh_db) -> None:  # noqa: ANN001
    day = {d: ops.add_record(fresh_db, RecordDraft(body=f"Worked on the ingest service, day {d}.",
                                                   event_at=f"2024-03-{d:02d}")).record_id for d in (4, 5, 6)}
    chat = ops.add_record(fresh_db, RecordDraft(
        body="[2024-02-01 10:00] Ana: hello\n[2024-03-05 09:00] Ana: back again", kind="conversation")).record_id
    assert sorted(_ids(fresh_db, date_from="2024-03-05", date_to="2024-03-05")) == sorted([chat, day[5]])
    assert sorted(_ids(fresh_db, date_from="2024-03-05")) == sorted([chat, day[5], day[6]])
    assert sorted(_ids(fresh_db, date_to="2024-03")) == sorted([chat, *day.values()])   # a month: all of it
    assert _ids(fresh_db, date_from="2024-01", date_to="2024-01") == []
    with pytest.raises(ValidationError, match="date range is empty"):
        _ids(fresh_db, date_from="2024-03-06", date_to="2024-03-05")
