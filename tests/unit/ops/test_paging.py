"""The list operations refuse a limit or offset SQL cannot bind with a ValidationError
(it was an OverflowError traceback through MCP, found by the hostile-arguments fuzz)."""

from __future__ import annotations

import pytest

from memo.errors import ValidationError
from memo.ops.entities import list_entities
from memo.ops.facts import list_facts
from memo.ops.paging import MAX_PAGE_INT
from memo.ops.records import ListFilter, list_records
from memo.store.db import open_db

LISTS = {
    "records": lambda c, limit, offset: list_records(c, ListFilter(limit=limit, offset=offset)),
    "facts": lambda c, limit, offset: list_facts(c, limit=limit, offset=offset),
    "entities": lambda c, limit, offset: list_entities(c, limit=limit, offset=offset),
}


@pytest.mark.parametrize("name", LISTS)
@pytest.mark.parametrize(("limit", "offset"), [(2**64, 0), (10, 2**64), (0, 0), (10, -1), (MAX_PAGE_INT + 1, 0)])
def test_out_of_range_paging_is_a_validation_error(tmp_path, name, limit, offset):
    conn = open_db(tmp_path / "m.db")
    with pytest.raises(ValidationError, match="limit must be"):
        LISTS[name](conn, limit, offset)


@pytest.mark.parametrize("name", LISTS)
def test_the_largest_offset_is_served(tmp_path, name):
    conn = open_db(tmp_path / "m.db")
    assert len(LISTS[name](conn, 1, MAX_PAGE_INT)) == 0
