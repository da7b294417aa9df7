"""Stage 4e, context: the record masses, the factor, which kinds, the order, explain."""

from __future__ import annotations

import pytest
from retrieve_helpers import assert_why_reproduces_final

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.context import apply_context
from memo.retrieve.types import Candidate, Meta
from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.types import PassageDraft, RecordDraft

KINDS = ("conversation",)


def _cands(scores):
    return [Candidate(pk, {}, s, 1.0, s, 0.0) for pk, s in scores]


def _meta(record, kind="conversation"):
    return Meta(kind, "n", None, 5, None, None, "", record)


def test_a_record_with_several_top_passages_lifts_its_passages_by_its_share():
    # The context is the best 3: session A holds pks 1 and 3 (mass 0.9 + 0.7 = 1.6, the
    # largest), C holds pk 2 (0.8).  pk 4 (A) is outside the context but lifted with its
    # session; pk 5 (B) has no passage in the context.
    meta = {1: _meta("A"), 2: _meta("C"), 3: _meta("A"), 4: _meta("A"), 5: _meta("B")}
    out = apply_context(_cands([(1, 0.9), (2, 0.8), (3, 0.7), (5, 0.65), (4, 0.55)]), meta,
                        boost=1.0, top=3, kinds=KINDS)
    assert {c.pk: c.context for c in out} == {1: 2.0, 3: 2.0, 4: 2.0, 2: 1.0 + 0.8 / 1.6, 5: 1.0}
    for c in out:
        assert c.score == c.fused * c.context
    # 1.8, 1.4, 1.2, 1.1, 0.65: session A's third turn passes B's lone turn
    assert [c.pk for c in out] == [1, 3, 2, 4, 5]


def test_records_of_one_passage_each_are_left_as_they_are():
    meta = {pk: _meta(f"r{pk}") for pk in range(5)}
    cands = _cands([(0, 0.9), (1, 0.8), (2, 0.5), (3, 0.4), (4, 0.1)])
    assert apply_context(cands, meta, boost=1.0, top=10, kinds=KINDS) == cands


def test_only_the_given_kinds_are_lifted_and_boost_zero_is_off():
    meta = {1: _meta("D", "doc"), 2: _meta("D", "doc"), 3: _meta("S"), 4: _meta("S")}
    cands = _cands([(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)])
    out = apply_context(cands, meta, boost=1.0, top=4, kinds=KINDS)
    assert {c.pk: c.context for c in out} == {1: 1.0, 2: 1.0, 3: 1.0 + 1.3 / 1.7, 4: 1.0 + 1.3 / 1.7}
    assert apply_context(cands, meta, boost=0.0, top=4, kinds=KINDS) == cands
    assert apply_context(cands, meta, boost=1.0, top=4, kinds=()) == cands


def test_pipeline_lifts_the_turns_of_the_session_that_talks_about_it_and_explains_exactly(conn):
    def session(turns, day):
        draft = RecordDraft(body="\n".join(turns), kind="conversation", namespace="chat", event_at=day)
        with write_tx(conn):
            rid = insert_record(conn, draft, tuple(PassageDraft(text=t, speaker=t.split(":")[0]) for t in turns))
        return {o: pk for pk, o in conn.execute("SELECT pk, ord FROM passages WHERE record_id = ?", (rid,))}

    # The garden session talks about tomatoes three times; the answer turn ("the Roma ones")
    # shares one word with the question.  Another session mentions tomatoes once, in passing.
    garden = session(["Ana: my tomatoes are finally red", "Ben: which tomatoes did you plant?",
                      "Ana: the Roma ones, tomatoes love this heat", "Ben: nice"], "2024-06-01")
    other = session(["Ben: tomatoes at the market were pricey", "Ana: ok", "Ben: see you"], "2024-06-02")
    profile = load_profile("minmax").with_overrides({"cutoff.gap": 1.0, "context.boost": 1.0})
    request = SearchRequest("which tomatoes did Ana plant", mode="keyword", response_format="explain",
                            now="2024-07-01T00:00:00Z")
    plain = search(conn, request, profile.with_overrides({"context.boost": 0.0}))
    lifted = search(conn, request, profile)
    assert {r.pk for r in lifted.results} == {r.pk for r in plain.results}
    assert all(r.why.context_factor == 1.0 for r in plain.results)
    by_pk = {r.pk: r for r in lifted.results}
    assert by_pk[garden[2]].why.context_factor > 1.0
    if other[0] in by_pk:
        assert by_pk[other[0]].why.context_factor <= by_pk[garden[2]].why.context_factor
    for res in lifted.results:
        assert_why_reproduces_final(res)
        assert 1.0 <= res.why.context_factor <= 2.0


def test_profile_rejects_a_context_of_one():
    from memo.errors import ProfileError

    with pytest.raises(ProfileError, match="context.top"):
        load_profile("rrf").with_overrides({"context.top": 1})
    with pytest.raises(ProfileError, match="context.kinds"):
        load_profile("rrf").with_overrides({"context.kinds": ["chat"]})
