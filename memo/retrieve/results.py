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
                fusion: Mapping[str, Mapping[str, float]] | None = None) -> ResultTable:
    """``cosines``: the stored vectors' cosines with the query for the pks it is given (the
    results no arm measured a similarity for); None when the query was not embedded.
    ``fusion``: the query's arm weights and what set them (``ArmWeights.as_dict``), shown
    in every result's ``why.fusion``."""
    rels = [relevance(c, weigh) for c in cands]     # once per result: the loop below is hot
    unmeasured = [c.pk for c, rel in zip(cands, rels, strict=True) if rel is None and c.pk in rows]
    stored = cosines(unmeasured) if cosines is not None and unmeasured else {}
    kept: list[Candidate] = []
    kept_rows: list[PassageRow] = []
    kept_rels: list[float | None] = []
    for c, rel in zip(cands, rels, strict=True):
        row = rows.get(c.pk)
        if row is None:  # purged by another process since the candidates were read
            continue
        kept.append(c)
        kept_rows.append(row)
        kept_rels.append(stored.get(c.pk) if rel is None else rel)   # a result no arm measured
    band_of = bands.band if bands is not None else None
    kept_bands = [band_of(rel) for rel in kept_rels] if band_of is not None else [None] * len(kept_rels)
    return ResultTable(kept, kept_rows, kept_rels, kept_bands, explain=explain, meta=meta, now=now,
                       aging_kinds=aging_kinds, fusion=fusion)


def build_results(cands: Sequence[Candidate], rows: Mapping[int, PassageRow], meta: Mapping[int, Meta],
                  bands: ModelBands | None, weigh: Weigh, *, explain: bool, now: datetime,
                  aging_kinds: tuple[str, ...] = (),
                  cosines: Callable[[list[int]], Mapping[int, float]] | None = None,
                  fusion: Mapping[str, Mapping[str, float]] | None = None) -> tuple[Result, ...]:
    """The ``Result`` s of ``build_table``'s table."""
    return build_table(cands, rows, meta, bands, weigh, explain=explain, now=now, aging_kinds=aging_kinds,
                       cosines=cosines, fusion=fusion).materialize()
