import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memo.embed.model import _passes, passage_text


@given(st.lists(st.integers(1, 256), min_size=1, max_size=300), st.integers(1, 64), st.integers(256, 8192))
def test_passes_cover_every_row_once_within_limits(lengths, max_rows, max_tokens):
    order = np.argsort(lengths, kind="stable")
    passes = _passes(order, lengths, max_rows, max_tokens)
    flat = np.concatenate(passes)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    for p in passes:
        assert len(p) <= max_rows
        assert len(p) == 1 or len(p) * max(lengths[i] for i in p) <= max_tokens


def test_passage_text():
    assert passage_text("", "body") == "body"
    assert passage_text("Title", "body") == "Title\n\nbody"
