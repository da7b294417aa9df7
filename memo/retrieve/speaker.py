"""Stage 4b, speaker: a passage said by someone the query names scores ``x (1 + boost)``.

Why: in a conversation both speakers' names sit in every turn ("Caroline: ..."), so to
bm25 a speaker's name is a stop word (idf ~0) and to the embedding a faint token, yet a
question that names one speaker ("what did Caroline paint?") is nearly always answered by
that speaker's own turns: on LoCoMo nearly all the evidence turns of the questions that
name exactly one of the two speakers are that speaker's (docs/eval.md "Speakers").  The
arms cannot see it, so a factor after fusion carries it, like recency.

Rules (all in this file, pure):

* the speakers considered are those of the fused candidates (``Meta.speaker``): no query
  against the store, and a speaker outside the scope cannot be "named";
* a speaker is named when the query's words (``\\w+``, case-folded) hold its name's words
  in order ("Caroline's" names "Caroline"), or the first word of a multi-word name that
  no other candidate speaker starts with ("Jon" for "Jon Snow");
* every passage of a named speaker gets ``factor = 1 + boost``; others keep 1.0.  A query
  naming every speaker lifts all turns alike (their order is unchanged);
* ``boost`` 0 (or no speaker named) returns the list untouched.

``why.factors`` carries the factor with the speaker as its label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memo.retrieve.rescore import NOTHING, Rescored, RescoreInput
from memo.retrieve.types import Candidate, Factor

_WORD = re.compile(r"\w+")


def words(text: str) -> tuple[str, ...]:
    return tuple(w.casefold() for w in _WORD.findall(text))


def named_speakers(query: str, speakers: set[str]) -> frozenset[str]:
    """The ``speakers`` the query names (rules in the module docstring)."""
    if not speakers:
        return frozenset()
    q = words(query)
    if not q:
        return frozenset()
    joined = " " + " ".join(q) + " "
    split = {s: words(s) for s in speakers}
    firsts: dict[str, int] = {}
    for ws in split.values():
        if ws:
            firsts[ws[0]] = firsts.get(ws[0], 0) + 1
    named = set()
    qset = set(q)
    for s, ws in split.items():
        if not ws:
            continue
        if " " + " ".join(ws) + " " in joined or (len(ws) > 1 and firsts[ws[0]] == 1 and ws[0] in qset):
            named.add(s)
    return frozenset(named)


class Speaker:
    """Stage 4b: ``speaker.boost``."""

    name = "speaker"

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored:
        boost = inp.profile.speaker.boost
        if boost <= 0.0:
            return NOTHING
        meta = inp.meta
        present = {m.speaker for c in cands if (m := meta.get(c.pk)) is not None and m.speaker}
        named = named_speakers(inp.query, present)
        if not named:
            return NOTHING
        factors = {s: Factor(self.name, 1.0 + boost, s) for s in named}
        given = {c.pk: factors[m.speaker] for c in cands
                 if (m := meta.get(c.pk)) is not None and m.speaker in named}
        return Rescored(given, tuple(sorted(named)))


RESCORER = Speaker()
