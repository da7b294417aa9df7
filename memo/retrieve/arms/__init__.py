"""The arm registry.  The pipeline runs every arm in ``ARMS`` (in this order) and asks each
one's ``plan`` whether it runs; adding an arm = adding it here (and a weight in profiles)."""

from __future__ import annotations

from typing import Any

from memo.retrieve.arms.base import Arm, ArmContext, ArmHit, ArmPlan, ScopeSQL, VoteEvidence
from memo.retrieve.arms.entity import EntityArm
from memo.retrieve.arms.exact import ExactArm
from memo.retrieve.arms.fact import FactArm
from memo.retrieve.arms.graph import GraphArm
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.arms.semantic import SemanticArm

ARMS: tuple[Arm, ...] = (SemanticArm(), KeywordArm(), ExactArm(), FactArm(), EntityArm(), GraphArm())
BY_NAME: dict[str, Arm] = {a.name: a for a in ARMS}


_WEIGH = {a.name: a.weigh for a in ARMS}   # bound once: weigh runs for every vote of every candidate
# What a vote shows depends on its arm, raw score and votes only (never on the fusion's
# contribution), and VoteEvidence is immutable: abstention and relevance ask it for every
# vote of every candidate, and an eval grid asks it again for the same hits in every run.
_SHOWN: dict[tuple[str, float, tuple[Any, ...]], VoteEvidence] = {}
_SHOWN_MAX = 1 << 16


def weigh(arm: str, ev: Any) -> VoteEvidence:
    """What one arm's vote shows (the arm's own ``weigh``): abstention and relevance read this."""
    key = (arm, ev.raw, ev.votes)
    try:
        return _SHOWN[key]
    except KeyError:
        pass
    except TypeError:               # a vote that cannot be hashed: weighed every time
        return _WEIGH[arm](ev)
    shown = _WEIGH[arm](ev)
    if len(_SHOWN) >= _SHOWN_MAX:
        _SHOWN.clear()
    _SHOWN[key] = shown
    return shown


__all__ = ["ARMS", "BY_NAME", "Arm", "ArmContext", "ArmHit", "ArmPlan", "ScopeSQL", "weigh"]
