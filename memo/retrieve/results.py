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

``build_table`` computes those per result and keeps the rest as it is (the candidate, its
row): ``memo.retrieve.result_table.ResultTable``, which builds the ``Result`` objects
(``build_results`` = the table, materialized) or hands its columns to a bulk reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from memo.profile import ModelBands
from memo.retrieve.abstention import Weigh, relevance
from memo.retrieve.fetch import PassageRow
from memo.retrieve.result_table import ResultTable
from memo.retrieve.types import Candidate, Meta, Result


def build_table(cands: Sequence[Candidate], rows: Mapping[int, PassageRow], meta: Mapping[int, Meta],
                bands: ModelBands | None, weigh: Weigh, *, explain: bool, now: datetime,
                aging_kinds: tuple[str, ...] = (),
                cosines: Callable[[list[int]], Mapping[int, float]] | None = None,
                fusion: Mapping[str, Mapping[str, float]] | None = None,
                known: dict[int, tuple[float | None, str | None]] | None = None) -> ResultTable:
    """``cosines``: the stored vectors' cosines with the query for the pks it is given (the
    results no arm measured a similarity for); None when the query was not embedded.
    ``fusion``: the query's arm weights and what set them (``ArmWeights.as_dict``), shown
    in every result's ``why.fusion``.  ``known``: each pk's (relevance, band) for candidates
    fused from the very same hits (``memo.retrieve.hit_memo``: both read only the arms' raw
    scores and votes and the stored vectors), filled here for the results it works out."""
    if known is not None:
        new = [c for c in cands if c.pk not in known]
        if new:
            known.update(zip([c.pk for c in new], zip(*_relevance(new, rows, bands, weigh, cosines), strict=True),
                             strict=True))
        pairs = [known[c.pk] for c in cands]
        rels, bands_of = [rel for rel, _ in pairs], [band for _, band in pairs]
    else:
        rels, bands_of = _relevance(cands, rows, bands, weigh, cosines)
    try:                            # the usual case: every result's row is there
        return ResultTable(list(cands), [rows[c.pk] for c in cands], rels, bands_of, explain=explain, meta=meta,
                           now=now, aging_kinds=aging_kinds, fusion=fusion)
    except KeyError:
        pass
    keep = [c.pk in rows for c in cands]   # one purged by another process since the candidates were read
    return ResultTable([c for c, k in zip(cands, keep, strict=True) if k],
                       [rows[c.pk] for c, k in zip(cands, keep, strict=True) if k],
                       [r for r, k in zip(rels, keep, strict=True) if k],
                       [b for b, k in zip(bands_of, keep, strict=True) if k],
                       explain=explain, meta=meta, now=now, aging_kinds=aging_kinds, fusion=fusion)


def _relevance(cands: Sequence[Candidate], rows: Mapping[int, PassageRow], bands: ModelBands | None,
               weigh: Weigh, cosines: Callable[[list[int]], Mapping[int, float]] | None
               ) -> tuple[list[float | None], list[str | None]]:
    """Each candidate's relevance and band: its best cosine over the arms' votes, else its
    stored vector's cosine (a result no arm measured a similarity for)."""
    rels = [relevance(c, weigh) for c in cands]     # once per result: this is hot
    unmeasured = [c.pk for c, rel in zip(cands, rels, strict=True) if rel is None and c.pk in rows]
    if unmeasured and cosines is not None:
        stored = cosines(unmeasured)
        rels = [stored.get(c.pk) if rel is None else rel for c, rel in zip(cands, rels, strict=True)]
    band_of = bands.band if bands is not None else None
    return rels, [band_of(rel) for rel in rels] if band_of is not None else [None] * len(rels)


def build_results(cands: Sequence[Candidate], rows: Mapping[int, PassageRow], meta: Mapping[int, Meta],
                  bands: ModelBands | None, weigh: Weigh, *, explain: bool, now: datetime,
                  aging_kinds: tuple[str, ...] = (),
                  cosines: Callable[[list[int]], Mapping[int, float]] | None = None,
                  fusion: Mapping[str, Mapping[str, float]] | None = None) -> tuple[Result, ...]:
    """The ``Result`` s of ``build_table``'s table."""
    return build_table(cands, rows, meta, bands, weigh, explain=explain, now=now, aging_kinds=aging_kinds,
                       cosines=cosines, fusion=fusion).materialize()
