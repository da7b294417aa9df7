"""The arm interface.  Every arm (keyword, exact, semantic, fact, entity, graph) is a
value with a name, a routing decision and a run function; the pipeline stages never
know which arms exist.  New arms plug in by being added to ``memo.retrieve.arms.ARMS``.

Contract:
* ``plan(ctx)`` returns an ``ArmPlan``: whether the arm runs for this request, a short
  human reason either way ("mode exact", "query names no identifier"), and ``degraded``
  when the arm *should* have run but could not (model missing, no vectors yet): the
  pipeline then sets ``degraded{flag, reason}`` in the response.
* ``run(ctx)`` returns at most ``ctx.fetch_depth`` ``ArmHit`` s, best first, rank 1-based,
  with the scope filter already applied *inside* the arm's query (``ctx.scope_sql``),
  before its top-k.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Protocol

from memo.profile import Profile
from memo.retrieve.scope import ScopeSQL
from memo.retrieve.services import ArmServices
from memo.retrieve.types import ArmHit
from memo.types import ARM_NAMES, ArmName, Scope

# ARM_NAMES / ArmName live in memo.types, ScopeSQL in memo.retrieve.scope and ArmHit in
# memo.retrieve.types (values the pipeline's lower modules need without importing the arm
# registry); re-exported here, the arms' one import.
__all__ = ["ARM_NAMES", "Arm", "ArmContext", "ArmHit", "ArmName", "ArmPlan", "ScopeSQL"]


@dataclass(frozen=True, slots=True)
class ArmContext:
    conn: sqlite3.Connection
    query: str
    mode: str                      # auto | keyword | exact | semantic
    scope_sql: ScopeSQL
    fetch_depth: int
    # What the arms share (memo.retrieve.services: the semantic service, a precomputed
    # query vector, the graph cache, the arm-hit cache flag); an arm reports "not
    # available" when what it needs is None.
    services: ArmServices = ArmServices()
    scope: Scope = Scope()         # the request's scope (the fact arm filters facts by it too)
    # Per-search scratch shared by the arms (the query vector is embedded once; the
    # entity/graph routing decision is made once).
    memo: dict[str, Any] = field(default_factory=dict)
    profile: Profile | None = None # the search's profile (entity/graph arms: [entities], [graph])

    def __post_init__(self) -> None:
        # Transition: callers that still pass the old services dict get it typed here.
        if not isinstance(self.services, ArmServices):
            object.__setattr__(self, "services", ArmServices.of(self.services))


@dataclass(frozen=True, slots=True)
class ArmPlan:
    runs: bool
    reason: str
    degraded: bool = False


class Arm(Protocol):
    name: ArmName

    def plan(self, ctx: ArmContext) -> ArmPlan: ...

    def run(self, ctx: ArmContext) -> list[ArmHit]: ...
