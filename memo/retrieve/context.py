"""Stage 4e, context: a passage whose record holds several of the best candidates scores up
to ``x (1 + boost)``.

Why: a record is a unit of context - a conversation session, a document, a note.  When
several of its passages are among the best candidates, the topic the query asks about is
discussed there, and its other passages are likelier to hold the answer than a lone
passage elsewhere with the same score (the passage + document evidence of classic passage
retrieval).  LoCoMo's answers sit in the session where their topic comes up: a question
about a recipe finds three turns of that session's talk about it, and the turn that names
the dish shares no word with the question.

Rules (all in this file, pure):

* the context is the best ``context.top`` candidates after stages 4-4d;
* a record's mass is the sum of its passages' scores in the context; ``M`` is the largest
  mass of any record there;
* ``factor = 1 + boost * mass(record) / M`` for candidates of the ``context.kinds`` whose
  record has mass, else 1.0: between 1 and 1 + boost.  A passage alone in its record is
  lifted by its own score only, which keeps such passages in order;
* ``boost`` 0, or no record with two passages in the context, returns the list untouched
  (so a corpus of one-passage records is ranked exactly as before).

A form that counted only a passage's siblings (its own score left out of its record's
mass) was measured and not kept: it pulls the rest of one session in and pushes out the
lone turns of other sessions a multi-hop answer needs (docs/eval.md "Context").

``score = ((((fused * recency) * speaker) * date) * heading) * context``; ``why`` carries
every factor, so explain still reproduces ``final`` exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.retrieve.recency import sort_best_first
from memo.retrieve.types import Candidate, Meta

_FIELDS = ("pk", "arms", "fused", "factor", "score", "tiebreak", "speaker", "dated", "headed", "context")
if Candidate._fields != _FIELDS:    # apply_context builds candidates by position
    raise ImportError("memo.retrieve.types.Candidate changed: update memo.retrieve.context.apply_context")


def apply_context(cands: Sequence[Candidate], meta: Mapping[int, Meta], *, boost: float, top: int,
                  kinds: tuple[str, ...]) -> list[Candidate]:
    """Candidates best first.  Input best first; re-sorted only when a factor changed."""
    if boost <= 0.0 or top < 2 or len(cands) < 2:
        return list(cands)
    head = cands[:top]
    mass: dict[str, float] = {}
    placed = 0                                  # head candidates with a record
    for c in head:
        m = meta.get(c.pk)
        if m is not None and m.record:
            mass[m.record] = mass.get(m.record, 0.0) + c.score
            placed += 1
    if len(mass) == placed:                     # no record holds two of them
        return list(cands)
    biggest = max(mass.values())
    if biggest <= 0.0:
        return list(cands)
    # Most candidates of a LoCoMo search belong to a session with mass, so each is rebuilt:
    # tuple.__new__ with the fields in order costs a third of NamedTuple._replace.
    make = Candidate.__new__
    out, changed = [], False
    for c in cands:
        m = meta.get(c.pk)
        if m is not None and m.kind in kinds and m.record in mass:
            factor = 1.0 + boost * (mass[m.record] / biggest)
            c = make(Candidate, c.pk, c.arms, c.fused, c.factor, c.score * factor, c.tiebreak, c.speaker,
                     c.dated, c.headed, factor)
            changed = True
        out.append(c)
    if changed:
        sort_best_first(out)
    return out
