"""The fact arm's [fact] profile keys (docs/profiles.md, architecture section 5): merge of
the two fact lists and the number of facts that vote.  The seed's profiles let every matched
fact vote (minmax merge, best vote)."""

from __future__ import annotations

import pytest

from memo.errors import ProfileError
from memo.profile import load_profile
from memo.store.db import open_db
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
    # every matched fact votes (fact.top, once rrf's 10, is retired: no profile limits them)
    for name in ("rrf", "minmax", "zscore"):
        assert load_profile(name).fact.merge == "minmax"


@pytest.mark.parametrize("key,value", [("merge", "max"), ("merge", 3)])
def test_bad_fact_keys_are_refused(key, value):
    with pytest.raises(ProfileError, match=f"fact.{key}"):
        prof(**{key: value})


def test_a_passage_scores_its_best_voting_fact(conn):
    a = rec(conn, "alpha passage")
    b = rec(conn, "beta passage")
    fact(conn, "zebra crossing", [a])
    fact(conn, "zebra crossing near the school", [b])
    fact(conn, "a zebra", [b])
    best = arm_hits(run(conn, "zebra crossing school", profile=prof()))
    pb = f"{b}:0"
    assert best[pb].raw == max(v.score for v in best[pb].votes)


def test_merge_rrf(conn):
    a = rec(conn, "first")
    b = rec(conn, "second")
    fa = fact(conn, "orchard apples harvest", [a])
    fb = fact(conn, "the pears", [b])
    svc = Semantic(fact_sims={fpk(conn, fa): 0.5, fpk(conn, fb): 0.9})
    k = load_profile("minmax").fusion.k
    got = arm_hits(run(conn, "apples", {"semantic": svc}, profile=prof(merge="rrf")))
    assert got[f"{a}:0"].raw == pytest.approx(1 / (k + 1) + 1 / (k + 2))     # keyword 1st, meaning 2nd
    assert got[f"{b}:0"].raw == pytest.approx(1 / (k + 1))


