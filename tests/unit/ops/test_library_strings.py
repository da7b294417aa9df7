"""The library called as a Python user calls it (the library probe): one id, one tag or one
evidence id given as a string is that one value, not its characters; a misspelled search
field says which it meant."""

from __future__ import annotations

import pytest

import memo
from memo import ops
from memo.ops.facts import add_fact
from memo.stored import FactDraft, RecordDraft


def test_one_value_as_a_string_is_that_value(fresh_db) -> None:
    rid = ops.add_record(fresh_db, RecordDraft(body="Kestrel DB backups run on Fridays.", tags="backup")).record_id
    assert ops.get(fresh_db, rid).tags == ("backup",)
    fact = add_fact(fresh_db, FactDraft(text="Backups are weekly", evidence=rid), embed=False)
    assert fact.status == "added" and fact.evidence == (f"{rid}:0",)
    assert ops.forget(fresh_db, rid).forgotten == (rid,)


def test_a_misspelled_search_field_names_the_one_meant(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"namespace \(did you mean namespaces\?\)"):
        memo.search("backups", db=tmp_path / "none.db", namespace="ops")
