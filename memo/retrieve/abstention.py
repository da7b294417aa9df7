"""Stage 5, abstention: a candidate whose ONLY evidence is a semantic similarity below the
model's ``semantic_floor`` is dropped (seed section 5).  Any other arm's vote (a keyword
or identifier match) is evidence enough to keep it.

Trigger: only-semantic evidence, cosine < floor.  Why: a nearest neighbour always exists,
so without a floor every query "finds" something.  Outcome: if nothing survives, the
response has zero results, a reason and a hint: "not in the knowledge base" is an
answer, not an error.  With no bands for the model (unknown model id), nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from memo.retrieve.types import Candidate


def abstain(ranked: Sequence[Candidate], semantic_floor: float | None) -> tuple[list[Candidate], list[int]]:
    """(kept in order, dropped pks).  ``semantic_floor`` None = no bands for the model."""
    if semantic_floor is None:
        return list(ranked), []
    floor = semantic_floor
    kept, dropped = [], []
    for c in ranked:
        sem = c.arms.get("semantic")
        if sem is not None and len(c.arms) == 1 and sem.raw < floor:
            dropped.append(c.pk)
        else:
            kept.append(c)
    return kept, dropped
