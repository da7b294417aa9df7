"""Replay traces as Parquet: one folder per run, three tables (schema: docs/eval.md).

    <runs dir>/<run_id>/runs.parquet      one row: the run, its constants, aggregate metrics
    <runs dir>/<run_id>/queries.parquet   one row per query: trace + per-query metrics
    <runs dir>/<run_id>/results.parquet   one row per (query, result): the why columns

A run folder appears under the runs dir only complete: its tables are written in
``<runs dir>/.incomplete/<batch id>/<run_id>/`` (``staging_dir``), below every
``<runs dir>/*/...`` glob, and the folder is renamed into place once ``runs.parquet`` is
in it (``publish_run``).  An interrupted replay leaves no folder with some of the tables.
The batch holds a lock on its staging folder while it writes (``claim_staging``), so
``memo eval cache --prune`` can delete one left by a killed batch and never a live one's
(``memo_eval.staging``).

``runs.parquet`` has one column per profile constant, named by its dotted key
(``fusion.k``, ``weights.semantic``...) as ``Profile.flat()`` gives it; the other two tables
have fixed schemas (below), so any set of runs can be read together with DuckDB
(``read_parquet([...], union_by_name = true)``) or Polars.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from memo.errors import DatasetError
from memo.types import ARM_NAMES
from memo_eval.staging import STAGING, BatchLock, claim

METRIC_COLUMNS: tuple[str, ...] = ("ndcg_10", "recall_10", "recall_100", "rr_10")

# arm latency: <arm>_latency_ms = what the arm cost in THIS search (null when its hits came
# from the replay's arm cache); <arm>_source_latency_ms = the latency of the search that
# produced the hits (equal to <arm>_latency_ms when not cached).
_ARM_QUERY_FIELDS = [f for arm in ARM_NAMES for f in (
    pa.field(f"{arm}_ran", pa.bool_()), pa.field(f"{arm}_candidates", pa.int32()),
    pa.field(f"{arm}_latency_ms", pa.float64()), pa.field(f"{arm}_cached", pa.bool_()),
    pa.field(f"{arm}_source_latency_ms", pa.float64()),
    # the weight fusion gave the arm on this query (trace.fusion_weights: the profile's
    # weight, times the multiplier of the extra adaptive when it moved it)
    pa.field(f"{arm}_weight", pa.float64()))]

# trace.stage_ms as a typed struct (one float per pipeline stage; stages the pipeline may
# add later are summed into "other").
STAGES: tuple[str, ...] = ("scope", "arms", "fusion", "rescore", "abstention", "cutoff_limit_budget", "results",
                           "model_load", "matrix_load", "other")
STAGE_TYPE = pa.struct([pa.field(s, pa.float64()) for s in STAGES])

CATEGORY_TYPE = pa.list_(pa.struct([
    pa.field("category", pa.string()), pa.field("n", pa.int32()), pa.field("n_scored", pa.int32()),
    *[pa.field(m, pa.float64()) for m in ("ndcg_10", "recall_10", "recall_100", "rr_10",
                                          "abstain_precision", "abstain_recall")]]))
ARM_TYPE = pa.list_(pa.struct([pa.field("arm", pa.string()), pa.field("ran", pa.float64()),
                               pa.field("top10", pa.float64()), pa.field("share", pa.float64())]))


def stage_struct(stage_ms: Mapping[str, float] | None) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(STAGES)
    other = 0.0
    for k, v in (stage_ms or {}).items():
        if k in out and k != "other":
            out[k] = float(v)
        else:
            other += float(v)
    out["other"] = other if other else None
    return out


FACTORS_TYPE = pa.list_(pa.struct([("name", pa.string()), ("value", pa.float64()), ("label", pa.string())]))

QUERIES_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("label", pa.string()),              # the run's spec label (profile + overrides)
    pa.field("profile", pa.string()),
    pa.field("qid", pa.string(), nullable=False),
    pa.field("query", pa.string()),
    pa.field("category", pa.string()),
    pa.field("answerable", pa.bool_()),
    pa.field("namespace", pa.string()),
    pa.field("n_results", pa.int32()),
    pa.field("abstained", pa.bool_()),
    pa.field("reason", pa.string()),
    pa.field("degraded", pa.bool_()),
    pa.field("degraded_reason", pa.string()),
    pa.field("cutoff_kind", pa.string()),
    pa.field("truncated", pa.int32()),
    pa.field("candidates", pa.int32()),          # distinct fused candidates over all arms
    pa.field("latency_ms", pa.float64()),        # the pipeline's own trace.latency_ms
    pa.field("wall_ms", pa.float64()),           # measured around search() by the replay
    pa.field("arm_cached", pa.bool_()),          # some arm's hits came from the replay's arm cache:
                                                 # latency_ms / wall_ms are not a real search's
    *_ARM_QUERY_FIELDS,
    pa.field("fact_matched", pa.int32()),        # distinct facts that voted (fact arm; null: none)
    # extra adaptive (memo.retrieve.fusion.adaptive): the keyword arm's best idf coverage of
    # the query and the multiplier it gave the keyword weight (null: not measured)
    pa.field("keyword_coverage", pa.float64()),
    pa.field("keyword_multiplier", pa.float64()),
    pa.field("code_share", pa.float64()),        # extra code_queries: share of the semantic hits that are code
    # stage 4's rescorers: what the query named that earned each one's factors (trace.rescore)
    pa.field("rescore", pa.list_(pa.struct([("name", pa.string()), ("named", pa.list_(pa.string()))]))),
    pa.field("stage_ms", STAGE_TYPE),            # {stage: ms} (STAGES)
    pa.field("n_relevant", pa.int32()),
    pa.field("first_relevant_rank", pa.int32()),  # in the de-duplicated unit ranking
    *[pa.field(m, pa.float64()) for m in METRIC_COLUMNS],
])

_ARM_RESULT_FIELDS = [f for arm in ARM_NAMES for f in (
    pa.field(f"{arm}_rank", pa.int32()), pa.field(f"{arm}_raw", pa.float64()),
    pa.field(f"{arm}_contribution", pa.float64()))]

RESULTS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("qid", pa.string(), nullable=False),
    pa.field("rank", pa.int32(), nullable=False),  # 1-based position in memo's response
    pa.field("passage_id", pa.string()),
    pa.field("pk", pa.int64()),
    pa.field("record_id", pa.string()),
    pa.field("doc_id", pa.string()),             # the key qrels use (BEIR doc id, ns#turn id...)
    pa.field("namespace", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("score", pa.float64()),
    pa.field("fused", pa.float64()),
    # stage 4's factors in the order applied (why.factors: recency, then each extra that gave one)
    pa.field("factors", FACTORS_TYPE),
    pa.field("final", pa.float64()),
    pa.field("tiebreak", pa.float64()),          # orders equal finals (docs/architecture.md section 5)
    pa.field("relevance", pa.float64()),         # best raw cosine (None: no semantic evidence)
    pa.field("band", pa.string()),
    pa.field("tokens", pa.int32()),
    *_ARM_RESULT_FIELDS,
    pa.field("relevant", pa.int32()),            # qrels grade of doc_id (0 = not relevant)
    pa.field("label", pa.string()),              # the run's spec label
    pa.field("profile", pa.string()),
])


# Result rows travel as lists in this column order (cheaper to pickle and to turn into
# Arrow columns than dicts: the replay's parent handles ~30k of them per run).
RESULT_FIELDS: tuple[str, ...] = tuple(f.name for f in RESULTS_SCHEMA)
RESULT_INDEX: dict[str, int] = {name: i for i, name in enumerate(RESULT_FIELDS)}


def results_table(rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows in ``RESULT_FIELDS`` order -> an Arrow table (columns transposed in C by zip)."""
    if not rows:
        return RESULTS_SCHEMA.empty_table()
    cols = list(zip(*rows, strict=True))
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, RESULTS_SCHEMA, strict=True)],
                                schema=RESULTS_SCHEMA)


def runs_root(path: str | Path | None = None) -> Path:
    """``path`` (``--runs-dir``), else ``memo_eval.cache.default_runs_dir()``: never the
    current directory."""
    if path:
        return Path(path).expanduser()
    from memo_eval.cache import default_runs_dir

    return default_runs_dir()


def writable_runs_dir(path: str | Path | None = None) -> Path:
    """The runs dir (``runs_root``), made and checked before any work: a folder this process
    can write in (ValidationError, exit 2, otherwise: not after the replay).  Checked by
    writing a file there (permission bits say nothing for root or on a read-only mount)."""
    import tempfile

    from memo.errors import ValidationError

    root = runs_root(path)
    named = "--runs-dir" if path else "the runs dir ($MEMO_EVAL_RUNS or the default)"
    blocker = next((p for p in (root, *root.parents) if p.exists() or p.is_symlink()), None)
    if blocker is not None and not blocker.is_dir():
        raise ValidationError(f"{named} {root}: {blocker} is {'a file' if blocker.exists() else 'a broken link'}, "
                              "not a folder", hint="give a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        raise ValidationError(f"{named} {root} cannot be written in ({exc.strerror or exc})",
                              hint="give a folder you can write in") from None
    return root


def staging_dir(out_dir: Path, batch_id: str) -> Path:
    """Where a batch's runs are written before ``publish_run`` moves each into ``out_dir``
    (the same file system: the move is one rename)."""
    return out_dir / STAGING / batch_id


def claim_staging(staging: Path) -> BatchLock:
    """Make a batch's staging folder and hold its lock while the batch writes (released by
    ``discard_staging``): ``memo eval cache --prune`` deletes the folder of a batch that
    died without removing it, never that of a live one (``memo_eval.staging``)."""
    return claim(staging)


def publish_run(staging: Path, out_dir: Path, run_id: str) -> Path:
    """Move a complete run folder (its three tables written) from ``staging`` into
    ``out_dir``: readers see all of it or nothing."""
    folder = out_dir / run_id
    if folder.is_dir() and not (staging / run_id).exists():
        return folder                        # already moved (a Ctrl-C right after the rename)
    os.rename(staging / run_id, folder)      # run ids are unique (a random part): never over a run
    return folder


def discard_staging(staging: Path, lock: BatchLock | None = None) -> None:
    """Remove what a batch left unpublished, then release its lock (``claim_staging``),
    and ``.incomplete`` itself once empty."""
    import shutil

    try:
        shutil.rmtree(staging, ignore_errors=True)
    finally:
        if lock is not None:
            lock.release()
    with contextlib.suppress(OSError):
        staging.parent.rmdir()


def _table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    # from_pylist takes the schema's columns (missing keys -> null) and is faster than
    # building per-column lists (docs/results-log.md "Parquet traces"): this runs in the
    # replay's parent process, next to
    # the workers, so its cost comes straight off the queries/s.
    return pa.Table.from_pylist(list(rows), schema=schema)


def category_rows(by_category: Mapping[str, Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not by_category:
        return None
    names = [f.name for f in CATEGORY_TYPE.value_type]
    return [{n: (cat if n == "category" else e.get(n)) for n in names} for cat, e in by_category.items()]


def arm_rows(by_arm: Mapping[str, Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not by_arm:
        return None
    return [{"arm": a, "ran": e.get("ran"), "top10": e.get("top10"), "share": e.get("share")} for a, e in by_arm.items()]


def _runs_table(run: Mapping[str, Any]) -> pa.Table:
    """One row; ``by_category`` and ``by_arm`` as typed lists of structs, other nested
    values (``overrides``) as JSON text."""
    row: dict[str, Any] = {}
    typed: dict[str, pa.DataType] = {}
    for k, v in run.items():
        if k == "by_category":
            row[k], typed[k] = category_rows(v), CATEGORY_TYPE
        elif k == "by_arm":
            row[k], typed[k] = arm_rows(v), ARM_TYPE
        else:
            row[k] = json.dumps(v, sort_keys=True) if isinstance(v, dict | list | tuple) else v
    table = pa.Table.from_pylist([{k: v for k, v in row.items() if k not in typed}])
    for k, t in typed.items():
        table = table.append_column(pa.field(k, t), pa.array([row[k]], type=t))
    return table


def _write(folder: Path, name: str, table: pa.Table) -> None:
    tmp = folder / f".{name}.parquet.tmp"
    # Dictionary pages for the string columns only (numbers rarely repeat: the dictionary
    # was built and thrown away) and no column statistics (one row group a file: nothing to
    # skip by them): a results table of a SciFact run (30k rows) writes in 17 ms, not 23,
    # and 8% smaller.  The replay's runs all end together, so these writes are its tail.
    strings = [f.name for f in table.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    pq.write_table(table, tmp, compression="zstd", use_dictionary=strings, write_statistics=False)
    os.replace(tmp, folder / f"{name}.parquet")


def write_traces(out_dir: Path, run_id: str, queries: Sequence[Mapping[str, Any]],
                 results: Sequence[Sequence[Any]] | pa.Table) -> Path:
    """Write one run's queries (dicts) and results (lists in ``RESULT_FIELDS`` order, or
    the Arrow table of them the replay's workers built: ``memo_eval.partials``)."""
    folder = out_dir / run_id
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder, "queries", _table(queries, QUERIES_SCHEMA))
    _write(folder, "results", results if isinstance(results, pa.Table) else results_table(results))
    return folder


def write_run_row(out_dir: Path, run: Mapping[str, Any]) -> Path:
    """Write ``runs.parquet``, after the other two tables (then ``publish_run``)."""
    folder = out_dir / str(run["run_id"])
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder, "runs", _runs_table(run))
    return folder


def write_run(out_dir: Path, run: Mapping[str, Any], queries: Sequence[Mapping[str, Any]],
              results: Sequence[Sequence[Any]]) -> Path:
    """Write one run's three tables into ``out_dir/<run_id>/`` (the folder appears complete)."""
    staging = staging_dir(out_dir, str(run["run_id"]))
    lock = claim_staging(staging)
    try:
        write_traces(staging, str(run["run_id"]), queries, results)
        write_run_row(staging, run)
        return publish_run(staging, out_dir, str(run["run_id"]))
    finally:
        discard_staging(staging, lock)


def resolve_runs(refs: Iterable[str], root: str | Path | None = None) -> list[Path]:
    """Run folders from references: a folder path, a run id under the runs dir, a unique
    run-id prefix, or a batch folder (every run inside)."""
    return [p for _, folders in resolve_named(refs, root) for p in folders]


def resolve_named(refs: Iterable[str], root: str | Path | None = None) -> list[tuple[str, list[Path]]]:
    """Per reference, the name of what it named (a run id, a batch id, a folder's name)
    and its run folders (``resolve_runs``)."""
    base = runs_root(root)
    out: list[tuple[str, list[Path]]] = []
    for ref in refs:
        p = Path(ref).expanduser()
        cands = [p, base / ref]
        hit = next((c for c in cands if (c / "runs.parquet").is_file()), None)
        if hit is not None:
            out.append((hit.resolve().name, [hit]))
            continue
        batch = next((c for c in cands if c.is_dir() and any(c.glob("*/runs.parquet"))), None)
        if batch is not None:
            out.append((batch.resolve().name, sorted(r.parent for r in batch.glob("*/runs.parquet"))))
            continue
        if p.is_absolute() or "/" in ref:
            # A path that is neither a run nor a batch folder (glob takes no absolute pattern).
            raise DatasetError(f"{ref}: not a run or batch folder (no runs.parquet in it or its folders)",
                               hint="`memo eval list` shows the runs; pass a run id, a batch id or a run's folder")
        matches = sorted(d.parent for d in base.glob(f"{ref}*/runs.parquet")) if base.is_dir() else []
        if len(matches) == 1:
            out.append((matches[0].name, matches))
        elif matches and all(m.name.startswith(f"{ref}-") for m in matches):
            out.append((ref, matches))        # a batch id: every run of that batch
        elif len(matches) > 1:
            raise DatasetError(f"run reference {ref!r} is ambiguous ({len(matches)} runs)",
                               hint="give more of the run id")
        else:
            raise DatasetError(f"no run {ref!r} (looked in {base})", hint="`memo eval run` prints run ids")
    return out


def report_name(names: Sequence[str], limit: int = 120) -> str:
    """The default report folder for the runs or batches asked for: ``report-<name>``, several
    joined by ``+`` (``report-<first>+<n>-more-<hash>`` when that grows past ``limit``)."""
    import hashlib

    names = list(dict.fromkeys(n.strip("/") or "runs" for n in names))
    joined = "+".join(names)
    if len(joined) <= limit:
        return f"report-{joined}"
    digest = hashlib.sha256("\0".join(names).encode()).hexdigest()[:6]
    return f"report-{names[0][:limit // 2]}+{len(names) - 1}-more-{digest}"


def _files(runs: Sequence[Path], table: str) -> list[str]:
    return [str(r / f"{table}.parquet") for r in runs]


def duck(runs: Sequence[Path]):
    """A DuckDB connection with views ``runs``, ``queries`` and ``results`` over the runs."""
    import duckdb

    con = duckdb.connect()
    for table in ("runs", "queries", "results"):
        files = _files(runs, table)
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({files!r}, union_by_name = true)")
    return con


def read_table(runs: Sequence[Path], table: str):
    """A Polars DataFrame of one table over the runs (diagonal concat: run tables differ)."""
    import polars as pl

    frames = [pl.read_parquet(f) for f in _files(runs, table)]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
