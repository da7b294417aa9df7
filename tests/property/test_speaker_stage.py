"""Stage 4b invariants over random candidate lists and speakers: the same candidates come
out, each score is multiplied by exactly 1 or 1 + boost (the latter iff the query names
its speaker), and the list is ordered by score, tiebreak, pk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve.speaker import apply_speaker, named_speakers
from memo.retrieve.types import Candidate, Meta

NAMES = ["Caroline", "Melanie", "Jon Snow", "Jon Arryn", "Gina", "Ana María"]
ITEMS = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.floats(0, 1, allow_nan=False),
                           st.none() | st.sampled_from(NAMES)), max_size=40)
QUERY = st.lists(st.sampled_from([*NAMES, "jon", "snow", "caroline's", "what", "did", "say", "MELANIE"]),
                 max_size=6).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(ITEMS, QUERY, st.floats(0, 5, allow_nan=False))
def test_speaker_stage_only_multiplies_the_named_and_reorders(items, query, boost):
    cands = [Candidate(pk, {}, s, 1.0, s, t) for pk, (s, t, _) in enumerate(items)]
    meta = {pk: Meta("conversation", "n", None, 1, None, who) for pk, (_, _, who) in enumerate(items)}
    out, named = apply_speaker(cands, meta, query, boost)
    assert sorted(c.pk for c in out) == [c.pk for c in cands]
    expected = named_speakers(query, {who for _, _, who in items if who}) if boost > 0 else frozenset()
    assert set(named) == expected
    for c in out:
        before = cands[c.pk]
        if meta[c.pk].speaker in expected:
            assert c.speaker == 1.0 + boost and c.score == before.score * (1.0 + boost)
        else:
            assert c.speaker == 1.0 and c.score == before.score
    if named:
        keys = [(-c.score, -c.tiebreak, c.pk) for c in out]
        assert keys == sorted(keys)
    else:
        assert out == cands        # untouched when nothing is named
