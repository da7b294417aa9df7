"""narrow_hint: when ranked results did not fit (limit or token budget), name the one scope
field that would shorten the list most.

Rule (deliberately simple): for each of namespace, kind and source that the request does
not already pin to one value, take the value most common among the returned results
(ties: the better-ranked one) and count the ranked results (after cutoff) that carry a
different value: restricting the search to that value would drop them.  The field with
the largest count wins; ties go namespace > kind > source.  No hint if nothing overflowed
or no field would drop anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from memo.retrieve.types import Candidate, Meta
from memo.types import Scope

_FIELDS = (("namespace", "namespaces", "--namespace"), ("kind", "kinds", "--kind"),
           ("source", "sources", "--source"))


def narrow_hint(ranked: Sequence[Candidate], returned: Sequence[Candidate], meta: Mapping[int, Meta],
                scope: Scope, known: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``known``: kept for candidates fused from the very same hits (``memo.retrieve.hit_memo``;
    ``meta`` then holds every one of them): which fields take more than one value over them.
    A field with one value over every candidate has one over any ranked subset."""
    if len(ranked) <= len(returned):
        return None
    vary = None
    if known is not None:
        vary = known.get("vary")
        if vary is None:
            vary = known["vary"] = frozenset(f for f, _, _ in _FIELDS
                                             if len({getattr(m, f) for m in meta.values()}) > 1)
        if not vary:
            return None
    basis = returned or ranked[:1]
    best: dict[str, Any] | None = None
    metas: list[Meta] | None = None
    for field, scope_field, option in _FIELDS:
        if len(getattr(scope, scope_field)) == 1 or (vary is not None and field not in vary):
            continue
        if metas is None:       # once, and with C-level getters: this runs on most searches
            metas = [meta[c.pk] for c in ranked if c.pk in meta]
        get = attrgetter(field)
        of_ranked = list(map(get, metas))
        if len(set(of_ranked)) <= 1:
            continue            # one value over every candidate: narrowing by it drops nothing
        values = [get(meta[c.pk]) for c in basis if c.pk in meta]
        counts = Counter(v for v in values if v is not None)
        if not counts:
            continue
        top = max(counts.values())
        value = next(v for v in values if v is not None and counts[v] == top)
        would_drop = sum(1 for v in of_ranked if v != value)
        if would_drop > 0 and (best is None or would_drop > best["would_drop"]):
            best = {"field": field, "value": value, "would_drop": would_drop, "option": f"{option} {value}"}
    return best
