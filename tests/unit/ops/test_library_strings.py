"""The library called as a Python user calls it (the library probe): a string where a list of
ids goes is refused (it was read as its characters: "no record with id 'r'"), as tags are
(tests/unit/ops/test_ops_add_records.py); a misspelled search field says which it meant."""

from __future__ import annotations

import pytest

import memo
from memo import ops
from memo.errors import ValidationError
from memo.ops.facts import add_fact
from memo.stored import FactDraft, RecordDraft


def test_a_string_where_a_list_of_ids_goes_is_refused(fresh_db) -> None:
    rid = ops.add_record(fresh_db, RecordDraft(body="Kestrel DB backups run on Fridays.")).record_id
    with pytest.raises(ValidationError, match="evidence must be a list of ids"):
        add_fact(fresh_db, FactDraft(text="Backups are weekly", evidence=rid), embed=False)
    with pytest.raises(ValidationError, match="record ids must be a list"):
        ops.forget(fresh_db, rid)
    assert ops.forget(fresh_db, [rid]).forgotten == (rid,)


def test_a_misspelled_search_field_names_the_one_meant(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"namespace \(did you mean namespaces\?\)"):
        memo.search("backups", db=tmp_path / "none.db", namespace="ops")
