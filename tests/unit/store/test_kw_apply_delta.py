"""``kw_postings.apply_delta`` against a dict's reading of the same rows: the append path
(every delta pk above the base's, none removed) and the general one give the postings the
rows say, the pks as int64 and the rest in the base's narrow dtypes unless a row needs a
wider one (a length of 70,000 does not fit the base's uint16): issue 31.1's warm search
after a write applies one write's rows to a cached term and reads them all again."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.store import kw_postings
from tests.fast_examples import examples

posting_st = st.tuples(st.integers(1, 5), st.integers(0, 2), st.integers(1, 65_535))   # fits the base's uint16


def _reference(base: dict[int, tuple[int, int, int]], delta: list[tuple[int, int, int, int]]):
    held = dict(base)
    for pk, tf, sec, dl in delta:        # in write order: the last row of a pk wins, tf 0 removes
        if tf:
            held[pk] = (tf, sec, dl)
        else:
            held.pop(pk, None)
    return held


def _arrays(base: dict[int, tuple[int, int, int]]) -> tuple[np.ndarray, ...]:
    keys = sorted(base)      # narrow dtypes, as a base row's blobs decode
    return (np.array(keys, dtype=np.int32), np.array([base[k][0] for k in keys], dtype=np.uint8),
            np.array([base[k][1] for k in keys], dtype=np.uint8), np.array([base[k][2] for k in keys], dtype=np.uint16))


@settings(max_examples=examples(200), deadline=None)
@given(base=st.dictionaries(st.integers(1, 60), posting_st, max_size=20),
       delta=st.lists(st.tuples(st.integers(1, 90), st.integers(0, 5), st.integers(0, 2), st.integers(1, 70_000)),
                      max_size=8),
       append=st.booleans())
def test_apply_delta_is_the_rows_in_write_order(base, delta, append) -> None:
    if append:      # the common case: new records' pks above every stored one, nothing removed
        top = max(base, default=0)
        delta = [(top + 1 + pk, max(tf, 1), sec, dl) for pk, tf, sec, dl in delta]
    got = kw_postings.apply_delta(_arrays(base), delta)
    want = _reference(base, delta)
    keys = sorted(want)
    if delta:     # pks as numpy indexes them; the rest as narrow as their values allow
        assert got[0].dtype == np.int64
        for a, base_a in zip(got[1:], _arrays(base)[1:], strict=True):
            assert a.dtype == np.promote_types(base_a.dtype, np.min_scalar_type(int(a.max(initial=0))))
    assert got[0].tolist() == keys
    assert list(zip(got[1].tolist(), got[2].tolist(), got[3].tolist(), strict=True)) == [want[k] for k in keys]


def test_an_append_after_a_removal_in_the_same_delta_takes_the_general_path() -> None:
    base = _arrays({3: (1, 0, 10), 7: (2, 1, 20)})
    got = kw_postings.apply_delta(base, [(9, 1, 0, 5), (3, 0, 0, 10)])
    assert got[0].tolist() == [7, 9] and got[1].tolist() == [2, 1] and got[3].tolist() == [20, 5]
