"""Stage 3's per-query arm weights (issue 30, extras ``adaptive`` and ``code_queries``): the
keyword weight x min(1, coverage / full), full blended from keyword_full towards
keyword_full_code by the query's code share, shown in why and the trace, explain still exact."""

from __future__ import annotations

import math

import pytest
from retrieve_helpers import FakeSemantic, add, assert_why_reproduces_final, pk_of

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.fusion.adaptive import adapt, full_for, keyword_multiplier

NOW = "2024-07-01T00:00:00Z"
W = {"semantic": 0.5, "keyword": 0.5, "exact": 0.3}


def test_multiplier_is_coverage_over_full_capped_at_one():
    assert keyword_multiplier(0.3, 0.6) == 0.5
    assert keyword_multiplier(0.9, 0.6) == 1.0
    assert keyword_multiplier(0.0, 0.6) == 0.0
    assert keyword_multiplier(0.3, 0.0) == 1.0          # 0 = off


def test_adapt_scales_the_keyword_weight_only_and_says_why():
    got = adapt(W, 0.3, 0.6)
    assert got.weights == {"semantic": 0.5, "keyword": 0.25, "exact": 0.3}
    assert got.multipliers == {"keyword": 0.5}
    assert got.evidence == {"keyword_coverage": 0.3}


@pytest.mark.parametrize(("coverage", "full"), [(None, 0.6), (0.3, 0.0)])
def test_off_or_unmeasured_keeps_the_profile_weights(coverage, full):
    got = adapt(W, coverage, full)
    assert got.weights == W and got.multipliers == {} and got.evidence == {}


def test_full_blends_towards_the_code_value_by_the_code_share():
    assert full_for(0.55, 0.9, 0.0) == 0.55
    assert full_for(0.55, 0.9, 1.0) == 0.9
    assert full_for(0.55, 0.9, 0.5) == pytest.approx(0.725, rel=1e-12)
    assert full_for(0.55, 0.0, 1.0) == 0.55             # code_queries off
    assert full_for(0.55, 0.9, None) == 0.55            # nothing measured
    assert full_for(0.0, 0.9, 1.0) == 0.9               # adaptive off, code_queries on: code queries only


def test_adapt_on_a_code_query_asks_more_coverage_and_says_why():
    got = adapt(W, 0.3, 0.6, 0.9, 1.0)
    assert got.weights["keyword"] == pytest.approx(0.5 * 0.3 / 0.9, rel=1e-12)
    assert got.evidence == {"keyword_coverage": 0.3, "code_share": 1.0}
    assert adapt(W, 0.3, 0.6, 0.0, 1.0).evidence == {"keyword_coverage": 0.3}   # off: not evidence


@pytest.fixture
def corpus(conn):
    r = {
        "pool": add(conn, "How to clean a swimming pool filter", kind="doc"),
        "note": add(conn, "Pool party on Saturday, bring towels", kind="note", event_at="2024-04-02T00:00:00Z"),
        "chat": add(conn, "We talked about filter cartridges for the pool pump", kind="conversation",
                    event_at="2024-06-01"),
        "cake": add(conn, "Chocolate cake needs cocoa and butter", kind="note", event_at="2024-06-30"),
    }
    return {k: pk_of(conn, v) for k, v in r.items()}


def _idf(n_rows: int, n_hit: int) -> float:
    return max(math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5)), 1e-6)


def test_the_default_weighs_keyword_by_its_coverage_and_explains_it(conn, corpus):
    """"cocoa xylophone": the keyword arm's best hit (the cake) holds "cocoa" (1 of 4 rows)
    and no row holds "xylophone", so it covers idf(1) / (idf(1) + idf(0)) of the query;
    the keyword weight is 0.5 x min(1, that / keyword_full), in why, the trace and every
    keyword contribution, and explain still reproduces final exactly."""
    svc = FakeSemantic({corpus["pool"]: 0.7, corpus["chat"]: 0.55, corpus["note"]: 0.4, corpus["cake"]: 0.1})
    prof = load_profile("zscore").with_overrides({"cutoff.gap": 1.0,
                                                  "models.all-minilm-l6-v2-int8.semantic_floor": -1.0})
    full = prof.fusion.keyword_full
    assert full > 0                                  # the default turns the extra on
    resp = search(conn, SearchRequest("cocoa xylophone", response_format="explain", now=NOW, limit=100), prof,
                  {"semantic": svc})
    coverage = _idf(4, 1) / (_idf(4, 1) + _idf(4, 0))
    m = min(1.0, coverage / full)
    assert m < 1.0
    want = {"weights": {**prof.weights, "keyword": prof.weights["keyword"] * m},
            "multipliers": {"keyword": pytest.approx(m, rel=1e-12)},
            "evidence": {"keyword_coverage": pytest.approx(coverage, rel=1e-12), "code_share": 0.0}}
    assert resp.trace.fusion_weights["weights"]["keyword"] == pytest.approx(0.5 * m, rel=1e-12)
    assert resp.trace.fusion_weights == {**want, "weights": pytest.approx(want["weights"], rel=1e-12)}
    cake = next(r for r in resp.results if r.pk == corpus["cake"])
    assert cake.why.fusion == resp.trace.fusion_weights
    # the cake is the keyword arm's only hit: no spread, norm 1, so its contribution is the weight
    assert cake.why.arms["keyword"].contribution == resp.trace.fusion_weights["weights"]["keyword"]
    for res in resp.results:
        assert_why_reproduces_final(res)


def test_a_query_answered_by_code_weighs_keyword_by_the_blended_full(conn):
    """Two of the semantic arm's three hits are code: the keyword arm must cover
    keyword_full x 1/3 + keyword_full_code x 2/3 of the query to count in full; with
    code_queries off the same search uses keyword_full.  Explain stays exact."""
    pks = [pk_of(conn, add(conn, text, kind=kind)) for text, kind in (
        ("def mix_cocoa(butter):\n    return butter + 2", "code"),
        ("def bake(oven, tray):\n    oven.heat(tray)", "code"),
        ("Chocolate cake needs cocoa and butter", "note"),
        ("Pool party on Saturday, bring towels", "note"))]
    svc = FakeSemantic({pks[0]: 0.6, pks[1]: 0.5, pks[2]: 0.4})
    base = load_profile("zscore").with_overrides({"cutoff.gap": 1.0,
                                                  "models.all-minilm-l6-v2-int8.semantic_floor": -1.0})
    fusion = base.fusion
    assert fusion.keyword_full_code > fusion.keyword_full > 0     # the default turns both on
    got = {}
    for label, prof in (("on", base), ("off", base.with_overrides({"fusion.keyword_full_code": 0.0}))):
        resp = search(conn, SearchRequest("cocoa xylophone", response_format="explain", now=NOW, limit=100),
                      prof, {"semantic": svc})
        got[label] = resp.trace.fusion_weights
        for res in resp.results:
            assert_why_reproduces_final(res)
    coverage = got["on"]["evidence"]["keyword_coverage"]
    assert got["on"]["evidence"]["code_share"] == pytest.approx(2 / 3, rel=1e-12)
    full = fusion.keyword_full / 3 + fusion.keyword_full_code * 2 / 3
    assert got["on"]["multipliers"]["keyword"] == pytest.approx(min(1.0, coverage / full), rel=1e-12)
    assert "code_share" not in got["off"]["evidence"]
    assert got["off"]["multipliers"]["keyword"] == pytest.approx(min(1.0, coverage / fusion.keyword_full), rel=1e-12)
    assert got["on"]["multipliers"]["keyword"] < got["off"]["multipliers"]["keyword"]


def test_seed_profiles_keep_fixed_weights(conn, corpus):
    svc = FakeSemantic({corpus["pool"]: 0.7, corpus["cake"]: 0.1})
    for name in ("rrf", "minmax"):
        resp = search(conn, SearchRequest("cocoa xylophone", response_format="explain", now=NOW), name,
                      {"semantic": svc})
        assert resp.trace.fusion_weights["weights"] == dict(load_profile(name).weights)
        assert resp.trace.fusion_weights["multipliers"] == {}
        cake = next(r for r in resp.results if r.pk == corpus["cake"])
        assert cake.why.arms["keyword"].contribution == 0.5 / 61 if name == "rrf" else 0.5


def test_cli_explain_line_names_the_multiplier_and_its_evidence():
    from memo.cli.search_cmds import fusion_weights_line

    line = fusion_weights_line(adapt(W, 0.3, 0.6).as_dict())
    assert line == "semantic 0.5, keyword x 0.5 = 0.25, exact 0.3 (keyword_coverage 0.300)"
