"""Stage 9's output as columns: the packed candidates, their rows, relevance and band.

``memo.retrieve.results.build_table`` computes what every result shows that is not already
in its candidate or its row (relevance, band) once per result; ``ResultTable.materialize``
turns that into ``Result`` s with their ``why`` (the one place a ``Result`` is built).
A search returns ``materialize()``'s tuple, unless the request asked for the table itself
(``SearchRequest.columns``): a bulk reader (the eval harness: 100 results with their why
per search, thousands of searches a grid) then reads the columns it needs without a
``Result``, ``Why`` and ``ArmWhy`` per row (docs/eval.md "What a grid costs"), and the
objects are built only if something asks for them (indexing, iterating, comparing), equal
to those of a search that did not ask for columns (tests/unit/retrieve/test_result_table.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, overload

from memo.retrieve.fetch import PassageRow
from memo.retrieve.recency import age_days
from memo.retrieve.types import Candidate, Meta, Result, new_arm_why, new_result, new_why


class ResultTable(Sequence[Result]):
    """The results of one search, column by column (row i of every column is result i)."""

    __slots__ = ("cands", "rows", "relevance", "band", "explain", "_meta", "_now", "_aging", "fusion", "_objects")

    def __init__(self, cands: Sequence[Candidate], rows: Sequence[PassageRow], relevance: Sequence[float | None],
                 band: Sequence[str | None], *, explain: bool, meta: Mapping[int, Meta], now: datetime,
                 aging_kinds: tuple[str, ...], fusion: Mapping[str, Mapping[str, float]] | None) -> None:
        self.cands, self.rows, self.relevance, self.band = cands, rows, relevance, band
        self.explain, self.fusion = explain, fusion
        self._meta, self._now, self._aging = meta, now, aging_kinds
        self._objects: tuple[Result, ...] | None = None

    def materialize(self) -> tuple[Result, ...]:
        """The ``Result`` s (with ``why`` when explain was asked for), built once."""
        if self._objects is None:
            self._objects = tuple(self._build())
        return self._objects

    def _build(self) -> Iterator[Result]:
        explain, meta, now, aging, fusion = self.explain, self._meta, self._now, self._aging, self.fusion
        for c, row, rel, band in zip(self.cands, self.rows, self.relevance, self.band, strict=True):
            why = None
            if explain:
                m = meta[c.pk]
                # Positional, in field order (memo.retrieve.types.new_*: the hot constructors).
                why = new_why(
                    {name: new_arm_why(ev.rank, ev.raw, ev.contribution, ev.votes or None)
                     for name, ev in c.arms.items()},
                    c.fused, c.factors, c.score, rel, band, c.tiebreak,
                    {"source": row.source, "author": row.author, "import_path": row.import_path,
                     "recorded_at": row.recorded_at, "content_hash": row.content_hash},
                    {"event_at": row.p_event_at or row.r_event_at, "age_days": rounded_age(m.when, now),
                     "ages": m.kind in aging},
                    fusion)
            said = meta.get(c.pk)
            yield new_result(row.id, c.pk, row.record_id, row.text, row.section, row.kind, row.namespace,
                             c.score, rel, band, row.tokens, why, row.import_path or row.source or None,
                             row.p_event_at or row.r_event_at, said.speaker if said is not None else None,
                             row.library, row.version)

    # --- a read-only sequence of Result, built on first access ---------------------------
    def __len__(self) -> int:
        return len(self.cands)

    def __bool__(self) -> bool:
        return bool(self.cands)

    @overload
    def __getitem__(self, i: int) -> Result: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Result, ...]: ...

    def __getitem__(self, i: Any) -> Any:
        return self.materialize()[i]

    def __iter__(self) -> Iterator[Result]:
        return iter(self.materialize())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResultTable):
            other = other.materialize()
        return self.materialize() == other if isinstance(other, tuple) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  (equal to a tuple, so not hashable like one)

    def __repr__(self) -> str:
        return f"ResultTable({len(self)} results)"


def rounded_age(when: str | None, now: datetime) -> float | None:
    """age_days(when, now) to 3 decimals, computed once per distinct (date, now): a record's
    passages share its date, and an eval grid asks the same query (the same ``now``) once
    per run."""
    key = (when, now)
    age = _AGES.get(key, _MISSING)
    if age is _MISSING:
        if len(_AGES) >= _AGES_MAX:
            _AGES.clear()
        days = age_days(when, now)
        age = _AGES[key] = None if days is None else round(days, 3)
    return age  # type: ignore[return-value]


_AGES: dict[tuple[str | None, datetime], float | None] = {}
_AGES_MAX = 1 << 16
_MISSING = object()
