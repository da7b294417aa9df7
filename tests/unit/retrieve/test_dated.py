"""Stage 4c, dates: passages dated in a period the query names, the factor, kinds, explain."""

from __future__ import annotations

from retrieve_helpers import FakeSemantic, add, assert_why_reproduces_final, pk_of, rescore_named

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.dated import RESCORER
from memo.retrieve.types import Candidate, Meta

NOW = "2024-07-01T00:00:00Z"
KINDS = ("note", "conversation")


def _cands(scores):
    return [Candidate(pk, {}, s, s, 0.0) for pk, s in scores]


def test_apply_dated_boosts_passages_of_aging_kinds_inside_the_period():
    meta = {1: Meta("note", "n", None, 5, "2023-08-02T10:00:00Z"),
            2: Meta("note", "n", None, 5, "2023-07-20T10:00:00Z"),
            3: Meta("doc", "n", None, 5, "2023-07-21T10:00:00Z"),      # a document dated when recorded: never
            4: Meta("conversation", "n", None, 5, None)}               # no date: never
    out, periods = rescore_named(RESCORER, _cands([(1, 0.5), (3, 0.45), (4, 0.44), (2, 0.2)]), meta,
                                 "what did I note in July 2023", dates__boost=3.0, dates__window_days=0,
                                 recency__aging_kinds=KINDS)
    assert periods == ("2023-07",)
    assert [c.pk for c in out] == [2, 1, 3, 4]
    assert out[0].score == 0.2 * 4.0 and out[0].factor("dates") == 4.0
    assert all(c.factor("dates") == 1.0 for c in out[1:])


def test_apply_dated_window_and_no_op():
    meta = {1: Meta("note", "n", None, 5, "2023-10-15"), 2: Meta("note", "n", None, 5, "2023-10-20")}
    cands = _cands([(2, 0.5), (1, 0.4)])
    out, _ = rescore_named(RESCORER, cands, meta, "on October 13, 2023", dates__boost=1.0, dates__window_days=3)
    assert [c.pk for c in out] == [1, 2]                              # 15th within 13 +- 3, 20th not
    assert rescore_named(RESCORER, cands, meta, "on October 13, 2023", dates__boost=0.0) == (cands, ())
    assert rescore_named(RESCORER, cands, meta, "anything undated", dates__boost=1.0) == (cands, ())


def test_pipeline_prefers_the_named_month_and_explains_it_exactly(conn):
    july = add(conn, "Painted the fence green, one coat", kind="note", event_at="2023-07-14")
    aug = add(conn, "Painted the fence green again, painted it twice, fence fence", kind="note",
              event_at="2023-08-20")
    doc = add(conn, "How to clean a fence", kind="doc", event_at="2023-07-10")     # a dated document
    undated = add(conn, "A garden catalogue with a fence", kind="doc")   # dated by when recorded
    for i, text in enumerate(["Bought milk", "Called the plumber", "Read a book", "Walked the dog",
                              "Fixed the bike", "Cooked soup"]):      # so bm25's idf means something
        add(conn, text, kind="note", event_at=f"2023-0{i + 1}-01")
    # recency off, so the notes' age does not hand the (never ageing) doc the top by itself
    profile = load_profile("rrf").with_overrides({"cutoff.gap": 1.0, "recency.floor": 1.0, "dates.boost": 3.0})
    q = "what did I paint in July 2023 on the fence"
    plain = search(conn, SearchRequest(q, mode="keyword", response_format="explain", now=NOW),
                   profile.with_overrides({"dates.boost": 0.0}))
    dated = search(conn, SearchRequest(q, mode="keyword", response_format="explain", now=NOW), profile)
    assert plain.results[0].pk == pk_of(conn, aug) and "dates" not in plain.trace.rescore
    assert dated.results[0].pk == pk_of(conn, july) and dated.trace.rescore["dates"] == ("2023-07",)
    for res in dated.results:
        assert_why_reproduces_final(res)
        w = res.why
        if res.pk in (pk_of(conn, july), pk_of(conn, doc)):     # a document with an event date counts
            assert (w.label("dates"), w.factor("dates")) == ("2023-07", 1.0 + profile.dates.boost)
        else:
            assert (w.label("dates"), w.factor("dates")) == (None, 1.0)       # August, and the undated doc
    assert {pk_of(conn, doc), pk_of(conn, undated)} <= {r.pk for r in dated.results}


def test_a_dated_document_is_lifted_and_an_undated_one_is_not():
    meta = {1: Meta("doc", "n", None, 5, "2024-03-05", dated=True),      # a daily note imported as a doc
            2: Meta("doc", "n", None, 5, "2024-03-05T09:00:00Z"),         # recorded that day, no event date
            3: Meta("code", "n", None, 5, "2024-03-05", dated=True)}
    out, _ = rescore_named(RESCORER, _cands([(2, 0.5), (1, 0.4), (3, 0.3)]), meta, "what did I do on March 5 2024",
                           dates__boost=3.0, dates__window_days=0, recency__aging_kinds=KINDS)
    assert {c.pk: c.factor("dates") for c in out} == {1: 4.0, 2: 1.0, 3: 4.0}


def test_a_days_notes_answer_a_question_about_the_day(conn):
    """"What did I do on March 5 2024?" shares no word and little meaning with that day's
    notes: every one was dropped as weakly similar and the search said "not in the knowledge
    base".  A candidate dated in the period the query names has its date as evidence
    (abstention rule 1); with the extra dates off it is dropped as before."""
    texts = {1: "Worked on the ingest service all morning.", 5: "Reviewed pull requests with the team.",
             9: "Wrote the quarterly report draft."}
    days = {d: add(conn, t, kind="doc", event_at=f"2024-03-0{d}") for d, t in texts.items()}
    weak = {"semantic": FakeSemantic({pk_of(conn, r): 0.12 for r in days.values()})}   # below semantic_floor 0.39
    profile = load_profile("zscore").with_overrides({"dates.window_days": 0})
    req = SearchRequest("what did I do on March 5 2024", now=NOW)
    got = search(conn, req, profile, weak)
    assert [r.pk for r in got.results] == [pk_of(conn, days[5])] and not got.abstained
    off = search(conn, req, profile.with_overrides({"dates.boost": 0.0}), weak)
    assert off.abstained and not off.results
