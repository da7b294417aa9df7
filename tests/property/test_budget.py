"""Budget packing, cutoff and limit invariants over random ranked lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve.budget import pack
from memo.retrieve.cutoff import cutoff
from memo.retrieve.limit import limit
from memo.retrieve.types import Candidate, Evidence, Meta
from tests.fast_examples import examples

ITEMS = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.integers(0, 500)), max_size=60)


def ranked_of(items):
    cands = [Candidate(i, {"keyword": Evidence(1, s, s)}, s, 1.0, s) for i, (s, _) in enumerate(items)]
    cands.sort(key=lambda c: (-c.score, c.pk))
    meta = {i: Meta("doc", "d", None, t, None) for i, (_, t) in enumerate(items)}
    return cands, meta


@settings(max_examples=examples(300), deadline=None)
@given(ITEMS, st.integers(1, 3000))
def test_budget_is_never_exceeded_and_order_kept(items, max_tokens):
    cands, meta = ranked_of(items)
    kept, skipped, used = pack(cands, meta, max_tokens)
    assert used == sum(meta[c.pk].tokens for c in kept) <= max_tokens
    assert len(kept) + len(skipped) == len(cands)
    order = [c.pk for c in cands]
    assert [c.pk for c in kept] == [pk for pk in order if pk not in set(skipped)]
    # greedy: every skipped result really did not fit at its turn
    running = 0
    kept_set = {c.pk for c in kept}
    for c in cands:
        if c.pk in kept_set:
            running += meta[c.pk].tokens
        else:
            assert running + meta[c.pk].tokens > max_tokens


@settings(max_examples=examples(300), deadline=None)
@given(ITEMS, st.integers(0, 10), st.floats(0.01, 1.0), st.integers(1, 100))
def test_cutoff_and_limit_keep_a_prefix(items, min_results, gap, n):
    cands, _ = ranked_of(items)
    kept, cut, kind = cutoff(cands, min_results=min_results, gap=gap)
    assert kept == cands[:len(kept)] and [c.pk for c in cands[len(kept):]] == cut
    assert len(kept) >= min(len(cands), max(min_results, 1))
    if kind == "gap":
        i = len(kept)
        assert cands[i].score < (1 - gap) * cands[i - 1].score
    for i in range(max(min_results, 1), len(kept)):
        assert not kept[i].score < (1 - gap) * kept[i - 1].score
    lim, dropped = limit(kept, n)
    assert lim == kept[:n] and len(lim) + len(dropped) == len(kept)
