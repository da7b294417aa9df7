"""memo.dc_pickle: the records an import's workers send back pickle as constructor calls and
come back equal (and ``copy`` rebuilds them the same way)."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import pytest

from memo.dc_pickle import by_fields
from memo.ops.prepare_pool import Outcome, prepare_one
from memo.stored import RecordDraft
from memo.text.entities import EntityMention


def test_prepared_records_round_trip_through_pickle_and_copy(tmp_path) -> None:
    draft = RecordDraft(body="# Guide\n\nAlice Moreau joined the Lighthouse project. Kestrel DB stores it.\n\n"
                             "## Later\n\nBruno Ferreira maintains Kestrel DB backups.", kind="doc",
                        title="Guide", import_path="guide.md", meta={"entities": ["Project X"]}, tags=("a", "b"))
    got = prepare_one(draft, tmp_path, True)
    assert got.prepared is not None and any(p.mentions for p in got.prepared.passages)
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(got, protocol=proto))
        assert back == got and type(back.prepared.passages[0].mentions[0]) is EntityMention
    assert copy.deepcopy(got) == got and copy.copy(got) == got
    assert pickle.loads(pickle.dumps(Outcome(rejected="bad"))) == Outcome(rejected="bad")
    m = EntityMention("kestrel db", "Kestrel DB", "name", 2)
    assert pickle.loads(pickle.dumps(m)) == m


def test_a_field_outside_init_is_refused() -> None:
    with pytest.raises(TypeError, match="outside __init__"):
        @by_fields
        @dataclass(frozen=True, slots=True)
        class Bad:
            a: int
            b: list = field(default_factory=list, init=False)
