"""Abstention's and relevance's per-vote caches (memo.retrieve.abstention: ``_WEAK``,
``_BEST``) and their skipping of arms that declare no similarity (``_NO_SIMILARITY``) give
what asking the arms' weigh for every vote gives: the same kept and dropped candidates, the
same relevance, for any candidates met in any order, again and again (the eval grid's case:
the same votes in every run)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve import abstention
from memo.retrieve.arms import weigh as registered
from memo.retrieve.arms.fact import FactVote
from memo.retrieve.types import Candidate, Evidence


def uncached(name, ev):     # the same answers, but not the registered weigh: no cache used
    return registered(name, ev)


raws = st.sampled_from([-0.3, 0.05, 0.1, 0.2, 0.31, 0.45, 0.7, 12.5])
fact_votes = st.lists(st.builds(FactVote, fact_id=st.sampled_from(["f1", "f2"]), text=st.just("t"),
                                rank=st.just(1), score=st.just(0.1), keyword_rank=st.sampled_from([None, 1]),
                                keyword_raw=st.just(3.0), semantic_rank=st.sampled_from([None, 2]),
                                semantic_raw=st.sampled_from([None, 0.2, 0.6])),
                      max_size=2).map(tuple)


@st.composite
def candidates(draw):
    out = []
    for pk in range(draw(st.integers(1, 12))):
        arms = {}
        for name in draw(st.lists(st.sampled_from(["semantic", "keyword", "exact", "fact", "entity", "graph"]), unique=True,
                                  min_size=1)):
            votes = draw(fact_votes) if name == "fact" else ()
            arms[name] = Evidence(draw(st.integers(1, 50)), draw(raws), 0.01, votes)
        out.append(Candidate(pk, arms, 0.1, 0.1))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(candidates(), min_size=1, max_size=4), st.sampled_from([0.0, 0.2, 0.3, 0.5]))
def test_cached_verdicts_and_relevance_equal_the_arms_weigh(batches, floor):
    for cands in batches + batches:                   # every vote met twice: the second from the cache
        assert abstention.abstain(cands, floor) == abstention.abstain(cands, floor, uncached)
        assert [abstention.relevance(c) for c in cands] == [abstention.relevance(c, uncached) for c in cands]


@settings(max_examples=100, deadline=None)
@given(raws, st.integers(1, 50), fact_votes)
def test_an_arm_that_declares_no_similarity_never_shows_one(raw, rank, votes):
    """The declaration abstention relies on to skip such arms: whatever the vote, its
    weigh gives no cosine and never a similarity-only (weak) vote."""
    from memo.retrieve.arms import ARMS

    skipped = [a for a in ARMS if "semantic" not in a.evidence]
    assert {a.name for a in skipped} == set(abstention._NO_SIMILARITY) and skipped
    for arm in skipped:
        shown = registered(arm.name, Evidence(rank, raw, 0.01, votes if arm.name == "fact" else ()))
        assert not shown.cosines and not shown.fact_cosines
        assert not abstention._weak_semantic(shown, 1.0)
