from __future__ import annotations

import pytest

from memo.errors import ProfileError, ValidationError
from memo_eval.grid import expand, parse_set, parse_value


def test_values():
    assert parse_value("20") == 20 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("rrf") == "rrf"
    assert parse_set("fusion.k=20, 60,100") == ("fusion.k", [20, 60, 100])
    assert parse_set("recency.aging_kinds=note,conversation") == ("recency.aging_kinds", ["note,conversation"])


def test_cartesian():
    notes: list[str] = []
    specs = expand(["rrf", "minmax"], ["fusion.k=20,60,100", "weights.semantic=0.3,0.5,0.7"], notes=notes)
    # fusion.k has no effect under minmax: 9 rrf points + 3 minmax points, with a note
    assert len(specs) == 12 and len({s.key for s in specs}) == 12
    assert specs[0].overrides == (("fusion.k", 20), ("weights.semantic", 0.3))
    assert specs[0].load().fusion.k == 20
    assert [s.overrides for s in specs if s.profile == "minmax"] == [(("weights.semantic", v),) for v in (0.3, 0.5, 0.7)]
    assert notes == ["minmax: fusion.k has no effect under fusion.method = minmax; skipped --set fusion.k=20,60,100"]
    assert expand(["rrf"], [])[0].label == "rrf"
    # mode keyword: no semantic arm, so its weight is no axis
    notes = []
    assert len(expand(["rrf"], ["weights.semantic=0.3,0.5"], mode="keyword", notes=notes)) == 1 and notes
    # fusion.method on an axis: k is kept (it matters to the rrf points)
    assert len(expand(["minmax"], ["fusion.method=rrf,minmax", "fusion.k=20,60"])) == 4


def test_bad_sets():
    with pytest.raises(ValidationError):
        parse_set("fusion.k")
    with pytest.raises(ProfileError):
        expand(["rrf"], ["fusion.kk=3"])
    with pytest.raises(ValidationError):
        expand(["rrf"], ["fusion.k=1", "fusion.k=2"])
