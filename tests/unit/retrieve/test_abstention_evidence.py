"""Abstention rule 2 (weak query, issue 13.4): the keyword evidence measure
(memo.retrieve.evidence) against hand-computed idf coverage, and the pipeline: a query
matching only low-information words abstains, an in-domain query does not, a strong
cosine or the floor at 0 keeps it."""

from __future__ import annotations

import math

import pytest
from retrieve_helpers import FakeSemantic, add, pk_of

from memo.errors import ProfileError
from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.abstention import abstain_weak_query
from memo.retrieve.evidence import idf, passages_evidence
from memo.retrieve.types import Candidate, Evidence

NOW = "2024-07-01T00:00:00Z"
FILLER = ["the weather report said rain again today", "weather was fine and the report was short",
          "a long report about the weather in spring", "report the weather to the office",
          "weather and report and weather again"]


@pytest.fixture
def corpus(conn):
    """10 passages: "weather" and "report" in 6 of them (low information), "zebra" in 1,
    "quasar" in 2, "nebula" in none."""
    ids = {f"f{i}": add(conn, t) for i, t in enumerate(FILLER)}
    ids["zebra"] = add(conn, "the weather report mentioned a zebra crossing")
    ids["quasar"] = add(conn, "a quasar is a bright galactic nucleus")
    ids["quasar2"] = add(conn, "the quasar spectrum shows redshift")
    ids["pool"] = add(conn, "how to clean a swimming pool filter")
    ids["cake"] = add(conn, "chocolate cake needs cocoa and butter")
    return {k: pk_of(conn, v) for k, v in ids.items()}


def test_idf_is_fts5_bm25_idf():
    assert idf(10, 1) == pytest.approx(math.log(9.5 / 1.5))
    assert idf(10, 0) == pytest.approx(math.log(10.5 / 0.5))      # unseen: the largest idf
    assert idf(10, 6) == 1e-6                                       # ln(4.5/6.5) < 0: clamped as FTS5 does
    assert idf(1, 2) == 1e-6                                        # index out of step with the rows: no error


def test_coverage_is_the_idf_share_of_the_matched_terms(conn, corpus):
    ev = passages_evidence(conn, "zebra quasar nebula weather", [corpus["zebra"], corpus["quasar"], corpus["pool"]], 10)
    n = {"zebra": 1, "quasar": 2, "nebula": 0, "weather": 6}
    w = {t: idf(10, k) for t, k in n.items()}
    assert dict(ev.terms) == pytest.approx(w)
    total = sum(w.values())
    assert ev.coverage[corpus["zebra"]] == pytest.approx((w["zebra"] + w["weather"]) / total)
    assert ev.coverage[corpus["quasar"]] == pytest.approx(w["quasar"] / total)
    assert ev.coverage[corpus["pool"]] == 0.0
    assert set(ev.matched[corpus["zebra"]]) == {"zebra", "weather"}
    assert ev.best == pytest.approx((w["zebra"] + w["weather"]) / total)
    assert "zebra" in ev.describe() and "nebula" in ev.describe()


def test_stemmed_forms_count_as_the_same_term(conn, corpus):
    ev = passages_evidence(conn, "reports", [corpus["f0"]], 10)     # Porter: reports -> report
    assert ev.coverage[corpus["f0"]] == 1.0


def _profile(floor: float, **more):
    return load_profile("rrf").with_overrides({"abstention.keyword_floor": floor, **more})


# Rule 2 needs the query's similarity: a semantic arm that ran and found nothing strong.
NO_MATCH = {"semantic": FakeSemantic({})}


def test_only_low_information_words_abstain(conn, corpus):
    # "weather report" matched in 6 of 10 passages (idf clamped), "nebula galaxy" unseen.
    req = SearchRequest("weather report from the nebula galaxy", response_format="explain", now=NOW)
    answered = search(conn, req, _profile(0.0), NO_MATCH)
    assert answered.results                                       # floor 0: rule 2 off, as before
    resp = search(conn, req, _profile(0.3), NO_MATCH)
    assert resp.results == () and resp.abstained and resp.cause == "abstained"
    drop = next(d for d in resp.trace.drops if d.stage == "abstention")
    assert drop.count == len(drop.passage_pks) > 0
    assert {r.pk for r in answered.results} <= set(drop.passage_pks)
    assert "keyword_floor 0.3" in drop.reason and "best keyword coverage 0.000" in drop.reason
    assert "keyword_floor 0.3" in resp.reason


def test_an_in_domain_query_does_not_abstain(conn, corpus):
    resp = search(conn, SearchRequest("clean the pool filter", now=NOW), _profile(0.9))
    assert resp.results and not resp.abstained
    assert resp.results[0].pk == corpus["pool"]
    assert not any(d.stage == "abstention" for d in resp.trace.drops)


def test_a_rare_word_among_unseen_ones_is_weak(conn, corpus):
    # One rare match (zebra, idf 1.85) against three unseen terms (3.04 each): coverage 0.17.
    req = SearchRequest("zebra nebula pulsar magnetar", now=NOW)
    assert search(conn, req, _profile(0.15), NO_MATCH).results
    assert search(conn, req, _profile(0.2), NO_MATCH).abstained


def test_without_a_similarity_weak_keyword_evidence_is_answered(conn, corpus):
    """Keyword mode, or no model: the query's similarity is unknown, so rule 2 does not
    apply (a paraphrase of a passage looks as weak by keywords as an off-domain query)."""
    req = SearchRequest("zebra nebula pulsar magnetar", now=NOW)
    assert search(conn, req, _profile(0.2)).results                              # no services
    assert search(conn, req, _profile(0.2), {"semantic": FakeSemantic({}, available=False)}).results
    keyword_mode = SearchRequest("zebra nebula pulsar magnetar", mode="keyword", now=NOW)
    resp = search(conn, keyword_mode, _profile(0.2), NO_MATCH)
    assert resp.results and not any(d.stage == "abstention" for d in resp.trace.drops)


def test_a_strong_cosine_keeps_a_weak_keyword_query(conn, corpus):
    req = SearchRequest("weather report from the nebula galaxy", now=NOW)
    weak = FakeSemantic({corpus["cake"]: 0.2})
    assert search(conn, req, _profile(0.3), {"semantic": weak}).abstained
    strong = FakeSemantic({corpus["f0"]: 0.5})                     # >= semantic_floor 0.39
    resp = search(conn, req, _profile(0.3), {"semantic": strong})
    assert resp.results and not resp.abstained


def test_rule_two_measures_only_when_nothing_else_is_strong():
    calls = []

    def evidence_of(pks, fact_ids):
        calls.append(pks)
        return None, None

    kw = Candidate(1, {"keyword": Evidence(1, 2.0, 0.1)}, 0.1)
    exact = Candidate(2, {"exact": Evidence(1, 2.0, 0.1)}, 0.1)
    sem = Candidate(3, {"semantic": Evidence(1, 0.5, 0.1)}, 0.1)
    entity = Candidate(4, {"entity": Evidence(1, 2.0, 0.1)}, 0.1)
    assert abstain_weak_query([kw, entity], 0.39, 0.5, evidence_of).dropped == []
    assert abstain_weak_query([kw, sem], 0.39, 0.5, evidence_of).dropped == []
    assert calls == []
    assert abstain_weak_query([kw, exact], 0.39, 0.5, evidence_of).dropped == [1, 2]   # judged by coverage
    assert calls == [[1, 2]]
    calls.clear()
    assert abstain_weak_query([kw], 0.39, 0.0, evidence_of).dropped == []       # off
    assert calls == []
    assert abstain_weak_query([kw], 0.39, 0.5, evidence_of).dropped == [1]
    assert calls == [[1]]


def test_keyword_floor_is_validated():
    with pytest.raises(ProfileError, match="abstention.keyword_floor"):
        _profile(1.5)
    with pytest.raises(ProfileError, match="abstention.keyword_floor"):
        _profile(-0.1)


def test_weak_coverage_and_weak_similarity_of_one_passage_add_up(conn, corpus):
    """joint_floor: each signal as a share of its own floor; together they can answer."""
    req = SearchRequest("zebra weather nebula galaxy", response_format="explain", now=NOW)
    w = {"zebra": idf(10, 1), "weather": idf(10, 6), "nebula": idf(10, 0), "galaxy": idf(10, 0)}
    coverage = (w["zebra"] + w["weather"]) / sum(w.values())          # about 0.23: below any floor
    close = {"semantic": FakeSemantic({corpus["zebra"]: 0.38})}        # just under semantic_floor 0.39
    far = {"semantic": FakeSemantic({corpus["zebra"]: 0.20})}
    joint = coverage / 0.5 + 0.38 / 0.39
    assert 1.4 < joint < 1.5
    answered = search(conn, req, _profile(0.5, **{"abstention.joint_floor": 1.4}), close)
    assert [r.pk for r in answered.results][:1] == [corpus["zebra"]] and not answered.abstained
    assert search(conn, req, _profile(0.5, **{"abstention.joint_floor": 1.5}), close).abstained
    assert search(conn, req, _profile(0.5, **{"abstention.joint_floor": 0.0}), close).abstained   # off
    far_resp = search(conn, req, _profile(0.5, **{"abstention.joint_floor": 1.4}), far)
    assert far_resp.abstained
    drop = [d for d in far_resp.trace.drops if d.stage == "abstention"][-1]
    assert "joint_floor 1.4" in drop.reason and f"{coverage / 0.5 + 0.20 / 0.39:.3f}" in drop.reason


def test_joint_measure_reads_semantic_and_fact_votes():
    from memo.retrieve.abstention import joint_measure

    def evidence_of(pks, fact_ids):
        from memo.retrieve.evidence import KeywordEvidence
        return KeywordEvidence((("t", 1.0),), {1: 0.3}, {1: ("t",)}), None

    both = Candidate(1, {"keyword": Evidence(1, 2.0, 0.1), "semantic": Evidence(1, 0.35, 0.1)}, 0.2)
    assert joint_measure(0.3, 0.35, 0.5, 0.39) == pytest.approx(0.6 + 0.35 / 0.39)
    assert joint_measure(0.3, None, 0.5, 0.39) == pytest.approx(0.6)
    assert joint_measure(0.3, -0.2, 0.5, 0.39) == pytest.approx(0.6)          # a negative cosine adds nothing
    kept = abstain_weak_query([both], 0.39, 0.5, evidence_of, joint_floor=1.4)
    assert kept.dropped == [] and kept.joint == pytest.approx(0.6 + 0.35 / 0.39)
    gone = abstain_weak_query([both], 0.39, 0.5, evidence_of, joint_floor=1.6)
    assert gone.dropped == [1] and "below joint_floor 1.6" in (gone.reason or "")


def test_joint_floor_is_validated():
    with pytest.raises(ProfileError, match="abstention.joint_floor"):
        _profile(0.5, **{"abstention.joint_floor": 2.5})
    with pytest.raises(ProfileError, match="abstention.joint_floor"):
        _profile(0.5, **{"abstention.joint_floor": -1})


@pytest.mark.sqlite_only
@pytest.mark.parametrize("with_numpy", [True, False])
def test_coverage_from_the_keyword_postings_equals_coverage_from_fts5(conn, corpus, monkeypatch, with_numpy):
    """Differential: with no impact index, the counts and holders come from the persistent
    keyword postings (numpy's cached arrays, or the arrays a process without numpy reads);
    the measure is the same to the last bit.  A term of several tokens leaves it to FTS5."""
    from memo.retrieve import backend_sqlite as sqlite_backend
    from memo.retrieve import impact, kw_search

    queries = ["zebra quasar nebula weather", "weather report", "quasars and zebras", "cake filter pool",
               "nothing here at all", "the a of", "weather weather quasar"]
    pks = list(corpus.values())
    impact.forget_indexes()
    monkeypatch.setattr(kw_search, "term_holders", lambda *a: None)
    slow = [passages_evidence(conn, q, pks, 10) for q in queries]
    monkeypatch.undo()
    assert kw_search.term_holders(conn, ["weather"], pks) is not None      # the postings describe the snapshot

    def no_fts(*a, **k):
        raise AssertionError("the keyword postings should have answered")

    monkeypatch.setattr(sqlite_backend, "_holders_from_fts", no_fts)
    monkeypatch.setattr(kw_search, "_numpy_loaded", lambda: with_numpy)   # without: kw_search reads arrays
    fast = [passages_evidence(conn, q, pks + [10_000], 10) for q in queries]   # an unknown pk too
    for s, f in zip(slow, fast, strict=True):
        assert f.terms == s.terms
        assert {k: v for k, v in f.coverage.items() if k != 10_000} == s.coverage
        assert {k: v for k, v in f.matched.items() if k != 10_000} == s.matched
        assert f.coverage.get(10_000, 0.0) == 0.0


@pytest.mark.sqlite_only
def test_coverage_from_the_impact_index_equals_coverage_from_fts5(conn, corpus, monkeypatch):
    """Differential: with the keyword arm's impact index current, the counts and holders
    come from its postings; the measure is the same to the last bit."""
    from memo.retrieve import backend_sqlite as sqlite_backend
    from memo.retrieve import impact

    queries = ["zebra quasar nebula weather", "weather report", "quasars and zebras", "cake filter pool",
               "nothing here at all", "the a of"]
    pks = list(corpus.values())
    impact.forget_indexes()
    slow = [passages_evidence(conn, q, pks, 10) for q in queries]
    impact.ensure_index(conn)
    try:
        def no_fts(*a, **k):
            raise AssertionError("the impact index should have answered")

        monkeypatch.setattr(sqlite_backend, "_holders_from_fts", no_fts)
        fast = [passages_evidence(conn, q, pks + [10_000], 10) for q in queries]   # an unknown pk too
    finally:
        impact.forget_indexes()
    for s, f in zip(slow, fast, strict=True):
        assert f.terms == s.terms
        assert {k: v for k, v in f.coverage.items() if k != 10_000} == s.coverage
        assert {k: v for k, v in f.matched.items() if k != 10_000} == s.matched
        assert f.coverage.get(10_000, 0.0) == 0.0
