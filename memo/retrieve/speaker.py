"""Stage 4b, speaker: a passage said by someone the query names scores ``x (1 + boost)``.

Why: in a conversation both speakers' names sit in every turn ("Caroline: ..."), so to
bm25 a speaker's name is a stop word (idf ~0) and to the embedding a faint token, yet a
question that names one speaker ("what did Caroline paint?") is nearly always answered by
that speaker's own turns: on LoCoMo, 96% of the evidence turns of the 1,371 questions that
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

``score = (fused * recency) * speaker``: ``why`` carries both factors, so explain still
reproduces ``final`` exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from memo.retrieve.recency import sort_best_first
from memo.retrieve.types import Candidate, Meta

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


def apply_speaker(cands: Sequence[Candidate], meta: Mapping[int, Meta], query: str,
                  boost: float) -> tuple[list[Candidate], tuple[str, ...]]:
    """(candidates best first, the named speakers sorted).  Input best first (recency's
    order); the output is re-sorted only when a factor changed."""
    if boost <= 0.0:
        return list(cands), ()
    present = {m.speaker for c in cands if (m := meta.get(c.pk)) is not None and m.speaker}
    named = named_speakers(query, present)
    if not named:
        return list(cands), ()
    factor = 1.0 + boost
    out = []
    for c in cands:
        m = meta.get(c.pk)
        if m is not None and m.speaker in named:
            c = c._replace(score=c.score * factor, speaker=factor)
        out.append(c)
    sort_best_first(out)
    return out, tuple(sorted(named))
