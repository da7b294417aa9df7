"""A replay task's share of a run, summarised where it was searched (issue 34.1).

A grid's parent process used to receive every result row as a Python list (~100 per
search, 360k for a 12-run grid over SciFact), unpickle them, walk them three times (grades
and unit rankings, arm coverage, factor coverage) and turn them into Arrow columns: 5 CPU s
on one of the two cores the workers search on.  Now the worker that searched a chunk of
queries does that work once for its chunk (``summarise``): it grades the rows, keeps each
query's unit ranking and the few numbers the coverage tables need, and hands over the rows
as one Arrow table (pickled as its buffers).  The parent only concatenates the parts of a
run in query order (``merge``), scores the rankings and writes the table.

The figures are the same as the row walk's, bit for bit: each part keeps its values in row
order and ``merge`` adds them up in query order, as the walk over all the rows did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from memo.types import ARM_NAMES
from memo_eval.traces import RESULT_INDEX, RESULTS_SCHEMA, results_table

TOP = 10   # the coverage tables read each query's top 10 (memo_eval.run.arm_coverage)

_QID, _DOC, _REL, _RANK, _FAC = (RESULT_INDEX[k] for k in ("qid", "doc_id", "relevant", "rank", "factors"))
_CONTRIB = tuple((a, RESULT_INDEX[f"{a}_contribution"]) for a in ARM_NAMES)


@dataclass
class RunPart:
    """Queries ``first``.. of one run, as the worker that searched them summarised them."""
    first: int                                   # position of its first query in the eval set
    queries: list[dict[str, Any]]                # query rows (memo_eval.replay._query_row)
    table: pa.Table                              # result rows, graded; run_id/label/profile null
    ranked: dict[str, list[str]]                 # qid -> its units (doc ids) in first-seen order
    # per arm: the positive contributions of top-10 rows (row order) and the qids they came from
    contributions: dict[str, list[float]] = field(default_factory=dict)
    voted: dict[str, list[str]] = field(default_factory=dict)
    # per factor seen at a value other than 1 in a top-10 row: its values (row order), their qids
    factor_values: dict[str, list[float]] = field(default_factory=dict)
    factor_qids: dict[str, list[str]] = field(default_factory=dict)


def summarise(first: int, searched: Sequence[tuple[dict[str, Any], list[list[Any]]]],
              qrels: Mapping[str, Mapping[str, int]]) -> RunPart:
    """One pass over a chunk's rows (a query's rows are contiguous): each row gets its grade
    ("relevant"), each query its unit ranking, the coverage tables their numbers."""
    ranked: dict[str, list[str]] = {}
    contributions: dict[str, list[float]] = {a: [] for a in ARM_NAMES}
    voted: dict[str, list[str]] = {a: [] for a in ARM_NAMES}
    factor_values: dict[str, list[float]] = {}
    factor_qids: dict[str, list[str]] = {}
    rows: list[list[Any]] = []
    queries = []
    for qrow, rrows in searched:
        queries.append(qrow)
        qid = qrow["qid"]
        grades = qrels.get(qid, {})
        if rrows:                       # a query without results has no ranking (not an empty one)
            lst = ranked.setdefault(qid, [])
        had: set[str] = set()
        for r in rrows:
            d = r[_DOC]
            r[_REL] = int(grades.get(d, 0))
            if d not in had:
                had.add(d)
                lst.append(d)
            if r[_RANK] > TOP:
                continue
            for a, i in _CONTRIB:
                c = r[i]
                if c is not None and c > 0:
                    contributions[a].append(c)
                    voted[a].append(qid)
            facs = r[_FAC]
            if facs:
                for f in facs:
                    if f["value"] != 1.0:
                        factor_values.setdefault(f["name"], []).append(f["value"])
                        factor_qids.setdefault(f["name"], []).append(qid)
        rows.extend(rrows)
    return RunPart(first=first, queries=queries, table=results_table(rows), ranked=ranked,
                   contributions=contributions, voted=voted, factor_values=factor_values,
                   factor_qids=factor_qids)


@dataclass
class Merged:
    """A whole run's parts, in query order."""
    table: pa.Table
    ranked: dict[str, list[str]]
    contributions: dict[str, list[float]]
    voted: dict[str, set[str]]
    factor_values: dict[str, list[float]]
    factor_qids: dict[str, set[str]]


def merge(parts: Sequence[RunPart]) -> Merged:
    parts = sorted(parts, key=lambda p: p.first)
    tables = [p.table for p in parts if p.table.num_rows]
    table = pa.concat_tables(tables) if tables else RESULTS_SCHEMA.empty_table()
    ranked: dict[str, list[str]] = {}
    contributions: dict[str, list[float]] = {a: [] for a in ARM_NAMES}
    voted: dict[str, set[str]] = {a: set() for a in ARM_NAMES}
    factor_values: dict[str, list[float]] = {}
    factor_qids: dict[str, set[str]] = {}
    for p in parts:
        ranked.update(p.ranked)
        for a in ARM_NAMES:
            contributions[a].extend(p.contributions.get(a, ()))
            voted[a].update(p.voted.get(a, ()))
        for name, vals in p.factor_values.items():
            factor_values.setdefault(name, []).extend(vals)
            factor_qids.setdefault(name, set()).update(p.factor_qids[name])
    return Merged(table=table, ranked=ranked, contributions=contributions, voted=voted,
                  factor_values=factor_values, factor_qids=factor_qids)


def fill_run_columns(table: pa.Table, run_id: str, label: str, profile: str) -> pa.Table:
    """The run's own columns (the same value in every row), set once per run."""
    n = table.num_rows
    for name, value in (("run_id", run_id), ("label", label), ("profile", profile)):
        i = RESULT_INDEX[name]
        table = table.set_column(i, RESULTS_SCHEMA.field(i), pa.repeat(pa.scalar(value, pa.string()), n))
    return table
