"""Stage 5, abstention: a candidate whose ONLY evidence is a semantic similarity below the
model's ``semantic_floor`` is dropped (seed section 5).  Any other arm's vote (a keyword
or identifier match) is evidence enough to keep it.  A fact arm vote counts as semantic
evidence only when every voting fact was matched by meaning alone: then it is weak when
each of those cosines is below the floor (a fact matched by keyword is keyword evidence).

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
        if all(_weak(name, ev, floor) for name, ev in c.arms.items()):
            dropped.append(c.pk)
        else:
            kept.append(c)
    return kept, dropped


def _weak(arm: str, ev, floor: float) -> bool:
    """Is this arm's vote only a semantic similarity below the floor?"""
    if arm == "semantic":
        return ev.raw < floor
    if arm == "fact":
        return bool(ev.votes) and all(v.keyword_rank is None and v.semantic_raw is not None
                                      and v.semantic_raw < floor for v in ev.votes)
    return False
