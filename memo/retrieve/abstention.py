"""Stage 5, abstention: "not in the knowledge base", and nothing else.

Two rules, in this order:

1. **Weak semantic candidate** (seed section 5): a candidate whose ONLY evidence is a
   semantic similarity below the model's ``semantic_floor`` is dropped.  A candidate dated
   in a period the query names (``memo.retrieve.dated``: the extra ``dates``) has that date
   as evidence too, and stays.  A fact arm vote
   counts as semantic evidence only when every voting fact was matched by meaning alone:
   then it is weak when each of those cosines is below the floor.  With no bands for the
   model (unknown model id), nothing is dropped.  Why: a nearest neighbour always exists,
   so without a floor every query "finds" something.

2. **Weak query** (issue 13.4, profile ``abstention.keyword_floor``; 0 = off): when no
   surviving candidate has strong evidence, the query abstains and every candidate is
   dropped.  Evidence is weak when it is a cosine below ``semantic_floor``, or a keyword
   match (of the passage, or of a voting fact) whose coverage of the query
   (``memo.retrieve.evidence``: the idf share of the query's terms it holds) is below
   ``keyword_floor``; an exact identifier match is judged by its passage's coverage.  An
   entity or graph vote, a cosine at or above the floor, or a keyword match covering at
   least the floor is strong (each arm says what its vote shows: ``Arm.weigh``).  Why: an
   off-domain question shares a few common words with any large corpus ("group",
   "support"), and rule 1 alone let any such match through.  The whole query abstains or
   none of it does: a weak match is not dropped from a query that has a strong one (its
   answered recall is untouched).  Rule 2 needs the query's similarity: when the
   semantic arm did not run (``--mode keyword``, or degraded: no model or no vectors),
   weak keyword evidence cannot be told from a paraphrase, so the query is answered
   (in-domain LoCoMo questions searched by keyword alone cover half of their terms far
   less often than their answers are there: with the rule on, keyword-only recall fell;
   docs/results-log.md "Abstention rule 2 without a measured similarity").

   **Two weak signals together** (profile ``abstention.joint_floor``; 0 = off): a query
   whose best keyword coverage and best similarity are each below their floor is still
   answered when, each taken as a share of its own floor, they add up to the joint floor:

       best_coverage / keyword_floor + max(0, best_cosine) / semantic_floor >= joint_floor

   (best_cosine over the surviving candidates' semantic votes and their facts' meaning
   matches).  Why: a docstring asked of the code it documents shares some words with the
   function and is close in meaning without either reaching its floor, while an
   off-domain question is weak on both.  Chosen on the train splits with ``keyword_floor``
   (docs/eval.md "Two weak signals", with the measured coverages and cosines).

Trigger and outcome are recorded in the trace (one drop per rule, its reason naming the
measure and the floor); if nothing survives, the response has zero results, a reason and
a hint.  Abstention never changes a score, so ``why`` reproduces ``final`` as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memo.retrieve.arms import ARMS
from memo.retrieve.arms import weigh as registered_weigh
from memo.retrieve.arms.base import VoteEvidence
from memo.retrieve.dated import RESCORER as _DATES_RESCORER
from memo.retrieve.evidence import KeywordEvidence
from memo.retrieve.types import Candidate

DATES = _DATES_RESCORER.name

# (passage pks with a keyword vote, fact ids with a keyword vote) -> (passage evidence,
# fact evidence); called at most once per search, only when rule 2 needs it.
EvidenceOf = Callable[[Sequence[int], Sequence[str]], tuple[KeywordEvidence | None, KeywordEvidence | None]]
# (arm name, that arm's vote) -> what the vote shows: the arm's own ``weigh`` (its declarations)
Weigh = Callable[[str, Any], VoteEvidence]


def abstain(ranked: Sequence[Candidate], semantic_floor: float | None,
            weigh: Weigh = registered_weigh, known: dict[int, bool] | None = None) -> tuple[list[Candidate], list[int]]:
    """Rule 1: (kept in order, dropped pks).  ``semantic_floor`` None = no bands for the model.
    ``known``: each pk's verdict (kept?) for candidates fused from the very same hits
    (``memo.retrieve.hit_memo``: a verdict reads only the arms' raw scores and votes, never a
    contribution), filled here as verdicts are made."""
    if semantic_floor is None:
        return list(ranked), []
    if known:                       # an eval grid's later runs: every candidate judged before
        try:
            keeps = [known[c.pk] for c in ranked]
        except KeyError:
            pass
        else:
            keeps = [keep or _dated_then(c) for c, keep in zip(ranked, keeps, strict=True)]
            return ([c for c, keep in zip(ranked, keeps, strict=True) if keep],
                    [c.pk for c, keep in zip(ranked, keeps, strict=True) if not keep])
    floor = semantic_floor
    kept, dropped = [], []
    # With the arms' own weigh, the verdict on a vote depends only on its arm, raw score and
    # votes (the registered weigh's own cache key) and the floor; an eval grid meets the same
    # votes in every run.  Another weigh (a test's) is asked every time.
    verdicts = _WEAK.setdefault(floor, {}) if weigh is registered_weigh else {}
    if len(verdicts) >= _WEAK_MAX or len(_WEAK) > 16:
        verdicts.clear()
        if len(_WEAK) > 16:
            _WEAK.clear()
    no_similarity = _NO_SIMILARITY if weigh is registered_weigh else frozenset()
    for c in ranked:                # a plain loop: this runs for every candidate of every search
        keep = False
        for name, ev in c.arms.items():
            if name in no_similarity:   # a vote that is no similarity is never a weak one
                keep = True
                break
            try:
                key = (name, ev.raw, ev.votes)
                weak = verdicts.get(key)
            except TypeError:       # a vote that cannot be hashed: judged every time
                key, weak = None, None
            if weak is None:
                weak = _weak_semantic(weigh(name, ev), floor)
                if key is not None:
                    verdicts[key] = weak
            if not weak:
                keep = True
                break
        if known is not None:
            known[c.pk] = keep      # the arms' verdict: the factors may differ in the next run
        if keep or _dated_then(c):
            kept.append(c)
        else:
            dropped.append(c.pk)
    return kept, dropped


def _dated_then(c: Candidate) -> bool:
    """The candidate is dated in a period the query names (the dates rescorer lifted it):
    evidence beside its similarity.  "What did I do on March 5 2024?" shares no word and
    little meaning with "Worked on the ingest service", yet that day's notes are its answer:
    every one was dropped as weakly similar, and the search said "not in the knowledge base"."""
    return c.factor(DATES) > 1.0


# Arms whose declared evidence (``Arm.evidence``) holds no similarity: their votes are never
# "only a similarity below the floor" (rule 1) and carry no cosine (``relevance``), so the
# registered weigh need not be asked (tests/property/test_vote_caches.py holds every
# registered arm to its declaration).  Half of a search's candidates are keyword hits.
_NO_SIMILARITY = frozenset(a.name for a in ARMS if "semantic" not in a.evidence)
_WEAK: dict[float, dict[tuple[str, float, tuple[Any, ...]], bool]] = {}
_WEAK_MAX = 1 << 16


def _weak_semantic(v: VoteEvidence, floor: float) -> bool:
    """Is this vote only a similarity (of the passage or of its facts) below the floor?"""
    if v.lexical or v.structural or v.fact_ids:
        return False
    cosines = v.cosines + v.fact_cosines if v.fact_cosines else v.cosines
    return bool(cosines) and max(cosines) < floor


def relevance(c: Candidate, weigh: Weigh = registered_weigh) -> float | None:
    """The best raw cosine of the passage itself, over every arm's vote (the semantic arm's
    cosine for the query as embedded and as typed); None when no arm measured one."""
    best = None
    if weigh is registered_weigh:       # each vote's best cosine, kept as abstain keeps verdicts
        for name, ev in c.arms.items():
            if name in _NO_SIMILARITY:
                continue
            try:
                key = (name, ev.raw, ev.votes)
                cos = _BEST.get(key, _UNSEEN)
            except TypeError:
                key, cos = None, _UNSEEN
            if cos is _UNSEEN:
                cos = max(weigh(name, ev).cosines, default=None)
                if key is not None:
                    if len(_BEST) >= _WEAK_MAX:
                        _BEST.clear()
                    _BEST[key] = cos
            if cos is not None and (best is None or cos > best):
                best = cos
        return best
    for name, ev in c.arms.items():
        for cos in weigh(name, ev).cosines:
            if best is None or cos > best:
                best = cos
    return best


_BEST: dict[tuple[str, float, tuple[Any, ...]], float | None] = {}
_UNSEEN = object()


@dataclass(frozen=True, slots=True)
class WeakQuery:
    """Rule 2's verdict: ``dropped`` (every candidate, or none) and the measure behind it."""

    dropped: list[int]
    reason: str | None            # set when the query abstained (the trace drop's reason)
    keyword_coverage: float | None  # best coverage of any keyword vote (None: not measured)
    joint: float | None = None      # the joint measure when it was computed (joint_floor > 0)


def joint_measure(coverage: float, cosine: float | None, keyword_floor: float, semantic_floor: float) -> float:
    """coverage / keyword_floor + max(0, cosine) / semantic_floor (module docstring)."""
    return coverage / keyword_floor + max(0.0, cosine if cosine is not None else 0.0) / semantic_floor


def abstain_weak_query(kept: Sequence[Candidate], semantic_floor: float | None, keyword_floor: float,
                       evidence_of: EvidenceOf, weigh: Weigh = registered_weigh, *, similarity_measured: bool = True,
                       joint_floor: float = 0.0) -> WeakQuery:
    """Rule 2 over rule 1's survivors.  ``keyword_floor`` 0 = off.  ``evidence_of`` is
    called only when no candidate has strong evidence of another kind.
    ``similarity_measured`` False (the semantic arm did not run): the rule does not apply."""
    if keyword_floor <= 0.0 or not kept or not similarity_measured:
        return WeakQuery([], None, None)
    pks: list[int] = []
    fact_ids: list[str] = []
    cosines: list[float] = []             # all below semantic_floor here (else answered at once)
    for c in kept:
        for arm, ev in c.arms.items():
            v = weigh(arm, ev)
            if v.structural:                # named things of the corpus were found
                return WeakQuery([], None, None)
            for cosine in (*v.cosines, *v.fact_cosines):
                if semantic_floor is None or cosine >= semantic_floor:
                    return WeakQuery([], None, None)
                cosines.append(cosine)
            if v.lexical:
                # An identifier match is judged by the passage's keyword coverage too:
                # "self-care" is identifier-shaped and common in any corpus of people.
                pks.append(c.pk)
            fact_ids.extend(v.fact_ids)
    passages, facts = evidence_of(pks, fact_ids)
    best = max(passages.best if passages is not None else 0.0, facts.best if facts is not None else 0.0)
    if best >= keyword_floor:
        return WeakQuery([], None, best)
    joint = None
    best_cosine = max(cosines, default=None)
    if joint_floor > 0.0 and semantic_floor is not None and semantic_floor > 0.0:
        joint = joint_measure(best, best_cosine, keyword_floor, semantic_floor)
        if joint >= joint_floor:
            return WeakQuery([], None, best, joint)
    shown = passages if passages is not None and (facts is None or passages.best >= facts.best) else facts
    what = shown.describe() if shown is not None else "no keyword match"
    semantic = "" if semantic_floor is None else f"; no similarity reaches semantic_floor {semantic_floor:g}"
    together = "" if joint is None else (
        f"; together {joint:.3f} (coverage / keyword_floor + best similarity "
        f"{max(0.0, best_cosine or 0.0):.3f} / semantic_floor) below joint_floor {joint_floor:g}")
    reason = f"weak evidence only: {what} below keyword_floor {keyword_floor:g}{semantic}{together}"
    return WeakQuery([c.pk for c in kept], reason, best, joint)
