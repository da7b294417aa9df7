"""Stage 6, cutoff: the list ends at the first result, past ``min_results``, whose score
drops by more than ``gap`` from the previous one (seed section 6):

    cut before i  (0-based)  at the first i >= min_results with score_i < (1 - gap) * score_(i-1)

``gap`` = 1.0 never cuts (scores are >= 0).  Kind: 'gap' (cut), 'none' (no big drop),
'disabled' (gap 1.0), 'min_results' (the list is not longer than min_results).
"""

from __future__ import annotations

from collections.abc import Sequence

from memo.retrieve.types import Candidate


def cutoff(ranked: Sequence[Candidate], *, min_results: int, gap: float) -> tuple[list[Candidate], list[int], str]:
    """(kept, dropped pks, cutoff kind)."""
    if gap >= 1.0:
        return list(ranked), [], "disabled"
    if len(ranked) <= max(min_results, 1):
        return list(ranked), [], "min_results"
    keep = 1.0 - gap
    for i in range(max(min_results, 1), len(ranked)):
        if ranked[i].score < keep * ranked[i - 1].score:
            return list(ranked[:i]), [c.pk for c in ranked[i:]], "gap"
    return list(ranked), [], "none"
