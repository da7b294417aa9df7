"""The arm interface.  Every arm (keyword, exact, semantic, fact, entity, graph) is a
value with a name, declarations, a routing decision and a run function; the pipeline stages
never know which arms exist.  New arms plug in by being added to ``memo.retrieve.arms.ARMS``.

Contract:
* ``evidence``: the kinds of evidence its votes carry (``lexical``: the query's words were
  found; ``semantic``: a similarity was measured; ``structural``: named things of the corpus
  were found).  ``weigh(ev)`` says what one vote shows (``VoteEvidence``); abstention and
  relevance read that, never an arm's name.  ``default_weigh`` derives it from ``evidence``.
* ``reads``: the profile keys or whole sections its hits depend on (``"fact"``,
  ``"retrieve.fetch_depth"``); the arm-hit cache keys each arm's hits by their values.
* ``plan(ctx)`` returns an ``ArmPlan``: whether the arm runs for this request, a short
  human reason either way ("mode exact", "query names no identifier"), and ``degraded``
  when the arm *should* have run but could not (model missing, no vectors yet): the
  pipeline then sets ``degraded{flag, reason}`` in the response.
* ``run(ctx)`` returns at most ``ctx.fetch_depth`` ``ArmHit`` s, best first, rank 1-based,
  with the scope filter already applied *inside* the arm's query (``ctx.scope_sql``),
  before its top-k.
* ``needs_model``: its plan or run may wait for the embedding model (the query vector);
  ``after``: the arms whose hits it reads (``ctx.scratch.hits``).  ``memo.retrieve.run_arms``
  runs the arms that need neither first, so a cold process's model load overlaps them.
* ``prepare(ctx)`` (optional): the part of ``run`` that needs neither the model nor another
  arm's hits, done ahead while the model loads (into ``ctx.scratch.prepared[name]``, which
  ``run`` takes, or a warmed cache); called before ``plan``, so it checks cheaply itself
  whether the arm will run, and never waits for the model.  Same hits with or without it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from memo.profile import Profile
from memo.retrieve.scope import ScopeSQL
from memo.retrieve.services import ArmServices
from memo.retrieve.types import ArmHit
from memo.types import ARM_NAMES, ArmName, Scope

# ARM_NAMES / ArmName live in memo.types, ScopeSQL in memo.retrieve.scope and ArmHit in
# memo.retrieve.types (values the pipeline's lower modules need without importing the arm
# registry); re-exported here, the arms' one import.
__all__ = ["ARM_NAMES", "Arm", "ArmContext", "ArmHit", "ArmName", "ArmPlan", "EvidenceKind", "Scratch", "ScopeSQL",
           "VoteEvidence", "default_weigh"]

EvidenceKind = Literal["lexical", "semantic", "structural"]


@dataclass(slots=True)
class Scratch:
    """Per-search work the arms share, computed once (``memo.retrieve.arms.shared``)."""

    route: Any = None              # memo.retrieve.route.Route: the entity/graph routing decision
    embedded: tuple[str, tuple[str, ...]] | None = None   # (text the semantic arm embeds, names left out)
    query_vector: Any = None       # the typed query's unit vector
    own_vector: Any = None         # the embedded text's vector when it is not the typed query
    # The hits of the arms that already ran, by arm name (memo.retrieve.run_arms): the graph
    # arm's title hop reads the keyword and semantic arms' best (graph.title_hits).
    hits: dict[str, tuple[ArmHit, ...]] = field(default_factory=dict)
    # What an arm's prepare() computed ahead of its run(), by arm name (taken by run()).
    prepared: dict[str, Any] = field(default_factory=dict)


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
    scratch: Scratch = field(default_factory=Scratch)
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


@dataclass(frozen=True, slots=True)
class VoteEvidence:
    """What one arm's vote for a passage shows (``Arm.weigh``), as abstention and relevance
    read it."""

    lexical: bool = False                  # the passage matched the query's words (coverage is measured on it)
    cosines: tuple[float, ...] = ()        # the passage's similarity to the query (as typed and as embedded)
    fact_ids: tuple[str, ...] = ()         # facts matched by words (coverage is measured on their text)
    fact_cosines: tuple[float, ...] = ()   # facts' similarity to the query
    structural: bool = False               # named things of the corpus were found


_LEXICAL = VoteEvidence(lexical=True)
_STRUCTURAL = VoteEvidence(structural=True)


def default_weigh(kinds: frozenset[str], ev: Any) -> VoteEvidence:
    """A vote's evidence from the arm's declared kinds alone: structural beats lexical
    beats semantic (the raw score is then the cosine)."""
    if "structural" in kinds:
        return _STRUCTURAL
    if "lexical" in kinds:
        return _LEXICAL
    return VoteEvidence(cosines=(ev.raw,))


class Arm(Protocol):
    name: ArmName
    evidence: frozenset[EvidenceKind]
    reads: tuple[str, ...]
    needs_model: bool
    after: tuple[ArmName, ...]

    def plan(self, ctx: ArmContext) -> ArmPlan: ...

    def run(self, ctx: ArmContext) -> list[ArmHit]: ...

    def weigh(self, ev: Any) -> VoteEvidence: ...
