"""Stage 4e, context: a passage whose record holds several of the best candidates scores up
to ``x (1 + boost)``.

Why: a record is a unit of context - a conversation session, a document, a note.  When
several of its passages are among the best candidates, the topic the query asks about is
discussed there, and its other passages are likelier to hold the answer than a lone
passage elsewhere with the same score (the passage + document evidence of classic passage
retrieval).  LoCoMo's answers sit in the session where their topic comes up: a question
about a recipe finds three turns of that session's talk about it, and the turn that names
the dish shares no word with the question.  A documentation file is a record too: a how-to
question whose words several sections of ``fs.md`` match is about the file system, and the
section that answers it is likelier there than in a lone section of another module ("how
to read a whole file into a string": ``fs.readFile`` passes ``readable.read([size])`` of
``stream.md`` under rrf; measured on nodedocs: docs/eval.md "Context").

Rules (all in this file, pure):

* the context is the best ``context.top`` candidates after stages 4-4d;
* a record's mass is the sum of its units' scores in the context, a unit's score being
  that of its best passage there.  A unit is a passage of the ``memo.types.TURN_KINDS``
  (a conversation turn: one utterance) or a section of any other kind: the splitter cuts
  a long section into several passages by length, and those pieces are one unit, not
  evidence of a topic discussed at length (without it a SciFact abstract cut in two lifts
  itself and SciFact's ranking drops: docs/eval.md "Context");
* ``M`` is the largest mass of any record there;
* ``factor = 1 + boost * mass(record) / M`` for candidates of the ``context.kinds`` whose
  record has mass, else 1.0: between 1 and 1 + boost.  A unit alone in its record is
  lifted by its own score only, which keeps such passages in order;
* ``boost`` 0, or no record with two units in the context, returns the list untouched
  (so a corpus of one-section records, such as SciFact's abstracts, is ranked exactly as
  before).

A form that counted only a passage's siblings (its own score left out of its record's
mass) was measured and not kept: it pulls the rest of one session in and pushes out the
lone turns of other sessions a multi-hop answer needs (docs/eval.md "Context").

``why.factors`` carries the factor, labelled with the record's share of the largest mass.
"""

from __future__ import annotations

from collections.abc import Sequence

from memo.retrieve.rescore import NOTHING, Rescored, RescoreInput
from memo.retrieve.types import Candidate, Factor
from memo.types import TURN_KINDS


class Context:
    """Stage 4e: ``context.boost``, ``context.top``, ``context.kinds``."""

    name = "context"

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored:
        cfg = inp.profile.context
        boost, top, kinds, meta = cfg.boost, cfg.top, cfg.kinds, inp.meta
        if boost <= 0.0 or top < 2 or len(cands) < 2:
            return NOTHING
        best: dict[tuple[str, int | str], float] = {}   # (record, unit) -> the unit's best score
        for c in cands[:top]:
            m = meta.get(c.pk)
            if m is not None and m.record:
                # the input is best first: a unit's first passage is its best
                best.setdefault((m.record, c.pk if m.kind in TURN_KINDS else m.section), c.score)
        mass: dict[str, float] = {}
        for (record, _unit), score in best.items():
            mass[record] = mass.get(record, 0.0) + score
        if len(mass) == len(best):                  # no record holds two units
            return NOTHING
        biggest = max(mass.values())
        if biggest <= 0.0:
            return NOTHING
        factors = {r: Factor(self.name, 1.0 + boost * (m / biggest), f"record {m / biggest:.2f} of the best")
                   for r, m in mass.items()}
        given = {c.pk: factors[m.record] for c in cands
                 if (m := meta.get(c.pk)) is not None and m.kind in kinds and m.record in factors}
        return Rescored(given)


RESCORER = Context()
