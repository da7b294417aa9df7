"""Stage 4b, speaker: which speakers a query names, the factor, the order, explain."""

from __future__ import annotations

import pytest
from retrieve_helpers import assert_why_reproduces_final, rescore_named

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.speaker import RESCORER, named_speakers
from memo.retrieve.types import Candidate, Meta
from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

NOW = "2024-07-01T00:00:00Z"


@pytest.mark.parametrize(("query", "speakers", "named"), [
    ("What did Caroline paint?", {"Caroline", "Melanie"}, {"Caroline"}),
    ("what did caroline's mother say", {"Caroline", "Melanie"}, {"Caroline"}),   # case, possessive
    ("When did Caroline and Melanie meet?", {"Caroline", "Melanie"}, {"Caroline", "Melanie"}),
    ("What did Carol paint?", {"Caroline", "Melanie"}, set()),                   # whole words only
    ("Where does Jon Snow live?", {"Jon Snow", "Gina"}, {"Jon Snow"}),
    ("Where does Jon live?", {"Jon Snow", "Gina"}, {"Jon Snow"}),                # unique first word
    ("Where does Jon live?", {"Jon Snow", "Jon Arryn"}, set()),                  # ambiguous first word
    ("Where does Snow live?", {"Jon Snow", "Gina"}, set()),                      # not the first word
    ("anything at all", set(), set()),
    ("", {"Caroline"}, set()),
])
def test_named_speakers(query, speakers, named):
    assert named_speakers(query, speakers) == named


def _cands(scores):
    return [Candidate(pk, {}, s, s, 0.0) for pk, s in scores]


def test_apply_speaker_boosts_the_named_speakers_passages_and_resorts():
    meta = {1: Meta("conversation", "n", None, 5, None, "Melanie"),
            2: Meta("conversation", "n", None, 5, None, "Caroline"),
            3: Meta("doc", "n", None, 5, None, None)}
    out, named = rescore_named(RESCORER, _cands([(1, 0.5), (3, 0.45), (2, 0.4)]), meta, "what did Caroline paint?", speaker__boost=0.3)
    assert named == ("Caroline",)
    assert [c.pk for c in out] == [2, 1, 3]
    assert out[0].score == 0.4 * 1.3 and out[0].factor("speaker") == 1.3
    assert out[1].factor("speaker") == 1.0 and out[1].score == 0.5


def test_apply_speaker_is_a_no_op_without_boost_or_name():
    meta = {1: Meta("conversation", "n", None, 5, None, "Melanie"),
            2: Meta("conversation", "n", None, 5, None, "Caroline")}
    cands = _cands([(1, 0.5), (2, 0.4)])
    assert rescore_named(RESCORER, cands, meta, "what did Caroline paint?", speaker__boost=0.0) == (cands, ())
    assert rescore_named(RESCORER, cands, meta, "what did anyone paint?", speaker__boost=0.3) == (cands, ())


def _turns(conn, turns):
    draft = RecordDraft(body="\n".join(t for _, t in turns), kind="conversation", event_at="2024-06-01")
    with write_tx(conn):
        rid = insert_record(conn, draft, tuple(PassageDraft(text=f"{s}: {t}", speaker=s) for s, t in turns))
    return {ord_: pk for pk, ord_ in conn.execute("SELECT pk, ord FROM passages WHERE record_id = ?", (rid,))}


def test_pipeline_ranks_the_named_speakers_turn_first_and_explains_it_exactly(conn):
    # Each name is in half the turns (bm25 idf ~0, as in a real conversation), so by its
    # words alone Melanie's turn wins (both words, twice, in a short turn).
    pks = _turns(conn, [("Melanie", "Painting the lake, painting the lake!"),
                        ("Caroline", "I painted by the lake once, long ago, with friends from my old art class"),
                        ("Melanie", "Nice weather today"), ("Caroline", "Yes, sunny"),
                        ("Melanie", "See you soon"), ("Caroline", "Bye")])
    profile = load_profile("rrf").with_overrides({"cutoff.gap": 1.0, "speaker.boost": 0.3})
    plain = search(conn, SearchRequest("what did Caroline paint at the lake", response_format="explain", now=NOW),
                   profile.with_overrides({"speaker.boost": 0.0}))
    boosted = search(conn, SearchRequest("what did Caroline paint at the lake", response_format="explain", now=NOW),
                     profile)
    assert "speaker" not in plain.trace.rescore and boosted.trace.rescore["speaker"] == ("Caroline",)
    assert {r.pk for r in boosted.results} == {r.pk for r in plain.results}
    caroline = next(r for r in boosted.results if r.pk == pks[1])
    assert caroline.why.label("speaker") == "Caroline" and caroline.why.factor("speaker") == 1.0 + profile.speaker.boost
    assert plain.results[0].pk != pks[1] and boosted.results[0].pk == pks[1]
    for res in boosted.results:
        assert_why_reproduces_final(res)
        w = res.why
        said = res.text.split(":")[0]
        assert (w.label("speaker"), w.factor("speaker")) == (("Caroline", 1.3) if said == "Caroline" else (None, 1.0))


def test_profile_rejects_a_negative_boost():
    from memo.errors import ProfileError

    with pytest.raises(ProfileError, match="speaker.boost"):
        load_profile("rrf").with_overrides({"speaker.boost": -0.1})
