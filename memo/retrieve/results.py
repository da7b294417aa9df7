"""Stage 9, results + why: turn the packed candidates into ``Result`` s, with ``why`` when
explain is asked for.  ``why`` carries the numbers the score was computed from, in the
order it was computed (arm contributions in arm order, summed, then each of stage 4's
factors in the order applied), so a reader can reproduce ``final`` exactly
(tests/unit/retrieve/test_explain.py).

``relevance`` is the best raw cosine of the passage over every arm's vote (the semantic
arm's, for the query as embedded and as typed: ``memo.retrieve.abstention.relevance``),
read against the model's bands.  A result the semantic arm did not return (a keyword or
exact hit outside its top fetch_depth) gets the cosine of its stored vector with the query
vector (``cosines``; none when the arm did not run, as in mode keyword).

Eval replay asks for explain on 100 results per search, so this loop is hot: the age of a
date is computed once per distinct (date, now) (``_AGES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from memo.profile import ModelBands
from memo.retrieve.abstention import Weigh, relevance
from memo.retrieve.fetch import PassageRow
from memo.retrieve.recency import age_days
from memo.retrieve.types import Candidate, Meta, Result, new_arm_why, new_result, new_why


def build_results(cands: Sequence[Candidate], rows: Mapping[int, PassageRow], meta: Mapping[int, Meta],
                  bands: ModelBands | None, weigh: Weigh, *, explain: bool, now: datetime,
                  aging_kinds: tuple[str, ...] = (),
                  cosines: Callable[[list[int]], Mapping[int, float]] | None = None,
                  fusion: Mapping[str, Mapping[str, float]] | None = None) -> tuple[Result, ...]:
    """``cosines``: the stored vectors' cosines with the query for the pks it is given (the
    results no arm measured a similarity for); None when the query was not embedded.
    ``fusion``: the query's arm weights and what set them (``ArmWeights.as_dict``), shown
    in every result's ``why.fusion``."""
    out = []
    band_of = bands.band if bands is not None else None
    rels = [relevance(c, weigh) for c in cands]     # once per result: the loop below is hot
    unmeasured = [c.pk for c, rel in zip(cands, rels, strict=True) if rel is None and c.pk in rows]
    stored = cosines(unmeasured) if cosines is not None and unmeasured else {}
    for c, rel in zip(cands, rels, strict=True):
        row = rows.get(c.pk)
        if row is None:  # purged by another process since the candidates were read
            continue
        if rel is None:                       # a result no arm measured: its stored vector's cosine
            rel = stored.get(c.pk)
        band = band_of(rel) if band_of is not None else None
        why = None
        if explain:
            m = meta[c.pk]
            key = (m.when, now)
            age = _AGES.get(key, _MISSING)
            if age is _MISSING:
                if len(_AGES) >= _AGES_MAX:
                    _AGES.clear()
                age = _AGES[key] = _round(age_days(m.when, now))
            # Positional, in field order (memo.retrieve.types.new_*: the hot constructors).
            why = new_why(
                {name: new_arm_why(ev.rank, ev.raw, ev.contribution, ev.votes or None) for name, ev in c.arms.items()},
                c.fused, c.factors, c.score, rel, band, c.tiebreak,
                {"source": row.source, "author": row.author, "import_path": row.import_path,
                 "recorded_at": row.recorded_at, "content_hash": row.content_hash},
                {"event_at": row.p_event_at or row.r_event_at, "age_days": age, "ages": m.kind in aging_kinds},
                fusion)
        out.append(new_result(row.id, c.pk, row.record_id, row.text, row.section, row.kind, row.namespace,
                              c.score, rel, band, row.tokens, why, row.import_path or row.source or None))
    return tuple(out)


# The rounded age of a date at a moment, shared by every search: a record's passages share
# its date, and an eval grid asks the same query (the same ``now``) once per run.
_AGES: dict[tuple[str | None, datetime], float | None] = {}
_AGES_MAX = 1 << 16
_MISSING = object()


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
