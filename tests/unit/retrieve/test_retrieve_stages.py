"""Stages 4-8 as pure functions: recency, abstention, cutoff, limit, budget, narrow_hint."""

from __future__ import annotations

from datetime import UTC, datetime

from memo.profile import load_profile
from memo.retrieve.abstention import abstain
from memo.retrieve.budget import pack
from memo.retrieve.cutoff import cutoff
from memo.retrieve.limit import limit
from memo.retrieve.narrow import narrow_hint
from memo.retrieve.recency import RESCORER, age_days, recency_factor
from memo.retrieve.rescore import RescoreInput, apply
from memo.retrieve.types import Candidate, Evidence, Meta
from memo.types import Scope

NOW = datetime(2024, 7, 1, tzinfo=UTC)


def cand(pk, score, arms=None):
    return Candidate(pk, arms or {"keyword": Evidence(1, 1.0, score)}, score, score)


def test_recency_formula():
    assert recency_factor(0.0, 0.8, 90) == 1.0
    assert recency_factor(90.0, 0.8, 90) == 0.8 + 0.2 * 0.5
    assert recency_factor(None, 0.8, 90) == 1.0
    assert age_days("2024-06-30T00:00:00Z", NOW) == 1.0
    assert age_days("2030-01-01", NOW) == 0.0       # future: age 0
    assert age_days("not a date", NOW) is None


def test_recency_applies_to_aging_kinds_only_and_reorders():
    meta = {1: Meta("note", "d", None, 5, "2024-04-02T00:00:00Z"),    # 90 days old
            2: Meta("doc", "d", None, 5, "2020-01-01T00:00:00Z")}     # docs never age
    out, _ = apply(RESCORER, [cand(1, 1.0), cand(2, 0.95)], RescoreInput("", meta, NOW, load_profile("base")))
    assert [c.pk for c in out] == [2, 1]
    assert out[1].factor("recency") == 0.9 and out[1].score == 1.0 * 0.9
    assert out[0].factors == () and out[0].score == 0.95


def test_abstention_drops_only_lonely_weak_semantic_votes():
    weak_sem = cand(1, 0.1, {"semantic": Evidence(1, 0.2, 0.1)})
    strong_sem = cand(2, 0.1, {"semantic": Evidence(2, 0.6, 0.1)})
    weak_plus_kw = cand(3, 0.1, {"semantic": Evidence(3, 0.1, 0.1), "keyword": Evidence(1, 2.0, 0.1)})
    kept, dropped = abstain([weak_sem, strong_sem, weak_plus_kw], 0.3)
    assert [c.pk for c in kept] == [2, 3] and dropped == [1]
    kept, dropped = abstain([weak_sem], None)       # no bands for the model: keep
    assert dropped == []


def test_cutoff_gap_after_min_results():
    scores = [1.0, 0.9, 0.2, 0.19, 0.05]
    ranked = [cand(i, s) for i, s in enumerate(scores)]
    kept, cut, kind = cutoff(ranked, min_results=3, gap=0.5)
    assert [c.pk for c in kept] == [0, 1, 2, 3] and cut == [4] and kind == "gap"
    kept, cut, kind = cutoff(ranked, min_results=1, gap=0.5)
    assert [c.pk for c in kept] == [0, 1] and kind == "gap"
    assert cutoff(ranked, min_results=3, gap=1.0)[2] == "disabled"
    assert cutoff(ranked[:3], min_results=3, gap=0.5)[2] == "min_results"
    assert cutoff([cand(0, 1.0), cand(1, 0.5), cand(2, 0.5), cand(3, 0.3)], min_results=1, gap=0.5)[2] == "none"


def test_limit_and_budget():
    ranked = [cand(i, 1.0 - i / 10) for i in range(5)]
    kept, dropped = limit(ranked, 3)
    assert [c.pk for c in kept] == [0, 1, 2] and dropped == [3, 4]
    meta = {i: Meta("doc", "d", None, t, None) for i, t in enumerate([40, 70, 20, 10, 5])}
    kept, skipped, used = pack(ranked, meta, 100)
    assert [c.pk for c in kept] == [0, 2, 3, 4] and skipped == [1] and used == 75


def test_narrow_hint_names_the_field_that_drops_most():
    meta = {0: Meta("doc", "go", "wiki", 1, None), 1: Meta("doc", "go", "slack", 1, None),
            2: Meta("note", "go", "wiki", 1, None), 3: Meta("note", "py", "wiki", 1, None),
            4: Meta("note", "py", "wiki", 1, None)}
    ranked = [cand(i, 1.0) for i in range(5)]
    hint = narrow_hint(ranked, ranked[:2], meta, Scope())
    assert hint == {"field": "kind", "value": "doc", "would_drop": 3, "option": "--kind doc"}
    assert narrow_hint(ranked, ranked, meta, Scope()) is None
    hint = narrow_hint(ranked, ranked[:2], meta, Scope(kinds=("doc",)))
    assert hint["field"] == "namespace"
