"""A replay task's share of a run, summarised where it was searched (issue 34.1).

A grid's parent process used to receive every result row as a Python list (~100 per
search, 360k for a 12-run grid over SciFact), unpickle them, walk them three times (grades
and unit rankings, arm coverage, factor coverage) and turn them into Arrow columns: 5 CPU s
on one of the two cores the workers search on.  Now the worker that searched a chunk of
queries does that work once for its chunk (``PartBuilder``): it takes each response's
results column by column (no list per result), grades them, keeps each query's unit
ranking, its trec_eval metrics and the few numbers the coverage tables need, and hands over
the rows as one Arrow table (through a memory-backed file: ``hand_over_via``).  The parent only concatenates the
parts of a run in query order (``merge``) and writes the table.  Scoring in the workers
matters because a grid's runs all end with its last task: scored in the parent, one after
another, they kept it busy after the workers had finished.  trec_eval's measures used here
(ndcg_cut, recall, recip_rank) are per query, so a part's queries score the same alone as
among the whole run's.

The figures are the same as the row walk's, bit for bit (tests/unit/eval/test_partials.py):
each part keeps its values in row order and ``merge`` adds them up in query order, as the walk over all the rows did.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from memo.retrieve.result_table import ResultTable
from memo.types import ARM_NAMES
from memo_eval.metrics import per_query
from memo_eval.traces import FACTORS_TYPE, RESULT_FIELDS, RESULT_INDEX, RESULTS_SCHEMA

TOP = 10   # the coverage tables read each query's top 10 (memo_eval.run.arm_coverage)



# Where a worker leaves its parts' tables for the parent (``hand_over_via``): None = inside
# the pickle, as any object.  A 12-run SciFact grid hands back ~120 MB of tables; pickled,
# they crossed a pipe and were copied twice on each side (~0.5 CPU s of the parent's
# result thread next to the two workers on two cores).  Written as Arrow IPC files to a
# memory-backed folder, they are mapped by the parent without a copy.
_HANDOVER: Path | None = None
_SEQ = itertools.count()


def hand_over_via(folder: str | Path | None) -> None:
    """This process's parts leave their tables in ``folder`` when pickled (the replay's
    workers; the folder is the parent's, which removes it when the replay ends)."""
    global _HANDOVER
    _HANDOVER = Path(folder) if folder is not None else None


@dataclass
class RunPart:
    """Queries ``first``.. of one run, as the worker that searched them summarised them.
    Pickled in a worker that has a hand-over folder, its table travels as an Arrow IPC file
    there, mapped (and unlinked) where it is unpickled."""
    first: int                                   # position of its first query in the eval set
    queries: list[dict[str, Any]]                # query rows (memo_eval.replay._query_row)
    table: pa.Table                              # result rows, graded; run_id/label/profile null
    ranked: dict[str, list[str]]                 # qid -> its units (doc ids) in first-seen order
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # judged qid -> its measures
    # per arm: the positive contributions of top-10 rows (row order) and the qids they came from
    contributions: dict[str, list[float]] = field(default_factory=dict)
    voted: dict[str, list[str]] = field(default_factory=dict)
    # per factor seen at a value other than 1 in a top-10 row: its values (row order), their qids
    factor_values: dict[str, list[float]] = field(default_factory=dict)
    factor_qids: dict[str, list[str]] = field(default_factory=dict)
    # (the task's table, this part's first row) when ``table`` is a slice of a table shared
    # by a task's parts (``build_parts``); None: the part's own table
    shared: tuple[Any, int] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        shared = state.pop("shared", None)
        if shared is not None:
            # rows [offset, offset + n) of a table shared by a task's parts (``build_parts``):
            # pickled once for all of them (pickle keeps one copy of an object it meets twice)
            state["table"] = ("shared", shared[0], shared[1], self.table.num_rows)
        elif _HANDOVER is not None and self.table.num_rows:
            state["table"] = ("arrow-ipc", _hand_over(self.table))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        table = state["table"]
        if isinstance(table, tuple) and table[0] == "shared":
            _, holder, offset, n = table
            state["table"] = holder.table.slice(offset, n)
        elif isinstance(table, tuple):
            state["table"] = _mapped(table[1])
        self.__dict__.update(state, shared=None)


def _hand_over(table: pa.Table) -> str:
    """Write ``table`` as an Arrow IPC file in the hand-over folder; its path."""
    assert _HANDOVER is not None
    path = _HANDOVER / f"{os.getpid()}-{next(_SEQ)}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return str(path)


def _mapped(path: str) -> pa.Table:
    # The mapping outlives the file's name: the table's buffers keep it open.
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    os.unlink(path)
    return table


class _TaskTable:
    """The result rows of all of a task's parts in one table, each part a slice of it
    (``build_parts``): handed over as one file, not one per run."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __getstate__(self) -> tuple[str, Any]:
        if _HANDOVER is not None and self.table.num_rows:
            return ("arrow-ipc", _hand_over(self.table))
        return ("table", self.table)

    def __setstate__(self, state: tuple[str, Any]) -> None:
        kind, value = state
        self.table = _mapped(value) if kind == "arrow-ipc" else value


_STR_COLS = ("passage_id", "record_id", "namespace", "kind", "band")
_FACTORS = RESULT_INDEX["factors"]


class PartBuilder:
    """One run's share of a task, built column by column as its searches come in (no list
    per result row: a comprehension per column over the response's results, then one
    Arrow array per column for the chunk), with the grades, unit rankings and coverage
    numbers taken from the same columns."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], keys: Mapping[int, str],
                 row_columns: dict[int, tuple] | None = None) -> None:
        self.qrels, self.keys = qrels, keys
        # Each passage's row fields as its columns hold them, shared by the builders of one
        # task (its queries' results recur in every run of the grid; the index does not change)
        self.row_columns: dict[int, tuple] = {} if row_columns is None else row_columns
        self.cols: list[list[Any]] = [[] for _ in RESULT_FIELDS]
        # The factors column (a list of structs per row) is kept flat, as Arrow stores it:
        # converting ~100 lists of dicts per search made it the costliest column to build.
        self.f_offsets: list[int] = [0]
        self.f_null: list[bool] = []
        self.f_names: list[str] = []
        self.f_values: list[float] = []
        self.f_labels: list[str | None] = []
        self.queries: list[dict[str, Any]] = []
        self.ranked: dict[str, list[str]] = {}
        self.contributions: dict[str, list[float]] = {a: [] for a in ARM_NAMES}
        self.voted: dict[str, list[str]] = {a: [] for a in ARM_NAMES}
        self.factor_values: dict[str, list[float]] = {}
        self.factor_qids: dict[str, list[str]] = {}

    def add(self, qrow: dict[str, Any], results: Sequence[Any]) -> None:
        """One search: its query row and its response's results: stage 9's table
        (``memo.retrieve.result_table.ResultTable``, the replay asks for it: no ``Result``
        object is built) or a sequence of ``memo.retrieve.Result``."""
        self.queries.append(qrow)
        n = len(results)
        if not n:
            return
        qid = qrow["qid"]
        keys = self.keys
        if isinstance(results, ResultTable) and results.explain:
            got, arms = _table_columns(results, keys, self.row_columns)
        else:
            got, arms = _object_columns(results, keys)
        got["qid"] = [qid] * n
        got["rank"] = list(range(1, n + 1))
        docs = got["doc_id"]
        grades = self.qrels.get(qid, {})
        got["relevant"] = [int(grades.get(d, 0)) for d in docs]
        top = min(TOP, n)
        # Per arm, its columns in one walk over the rows (an arm that voted for no result
        # keeps null columns: no list is built for it).
        per_arm: dict[str, tuple[list, list, list]] = {}
        for i, d in enumerate(arms):
            if d is None:
                continue
            for a, e in d.items():
                cols_a = per_arm.get(a)
                if cols_a is None:
                    cols_a = per_arm[a] = ([None] * n, [None] * n, [None] * n)
                cols_a[0][i] = e.rank            # an int and two floats (numpy's too: Arrow
                cols_a[1][i] = e.raw             # takes them as the same values)
                cols_a[2][i] = e.contribution
        for a in ARM_NAMES:
            if a not in per_arm:
                continue
            ranks, raws, contrib = per_arm[a]
            got[f"{a}_rank"], got[f"{a}_raw"], got[f"{a}_contribution"] = ranks, raws, contrib
            pos = [c for c in contrib[:top] if c is not None and c > 0]
            if pos:
                self.contributions[a].extend(pos)
                self.voted[a].extend([qid] * len(pos))
        factors = got.pop("factors")
        for facs in factors[:top]:
            for f in facs or ():
                value = float(f.value)
                if value != 1.0:
                    self.factor_values.setdefault(f.name, []).append(value)
                    self.factor_qids.setdefault(f.name, []).append(qid)
        self._add_factors(factors)
        self.ranked[qid] = list(dict.fromkeys(docs))      # units in first-seen order
        cols = self.cols
        for i, name in enumerate(RESULT_FIELDS):
            if i == _FACTORS:
                continue
            col = got.get(name)
            cols[i].extend(col if col is not None else [None] * n)

    def _add_factors(self, factors: Sequence[Sequence[Any] | None]) -> None:
        """Each row's factors (None: no why) onto the flat factor columns."""
        offsets, nulls = self.f_offsets, self.f_null
        names, values, labels = self.f_names, self.f_values, self.f_labels
        end = offsets[-1]
        if not any(factors) and None not in factors:     # no row has a factor: the usual case
            nulls.extend([False] * len(factors))
            offsets.extend([end] * len(factors))
            return
        for facs in factors:
            if facs is None:
                nulls.append(True)
            else:
                nulls.append(False)
                for f in facs:
                    names.append(f.name)
                    values.append(float(f.value))
                    labels.append(f.label)
                end += len(facs)
            offsets.append(end)

    def part(self, first: int) -> RunPart:
        return build_parts([self], first)[0]

    def _judged(self) -> dict[str, Mapping[str, int]]:
        return {q["qid"]: self.qrels[q["qid"]] for q in self.queries if self.qrels.get(q.get("qid"))}

    def _part(self, first: int, table: pa.Table, metrics: dict[str, dict[str, float]],
              shared: tuple[Any, int] | None) -> RunPart:
        return RunPart(first=first, queries=self.queries, table=table, ranked=self.ranked, metrics=metrics,
                       contributions=self.contributions, voted=self.voted, factor_values=self.factor_values,
                       factor_qids=self.factor_qids, shared=shared)


def build_parts(builders: Sequence[PartBuilder], first: int) -> list[RunPart]:
    """Each builder's part (the runs of one task, over the same queries starting at
    ``first``), their rows converted to Arrow together: one array per column for the whole
    task, each part a slice of it, and each judged query scored in one trec_eval call
    for all the runs.  Converting per run paid each column's fixed cost once per run (a
    12-run grid: 456 parts, ~40 columns each): about half of a part's conversion time,
    ~5% of a grid's replay.  The parts equal ``PartBuilder.part``'s one by one
    (tests/unit/eval/test_partials.py)."""
    cols = [list(itertools.chain.from_iterable(b.cols[i] for b in builders)) if i != _FACTORS else None
            for i in range(len(RESULT_FIELDS))]
    arrays = [_factors_array(builders) if i == _FACTORS else pa.array(c, type=f.type)
              for i, (c, f) in enumerate(zip(cols, RESULTS_SCHEMA, strict=True))]
    table = pa.Table.from_arrays(arrays, schema=RESULTS_SCHEMA)
    # one trec_eval evaluation for every run's judged queries: keys made distinct per run
    # (each measure is per query, so a query scores the same among any others)
    judged: dict[str, Mapping[str, int]] = {}
    ranked: dict[str, list[str]] = {}
    keyed: list[list[tuple[str, str]]] = []
    for r, b in enumerate(builders):
        pairs = [(f"{r}\x1f{qid}", qid) for qid in b._judged()]
        keyed.append(pairs)
        for key, qid in pairs:
            judged[key] = b.qrels[qid]
            if qid in b.ranked:
                ranked[key] = b.ranked[qid]
    scored = per_query(judged, ranked) if judged else {}
    shared = _TaskTable(table) if len(builders) > 1 else None
    parts, offset = [], 0
    for b, pairs in zip(builders, keyed, strict=True):
        n = len(b.cols[0])
        parts.append(b._part(first, table.slice(offset, n) if shared is not None else table,
                             {qid: scored[key] for key, qid in pairs},
                             (shared, offset) if shared is not None else None))
        offset += n
    return parts


def _factors_array(builders: Sequence[PartBuilder]) -> pa.Array:
    """The builders' flat factor columns, one after another, as one list<struct> array."""
    offsets: list[int] = [0]
    names: list[str] = []
    values: list[float] = []
    labels: list[str | None] = []
    nulls: list[bool] = []
    for b in builders:
        base = len(names)
        offsets.extend([o + base for o in b.f_offsets[1:]] if base else b.f_offsets[1:])
        names.extend(b.f_names)
        values.extend(b.f_values)
        labels.extend(b.f_labels)
        nulls.extend(b.f_null)
    struct = pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(values, pa.float64()), pa.array(labels, pa.string())],
        fields=list(FACTORS_TYPE.value_type))
    mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=FACTORS_TYPE, mask=mask)


def _object_columns(results: Sequence[Any], keys: Mapping[int, str]) -> tuple[dict[str, list[Any]], list[Any]]:
    """The columns of ``Result`` s (why None: no why columns), and each one's arm votes."""
    whys = [r.why for r in results]
    got: dict[str, list[Any]] = {
        "pk": [r.pk for r in results], "doc_id": [keys.get(r.pk, r.record_id) for r in results],
        "score": [float(r.score) for r in results], "relevance": [r.relevance for r in results],
        "tokens": [int(r.tokens) for r in results],
        "fused": [None if w is None else float(w.fused) for w in whys],
        "factors": [None if w is None else w.factors for w in whys],
        "final": [None if w is None else float(w.final) for w in whys],
        "tiebreak": [None if w is None else float(w.tiebreak) for w in whys],
    }
    for name in _STR_COLS:
        got[name] = [getattr(r, name) for r in results]
    return got, [None if w is None else w.arms for w in whys]


def _table_columns(table: ResultTable, keys: Mapping[int, str],
                   row_columns: dict[int, tuple] | None = None) -> tuple[dict[str, list[Any]], list[Any]]:
    """The same columns read straight from stage 9's table (explain on): each value is the
    one its ``Result`` / ``Why`` would hold (``ResultTable.materialize``: score = why.final
    = the candidate's score, the row's fields, the candidate's arm evidence).
    ``row_columns``: each pk's row fields as these columns hold them, kept across calls."""
    cands, rows = table.cands, table.rows
    pks = [c.pk for c in cands]
    known = {} if row_columns is None else row_columns
    try:
        per_row = [known[pk] for pk in pks]
    except KeyError:
        for pk, r in zip(pks, rows, strict=True):
            if pk not in known:
                known[pk] = (keys.get(pk, r.record_id), int(r.tokens), r.id, r.record_id, r.namespace, r.kind)
        per_row = [known[pk] for pk in pks]
    doc_id, tokens, passage_id, record_id, namespace, kind = (list(col) for col in zip(*per_row, strict=True)) \
        if per_row else ([] for _ in range(6))
    scores = [float(c.score) for c in cands]
    got: dict[str, list[Any]] = {
        "pk": pks, "doc_id": doc_id, "score": scores, "relevance": list(table.relevance), "tokens": tokens,
        "fused": [float(c.fused) for c in cands], "factors": [c.factors for c in cands],
        "final": scores, "tiebreak": [float(c.tiebreak) for c in cands],
        "passage_id": passage_id, "record_id": record_id, "namespace": namespace, "kind": kind,
        "band": list(table.band),
    }
    return got, [c.arms for c in cands]


@dataclass
class Merged:
    """A whole run's parts, in query order."""
    table: pa.Table
    ranked: dict[str, list[str]]
    metrics: dict[str, dict[str, float]]         # judged qid -> measures, for the queries replayed
    contributions: dict[str, list[float]]
    voted: dict[str, set[str]]
    factor_values: dict[str, list[float]]
    factor_qids: dict[str, set[str]]


def merge(parts: Sequence[RunPart]) -> Merged:
    parts = sorted(parts, key=lambda p: p.first)
    tables = [p.table for p in parts if p.table.num_rows]
    table = pa.concat_tables(tables) if tables else RESULTS_SCHEMA.empty_table()
    ranked: dict[str, list[str]] = {}
    metrics: dict[str, dict[str, float]] = {}
    contributions: dict[str, list[float]] = {a: [] for a in ARM_NAMES}
    voted: dict[str, set[str]] = {a: set() for a in ARM_NAMES}
    factor_values: dict[str, list[float]] = {}
    factor_qids: dict[str, set[str]] = {}
    for p in parts:
        ranked.update(p.ranked)
        metrics.update(p.metrics)
        for a in ARM_NAMES:
            contributions[a].extend(p.contributions.get(a, ()))
            voted[a].update(p.voted.get(a, ()))
        for name, vals in p.factor_values.items():
            factor_values.setdefault(name, []).extend(vals)
            factor_qids.setdefault(name, set()).update(p.factor_qids[name])
    return Merged(table=table, ranked=ranked, metrics=metrics, contributions=contributions, voted=voted,
                  factor_values=factor_values, factor_qids=factor_qids)


def warm_arrow() -> None:
    """Build and fill a one-row table as the replay does, so the first part or finished
    run does not pay for what pyarrow loads on first use: with pandas installed, building a
    table imports it (~0.25 s; pyarrow checks whether its input is a DataFrame).  Workers
    call it while they start, the parent while it waits for them."""
    builder = PartBuilder({}, {})
    builder.queries.append({})
    for col in builder.cols:
        col.append(None)
    builder._add_factors([None])
    fill_run_columns(builder.part(0).table, "", "", "")


def fill_run_columns(table: pa.Table, run_id: str, label: str, profile: str) -> pa.Table:
    """The run's own columns (the same value in every row), set once per run."""
    n = table.num_rows
    for name, value in (("run_id", run_id), ("label", label), ("profile", profile)):
        i = RESULT_INDEX[name]
        table = table.set_column(i, RESULTS_SCHEMA.field(i), pa.repeat(pa.scalar(value, pa.string()), n))
    return table
