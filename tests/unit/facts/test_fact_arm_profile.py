"""The fact arm's [fact] profile keys (docs/profiles.md, architecture section 5): merge of
the two fact lists, best or decayed-sum votes, votes spread to neighbouring turns, the
meaning list's weight and the number of facts that vote.  minmax keeps the arm as it was
(minmax merge, best vote, no spread, equal weights, every fact votes); rrf lets the 10 best
facts vote."""

from __future__ import annotations

import pytest

from memo.errors import ProfileError
from memo.profile import load_profile
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.types import PassageDraft, RecordDraft
from tests.unit.facts.test_fact_arm import Semantic, fact, fpk, rec, run


@pytest.fixture
def conn(backend_db):
    c = open_db(backend_db)
    yield c
    c.close()


def prof(**overrides):
    return load_profile("minmax").with_overrides({f"fact.{k}": v for k, v in overrides.items()})


def arm_hits(resp):
    return {r.passage_id: r.why.arms["fact"] for r in resp.results if "fact" in r.why.arms}


def test_shipped_profiles():
    # minmax keeps the arm as it was; rrf lets only the 10 best facts vote (docs/eval.md: chosen
    # on each half of LoCoMo's conversations and better on the other half)
    for name, top in (("rrf", 10), ("minmax", 0)):
        f = load_profile(name).fact
        assert (f.merge, f.vote, f.spread, f.meaning_weight, f.top) == ("minmax", "best", 0.0, 1.0, top)


@pytest.mark.parametrize("key,value", [("merge", "max"), ("vote", "mean"), ("decay", 1.5), ("spread", -0.1),
                                       ("meaning_weight", -1.0), ("top", -1), ("top", 1.5)])
def test_bad_fact_keys_are_refused(key, value):
    with pytest.raises(ProfileError, match=f"fact.{key}"):
        prof(**{key: value})


def test_vote_sum_adds_the_decayed_votes(conn):
    a = rec(conn, "alpha passage")
    b = rec(conn, "beta passage")
    fact(conn, "zebra crossing", [a])
    fact(conn, "zebra crossing near the school", [b])
    fact(conn, "a zebra", [b])
    best = arm_hits(run(conn, "zebra crossing school", profile=prof()))
    summed = arm_hits(run(conn, "zebra crossing school", profile=prof(vote="sum", decay=0.5)))
    pb = f"{b}:0"
    s = sorted((v.score for v in summed[pb].votes), reverse=True)
    assert best[pb].raw == s[0]
    assert summed[pb].raw == pytest.approx(s[0] + 0.5 * s[1])
    assert summed[pb].rank == 1


def test_spread_votes_for_the_neighbouring_turns(conn):
    turns = ("hello there", "we adopted a greyhound", "nice", "see you")
    ps = tuple(PassageDraft(text=t) for t in turns)
    with write_tx(conn):
        rid = insert_record(conn, RecordDraft(body="\n".join(turns), kind="conversation"), ps)
    fact(conn, "they own a greyhound dog", [f"{rid}:1"])
    off = arm_hits(run(conn, "greyhound dog", profile=prof()))
    assert list(off) == [f"{rid}:1"]
    on = arm_hits(run(conn, "greyhound dog", profile=prof(spread=0.5)))
    assert set(on) == {f"{rid}:0", f"{rid}:1", f"{rid}:2"}
    ev = on[f"{rid}:1"]
    assert ev.rank == 1 and ev.votes[0].weight == 1.0
    for near in (f"{rid}:0", f"{rid}:2"):
        assert on[near].raw == pytest.approx(0.5 * ev.raw) and on[near].votes[0].weight == 0.5


def test_merge_rrf_and_meaning_weight(conn):
    a = rec(conn, "first")
    b = rec(conn, "second")
    fa = fact(conn, "orchard apples harvest", [a])
    fb = fact(conn, "the pears", [b])
    svc = Semantic(fact_sims={fpk(conn, fa): 0.5, fpk(conn, fb): 0.9})
    k = load_profile("minmax").fusion.k
    got = arm_hits(run(conn, "apples", {"semantic": svc}, profile=prof(merge="rrf")))
    assert got[f"{a}:0"].raw == pytest.approx(1 / (k + 1) + 1 / (k + 2))     # keyword 1st, meaning 2nd
    assert got[f"{b}:0"].raw == pytest.approx(1 / (k + 1))
    got = arm_hits(run(conn, "apples", {"semantic": svc}, profile=prof(meaning_weight=2.0)))
    assert got[f"{a}:0"].raw == pytest.approx(1.0 + 2.0 * 0.0)               # meaning: min of its list
    assert got[f"{b}:0"].raw == pytest.approx(2.0 * 1.0)
    assert got[f"{b}:0"].rank == 1


def test_top_keeps_only_the_best_facts(conn):
    a = rec(conn, "first")
    b = rec(conn, "second")
    fact(conn, "zebra crossing", [a])
    fact(conn, "zebra", [b])
    assert len(arm_hits(run(conn, "zebra crossing", profile=prof()))) == 2
    assert list(arm_hits(run(conn, "zebra crossing", profile=prof(top=1)))) == [f"{a}:0"]
