"""Values that flow through the search pipeline (all immutable).

Per-candidate values are ``NamedTuple`` s (immutable and ~5x cheaper to build than frozen
dataclasses: a query fuses a few hundred of them, and eval replay needs >= 300 queries/s);
request, response, results and trace records are frozen, slotted dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from memo.types import MODES, Mode, Scope  # noqa: F401  (re-exported: the names live in memo.types)

FORMATS: tuple[str, ...] = ("compact", "explain")
DropReason = Literal["scope", "abstention", "cutoff", "limit", "budget"]
CutoffKind = Literal["gap", "none", "disabled", "min_results"]


@dataclass(frozen=True, slots=True)
class ArmHit:
    """One passage an arm found (re-exported by ``memo.retrieve.arms.base``)."""

    pk: int          # passages.pk
    rank: int        # 1-based, within this arm
    raw: float       # the arm's own score (bm25 negated so higher is better; cosine; ...)
    votes: tuple[Any, ...] = ()   # what voted for the passage (fact arm: FactVote s, best first)


# --- request ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    scope: Scope = Scope()
    mode: str = "auto"
    limit: int | None = None            # None = profile.limit.default; at most profile.limit.max
    max_tokens: int | None = None       # None = profile.budget.max_tokens
    response_format: str = "compact"    # "explain" adds ``why`` to every result
    now: str | None = None              # ISO time for recency (default: current UTC)


# --- per-candidate values (stages 2-8) ------------------------------------------------
class Evidence(NamedTuple):
    """One arm's vote for a passage."""

    rank: int
    raw: float
    contribution: float
    votes: tuple[Any, ...] = ()     # fact arm: the facts that voted (memo.retrieve.arms.fact.FactVote)


class Candidate(NamedTuple):
    pk: int
    arms: dict[str, Evidence]   # insertion order = arm order; fused = sum in that order
    fused: float
    factor: float = 1.0         # recency factor
    score: float = 0.0          # fused * factor * speaker * dated * headed * context (left to right)
    tiebreak: float = 0.0       # orders equal scores (rrf: the min-max fused score); never scored
    speaker: float = 1.0        # speaker factor: 1 + speaker.boost when the query names its speaker
    dated: float = 1.0          # date factor: 1 + dates.boost when it is dated in a period the query names
    headed: float = 1.0         # heading factor: 1 + heading.boost when its heading names a query identifier
    context: float = 1.0        # context factor: 1 + context.boost x its record's share of the best candidates


class Meta(NamedTuple):
    """Record fields the middle stages need (fetched in one query for all candidates)."""

    kind: str
    namespace: str
    source: str | None
    tokens: int
    when: str | None            # passage event_at, else record event_at, else recorded_at
    speaker: str | None = None  # who said it (a conversation turn's speaker)
    section: str = ""           # section path (headings joined by " > "; a code symbol's qualified name)
    record: str = ""            # its record's id (stage 4e: passages of one record share a context)


@dataclass(frozen=True, slots=True)
class ArmRun:
    """Stage 2 output for one arm."""

    name: str
    ran: bool
    reason: str
    degraded: bool
    hits: tuple[ArmHit, ...]
    latency_ms: float


# --- response ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ArmWhy:
    rank: int
    raw: float
    contribution: float
    votes: tuple[Any, ...] | None = None   # fact arm: the voting facts (id, text, rank, scores)


@dataclass(frozen=True, slots=True)
class Why:
    arms: dict[str, ArmWhy]
    fused: float
    recency_factor: float
    final: float                # fused * recency * speaker * date * heading * context factors, in that order
    relevance: float | None
    band: str | None
    tiebreak: float
    provenance: dict[str, Any]
    freshness: dict[str, Any]
    speaker_factor: float = 1.0     # 1 + speaker.boost when the query names this passage's speaker
    speaker: str | None = None      # that speaker (None: not boosted)
    date_factor: float = 1.0        # 1 + dates.boost when the passage is dated in a period the query names
    period: str | None = None       # that period's label ("2023-07", "2023-10-13", "*-06"; None: not boosted)
    heading_factor: float = 1.0     # 1 + heading.boost when the passage's heading names an identifier of the query
    heading: str | None = None      # that heading's name, case-folded ("fs.readfile"; None: not boosted)
    context_factor: float = 1.0     # 1 + context.boost x its record's share of the best candidates (stage 4e)


@dataclass(frozen=True, slots=True)
class Result:
    passage_id: str
    pk: int
    record_id: str
    text: str
    section: str
    kind: str
    namespace: str
    score: float
    relevance: float | None
    band: str | None
    tokens: int
    why: Why | None = None


@dataclass(frozen=True, slots=True)
class ArmTrace:
    name: str
    ran: bool
    reason: str
    candidates: int
    latency_ms: float
    matched: int | None = None      # fact arm: distinct facts that voted for its candidates


@dataclass(frozen=True, slots=True)
class Drop:
    stage: str              # scope | abstention | cutoff | limit | budget
    reason: str
    count: int
    passage_pks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Trace:
    profile: str
    fusion: str
    mode: str
    model_id: str | None
    arms: tuple[ArmTrace, ...]
    filter: dict[str, int]          # passages in scope / total
    candidates: int                 # fused candidates (distinct passages over all arms)
    cutoff_kind: str
    budget: dict[str, int]          # used / max tokens
    degraded: dict[str, Any]        # {flag, reason}
    drops: tuple[Drop, ...]
    latency_ms: float
    limit: int = 0
    stage_ms: dict[str, float] = field(default_factory=dict)   # wall time per stage
    notes: tuple[str, ...] = ()     # what the pipeline changed in the request (query cut...)
    speakers: tuple[str, ...] = ()  # candidates' speakers the query names (their passages boosted)
    periods: tuple[str, ...] = ()   # periods the query names (passages dated in them boosted)
    identifiers: tuple[str, ...] = ()  # identifiers the query names, case-folded (passages headed by them boosted)


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    results: tuple[Result, ...]
    abstained: bool                 # only when the abstention stage emptied the list
    cause: str | None               # why the list is empty (memo.retrieve.empty.EMPTY_CAUSES), else None
    reason: str | None
    hint: str | None
    truncated: int
    narrow_hint: dict[str, Any] | None
    trace: Trace
