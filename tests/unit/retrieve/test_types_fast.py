"""The hot records' positional constructors (memo.retrieve.types.new_*) build exactly what
the dataclasses' own constructors build: equal, same type, still frozen."""

from __future__ import annotations

import dataclasses

import pytest

from memo.retrieve.types import ArmWhy, Factor, Result, Why, new_arm_why, new_result, new_why


def _values(cls):
    return {f.name: f"{f.name}-value" for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("cls", "new"), [(ArmWhy, new_arm_why), (Why, new_why), (Result, new_result)])
def test_positional_constructor_equals_the_dataclass(cls, new):
    values = _values(cls)
    fast = new(*values.values())
    slow = cls(**values)
    assert type(fast) is cls and fast == slow and hash(repr(fast)) == hash(repr(slow))
    name = next(iter(values))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(fast, name, "changed")


def test_constructors_cover_every_field_in_order():
    """A field added to a record must reach its constructor (the arity is the slots')."""
    arms = {"keyword": new_arm_why(1, 2.5, 0.25, None)}
    why = new_why(arms, 0.25, (Factor("recency", 0.9, "3 days old"),), 0.225, 0.61, "strong", 0.0,
                  {"source": "s"}, {"age_days": 3.0}, None)
    assert why == Why(arms=arms, fused=0.25, factors=(Factor("recency", 0.9, "3 days old"),), final=0.225,
                      relevance=0.61, band="strong", tiebreak=0.0, provenance={"source": "s"},
                      freshness={"age_days": 3.0}, fusion=None)
    with pytest.raises(TypeError):
        new_result(*range(len(dataclasses.fields(Result)) - 1))
