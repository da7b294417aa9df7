from __future__ import annotations

import pytest

from eval.grid import expand, parse_set, parse_value
from memo.errors import ProfileError, ValidationError


def test_values():
    assert parse_value("20") == 20 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("rrf") == "rrf"
    assert parse_set("fusion.k=20, 60,100") == ("fusion.k", [20, 60, 100])
    assert parse_set("recency.aging_kinds=note,conversation") == ("recency.aging_kinds", ["note,conversation"])


def test_cartesian():
    specs = expand(["rrf", "minmax"], ["fusion.k=20,60,100", "weights.semantic=0.3,0.5,0.7"])
    assert len(specs) == 18
    assert specs[0].overrides == (("fusion.k", 20), ("weights.semantic", 0.3))
    assert len({s.key for s in specs}) == 18
    assert specs[0].load().fusion.k == 20
    assert expand(["rrf"], [])[0].label == "rrf"


def test_bad_sets():
    with pytest.raises(ValidationError):
        parse_set("fusion.k")
    with pytest.raises(ProfileError):
        expand(["rrf"], ["fusion.kk=3"])
    with pytest.raises(ValidationError):
        expand(["rrf"], ["fusion.k=1", "fusion.k=2"])
