"""The arm registry.  The pipeline runs every arm in ``ARMS`` (in this order) and asks each
one's ``plan`` whether it runs; adding an arm = adding it here (and a weight in profiles)."""

from __future__ import annotations

from memo.retrieve.arms.base import Arm, ArmContext, ArmHit, ArmPlan, ScopeSQL
from memo.retrieve.arms.entity import EntityArm
from memo.retrieve.arms.exact import ExactArm
from memo.retrieve.arms.fact import FactArm
from memo.retrieve.arms.graph import GraphArm
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.arms.semantic import SemanticArm

ARMS: tuple[Arm, ...] = (SemanticArm(), KeywordArm(), ExactArm(), FactArm(), EntityArm(), GraphArm())

__all__ = ["ARMS", "Arm", "ArmContext", "ArmHit", "ArmPlan", "ScopeSQL"]
