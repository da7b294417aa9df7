"""narrow_hint skips a field whose value is one over every candidate (issue 34's replay
speed); the hint must be what the plain definition gives (every field counted), for any
candidates, returned subset, metadata and scope."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from memo.retrieve.narrow import narrow_hint
from memo.retrieve.types import Candidate, Evidence, Meta, Scope
from tests.fast_examples import examples

_FIELDS = (("namespace", "namespaces", "--namespace"), ("kind", "kinds", "--kind"),
           ("source", "sources", "--source"))


def reference(ranked, returned, meta, scope):
    """The hint as first written: every field counted over the returned results."""
    if len(ranked) <= len(returned):
        return None
    basis = returned or ranked[:1]
    best = None
    for field, scope_field, option in _FIELDS:
        if len(getattr(scope, scope_field)) == 1:
            continue
        values = [getattr(meta[c.pk], field) for c in basis if c.pk in meta]
        counts = Counter(v for v in values if v is not None)
        if not counts:
            continue
        top = max(counts.values())
        value = next(v for v in values if v is not None and counts[v] == top)
        would_drop = sum(1 for c in ranked if c.pk in meta and getattr(meta[c.pk], field) != value)
        if would_drop > 0 and (best is None or would_drop > best["would_drop"]):
            best = {"field": field, "value": value, "would_drop": would_drop, "option": f"{option} {value}"}
    return best


VALUE = st.sampled_from(["a", "b", None])
META = st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["a", "b"]), VALUE, st.booleans())


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(META, max_size=25), st.integers(0, 25), st.sampled_from([(), ("a",), ("a", "b")]))
def test_narrow_hint_matches_its_definition(rows, n_returned, namespaces):
    ranked = [Candidate(i, {"keyword": Evidence(1, 1.0, 1.0)}, 1.0, 1.0) for i in range(len(rows))]
    meta = {i: Meta(kind, ns, src, 10, None) for i, (ns, kind, src, present) in enumerate(rows) if present}
    returned = ranked[:min(n_returned, len(ranked))]
    scope = Scope(namespaces=namespaces)
    assert narrow_hint(ranked, returned, meta, scope) == reference(ranked, returned, meta, scope)
