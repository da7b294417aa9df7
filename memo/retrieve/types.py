"""Values that flow through the search pipeline (all immutable).

Per-candidate values are ``NamedTuple`` s (immutable and several times cheaper to build than
frozen dataclasses, docs/results-log.md "Per-candidate values": a query fuses a few hundred of
them, and eval replay needs >= 300 queries/s);
request, response, results and trace records are frozen, slotted dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    # For bulk readers (the eval harness): the response's results are stage 9's table
    # (memo.retrieve.result_table.ResultTable: its columns, Result objects built only when
    # asked for) instead of a tuple of Result.  No surface sets it.
    columns: bool = False


# --- per-candidate values (stages 2-8) ------------------------------------------------
class Evidence(NamedTuple):
    """One arm's vote for a passage."""

    rank: int
    raw: float
    contribution: float
    votes: tuple[Any, ...] = ()     # fact arm: the facts that voted (memo.retrieve.arms.fact.FactVote)


@dataclass(frozen=True, slots=True)
class Factor:
    """One rescorer's factor on a candidate (stage 4, ``memo.retrieve.rescore``): the score
    is multiplied by ``value``; ``label`` says what earned it ("31.2 days old", "Caroline",
    "2023-07", "fs.readfile", "record 0.62 of the best")."""

    name: str
    value: float
    label: str | None = None


class Candidate(NamedTuple):
    pk: int
    arms: dict[str, Evidence]   # insertion order = arm order; fused = sum in that order
    fused: float
    score: float = 0.0          # fused x every factor, left to right
    tiebreak: float = 0.0       # orders equal scores (rrf: the min-max fused score); never scored
    factors: tuple[Factor, ...] = ()   # stage 4's factors, in the order they were applied

    def factor(self, name: str) -> float:
        """The value of the factor ``name`` (1.0 when it gave none)."""
        return _factor(self.factors, name)


def _factor(factors: tuple[Factor, ...], name: str) -> float:
    for f in factors:
        if f.name == name:
            return f.value
    return 1.0


def _label(factors: tuple[Factor, ...], name: str) -> str | None:
    for f in factors:
        if f.name == name:
            return f.label
    return None


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
    dated: bool = False         # the passage or its record has an event date (``when`` is not recorded_at)


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
    factors: tuple[Factor, ...]     # recency and the other rescorers' factors, in the order applied
    final: float                    # fused x each factor's value, left to right
    relevance: float | None
    band: str | None
    tiebreak: float
    provenance: dict[str, Any]
    freshness: dict[str, Any]
    # the query's arm weights: {"weights": {arm: weight used}, "multipliers": {arm: x},
    # "evidence": {measure: value}} (memo.retrieve.fusion.adaptive); arms[a].contribution
    # was computed with weights[a]
    fusion: Mapping[str, Mapping[str, float]] | None = None

    def factor(self, name: str) -> float:
        """The value of the factor ``name`` ("recency", "speaker", ...; 1.0 when none)."""
        return _factor(self.factors, name)

    def label(self, name: str) -> str | None:
        """What earned the factor ``name`` (None when none)."""
        return _label(self.factors, name)


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
    origin: str | None = None       # where the record came from: its import path (a file), else its source
    # When it happened (the passage's event date, else its record's; None when undated) and
    # who said it (a conversation turn): an agent answering "when did ..." from the results
    # needs the date without asking for ``why``.
    event_at: str | None = None
    speaker: str | None = None
    # The library and version its record names (docs of several versions side by side).
    library: str | None = None
    version: str | None = None


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
    # rescorer name -> what the query named that earned its factors (speaker: the speakers,
    # dates: the periods, heading: the identifiers); only rescorers that gave a factor
    rescore: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the arm weights fusion used for this query and what set them (Why.fusion's value)
    fusion_weights: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    results: Sequence[Result]       # a tuple; a ResultTable when the request asked for columns
    abstained: bool                 # only when the abstention stage emptied the list
    cause: str | None               # why the list is empty (memo.retrieve.empty.EMPTY_CAUSES), else None
    reason: str | None
    hint: str | None
    truncated: int
    narrow_hint: dict[str, Any] | None
    trace: Trace


# --- fast construction for the hot records ------------------------------------------------
def _positional_new(cls: type) -> Any:
    """A constructor taking every field of the frozen, slotted dataclass ``cls`` positionally
    (in field order, no defaults) that builds the same object as ``cls(...)``, about twice as
    fast: the dataclass's ``__init__`` goes through the frozen guard (``object.__setattr__``
    looked up per field); this sets each slot through its descriptor, bound once.  Results
    + why builds three of these per result and eval replay asks for 100 results a search
    (docs/eval.md "What a grid costs"); tests/unit/retrieve/test_types_fast.py holds that
    both constructors give equal objects."""
    names = cls.__slots__
    args = ", ".join(f"a{i}" for i in range(len(names)))
    body = "".join(f"    s{i}(o, a{i})\n" for i in range(len(names)))
    src = f"def new_{cls.__name__}({args}):\n    o = make(cls)\n{body}    return o\n"
    scope: dict[str, Any] = {"make": object.__new__, "cls": cls,
                             **{f"s{i}": getattr(cls, n).__set__ for i, n in enumerate(names)}}
    exec(src, scope)   # noqa: S102  (generated from the class's own slot names, nothing external)
    return scope[f"new_{cls.__name__}"]


new_arm_why = _positional_new(ArmWhy)
new_why = _positional_new(Why)
new_result = _positional_new(Result)
