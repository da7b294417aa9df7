"""Stage 4e, context: the record masses, the factor, which kinds, the order, explain."""

from __future__ import annotations

import pytest
from retrieve_helpers import assert_why_reproduces_final, rescore

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.context import RESCORER
from memo.retrieve.types import Candidate, Meta
from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

KINDS = ("conversation",)


def _cands(scores):
    return [Candidate(pk, {}, s, s, 0.0) for pk, s in scores]


def _meta(record, kind="conversation", section=""):
    return Meta(kind, "n", None, 5, None, None, section, record)


def test_a_record_with_several_top_passages_lifts_its_passages_by_its_share():
    # The context is the best 3: session A holds pks 1 and 3 (mass 0.9 + 0.7 = 1.6, the
    # largest), C holds pk 2 (0.8).  pk 4 (A) is outside the context but lifted with its
    # session; pk 5 (B) has no passage in the context.
    meta = {1: _meta("A"), 2: _meta("C"), 3: _meta("A"), 4: _meta("A"), 5: _meta("B")}
    out = rescore(RESCORER, _cands([(1, 0.9), (2, 0.8), (3, 0.7), (5, 0.65), (4, 0.55)]), meta,
                        context__boost=1.0, context__top=3, context__kinds=KINDS)
    assert {c.pk: c.factor("context") for c in out} == {1: 2.0, 3: 2.0, 4: 2.0, 2: 1.0 + 0.8 / 1.6, 5: 1.0}
    for c in out:
        assert c.score == c.fused * c.factor("context")
    # 1.8, 1.4, 1.2, 1.1, 0.65: session A's third turn passes B's lone turn
    assert [c.pk for c in out] == [1, 3, 2, 4, 5]


def test_records_of_one_passage_each_are_left_as_they_are():
    meta = {pk: _meta(f"r{pk}") for pk in range(5)}
    cands = _cands([(0, 0.9), (1, 0.8), (2, 0.5), (3, 0.4), (4, 0.1)])
    assert rescore(RESCORER, cands, meta, context__boost=1.0, context__top=10, context__kinds=KINDS) == cands


def test_only_the_given_kinds_are_lifted_and_boost_zero_is_off():
    meta = {1: _meta("D", "doc", "fs > fs.rm"), 2: _meta("D", "doc", "fs > fs.rmdir"), 3: _meta("S"), 4: _meta("S")}
    cands = _cands([(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)])
    out = rescore(RESCORER, cands, meta, context__boost=1.0, context__top=4, context__kinds=KINDS)
    assert {c.pk: c.factor("context") for c in out} == {1: 1.0, 2: 1.0, 3: 1.0 + 1.3 / 1.7, 4: 1.0 + 1.3 / 1.7}
    assert rescore(RESCORER, cands, meta, context__boost=0.0, context__top=4, context__kinds=KINDS) == cands
    assert rescore(RESCORER, cands, meta, context__boost=1.0, context__top=4, context__kinds=()) == cands


def test_pieces_of_one_section_count_once_and_turns_each():
    # A doc section cut in two by length (pks 1, 2: same record and section) is one unit of
    # score 0.9, not a record discussed at length: alone in its record, it is left as it is.
    one_section = {1: _meta("A", "doc", "Abstract"), 2: _meta("A", "doc", "Abstract"), 3: _meta("B", "doc", "B")}
    cands = _cands([(1, 0.9), (2, 0.8), (3, 0.7)])
    assert rescore(RESCORER, cands, one_section, context__boost=1.0, context__top=10, context__kinds=("doc",)) == cands
    # Two sections of one file are two units: mass 0.9 + 0.7; the cut section counts its best piece.
    two = {1: _meta("F", "doc", "fs > fs.rm"), 2: _meta("F", "doc", "fs > fs.rm"), 3: _meta("F", "doc", "fs > fs.stat"),
           4: _meta("G", "doc", "path > path.join")}
    out = rescore(RESCORER, _cands([(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]), two, context__boost=1.0, context__top=10, context__kinds=("doc",))
    assert {c.pk: c.factor("context") for c in out} == {1: 2.0, 2: 2.0, 3: 2.0, 4: 1.0 + 0.6 / 1.6}
    # Conversation turns that share a section (LoCoMo's "session 3") are one unit each.
    turns = {1: _meta("S", section="session 3"), 2: _meta("S", section="session 3"), 3: _meta("T", section="session 4")}
    out = rescore(RESCORER, _cands([(1, 0.9), (2, 0.8), (3, 0.7)]), turns, context__boost=1.0, context__top=10, context__kinds=KINDS)
    assert {c.pk: c.factor("context") for c in out} == {1: 2.0, 2: 2.0, 3: 1.0 + 0.7 / 1.7}


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
    assert all(r.why.factor("context") == 1.0 for r in plain.results)
    by_pk = {r.pk: r for r in lifted.results}
    assert by_pk[garden[2]].why.factor("context") > 1.0
    if other[0] in by_pk:
        assert by_pk[other[0]].why.factor("context") <= by_pk[garden[2]].why.factor("context")
    for res in lifted.results:
        assert_why_reproduces_final(res)
        assert 1.0 <= res.why.factor("context") <= 2.0


def test_pipeline_lifts_the_sections_of_the_file_a_question_is_about_and_counts_a_cut_section_once(conn):
    def doc(sections):
        draft = RecordDraft(body="\n".join(t for _, t in sections), kind="doc", namespace="docs")
        with write_tx(conn):
            rid = insert_record(conn, draft, tuple(PassageDraft(text=t, section=h) for h, t in sections))
        return {o: pk for pk, o in conn.execute("SELECT pk, ord FROM passages WHERE record_id = ?", (rid,))}

    # fs.md: two sections about reading a file, and the answer (readFile) that says "contents".
    fs = doc([("fs > fs.open", "open a file to read it"), ("fs > fs.read", "read bytes of a file"),
              ("fs > fs.readFile", "get the whole contents of a file")])
    # stream.md: one section cut in two by length: one unit, which alone lifts nothing.
    stream = doc([("stream > readable.read", "read data from a file stream"),
                  ("stream > readable.read", "read more of the file stream")])
    profile = load_profile("rrf").with_overrides({"cutoff.gap": 1.0, "context.boost": 1.0})
    request = SearchRequest("read a file", mode="keyword", response_format="explain")
    lifted = search(conn, request, profile)
    plain = search(conn, request, profile.with_overrides({"context.boost": 0.0}))
    by_pk = {r.pk: r for r in lifted.results}
    assert by_pk[fs[0]].why.factor("context") == by_pk[fs[1]].why.factor("context") == 2.0   # the largest mass
    before = {pk: r.why.final / r.why.factor("context") for pk, r in by_pk.items()}   # score entering 4e
    fs_mass = sum(before[pk] for pk in fs.values())
    for pk in stream.values():   # the cut section's mass is its best piece, not the two pieces' sum
        assert by_pk[pk].why.factor("context") == pytest.approx(1.0 + max(before[q] for q in stream.values()) / fs_mass)
    for res in lifted.results:
        assert_why_reproduces_final(res)
    assert all(r.why.factor("context") == 1.0 for r in plain.results)
    # the seed's profiles run without the stage
    assert load_profile("rrf").context.boost == load_profile("minmax").context.boost == 0.0


def test_profile_rejects_a_context_of_one():
    from memo.errors import ProfileError

    with pytest.raises(ProfileError, match="context.top"):
        load_profile("rrf").with_overrides({"context.top": 1})
    with pytest.raises(ProfileError, match="context.kinds"):
        load_profile("rrf").with_overrides({"context.kinds": ["chat"]})
