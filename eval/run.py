"""``memo eval run``: data set -> cached index (+ vectors) -> replay -> metrics -> Parquet.

One call replays every run spec (profiles x grid) over one split and writes one folder per
run (``memo_eval.traces``).  It returns a JSON-ready summary: aggregate metrics per run, the
replay speed (queries/s with cached vectors) and where everything was written.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from memo.store.dialect import is_db_url
from memo.store.postgres.connection import redact
from memo.types import default_profile
from memo_eval import metrics as M
from memo_eval.datasets import OBS_SUFFIX, EvalSet, load_eval_set
from memo_eval.grid import RunSpec
from memo_eval.index import (
    build_index,
    build_index_on_server,
    ensure_fact_vectors,
    ensure_passage_vectors,
    query_vectors,
)
from memo_eval.partials import fill_run_columns
from memo_eval.replay import ReplayConfig, ReplayStats, RunOutput, replay
from memo_eval.traces import (
    claim_staging,
    discard_staging,
    publish_run,
    runs_root,
    staging_dir,
    writable_runs_dir,
    write_run_row,
    write_traces,
)

Status = Callable[[str], None]


def code_version() -> dict[str, str | None]:
    sha = None
    try:
        root = Path(__file__).resolve().parents[1]
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip() or None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        if sha and dirty:
            sha += "-dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    ver = version("memo-kb")      # the distribution memo installs as
    return {"git_sha": sha, "memo_version": ver, "code_version": f"{ver}+{sha}" if sha else ver}


@dataclass
class EvalOptions:
    dataset: str
    split: str = "test"
    specs: Sequence[RunSpec] = field(default_factory=lambda: [RunSpec(default_profile())])
    db: Path | None = None          # a user's memo DB (custom query sets); else the cached index
    model_id: str | None = None     # None = the registry's default model
    semantic: bool = True           # False: no semantic service (keyword/exact arms only)
    limit_queries: int | None = None
    workers: int | None = None
    out: Path | None = None
    rebuild: bool = False
    write: bool = True
    eval_set: EvalSet | None = None   # the split already loaded (``memo eval regress`` reads it to check first)


def _uses_semantic(specs: Sequence[RunSpec]) -> bool:
    return any(s.mode in ("auto", "semantic") for s in specs)


TickFactory = Callable[..., Callable[[int], None]]   # (total, unit="searches") -> tick(n)


def counter(tick_factory: TickFactory | None, unit: str) -> Callable[[int, int], None] | None:
    """A (done, total) callback over the CLI's progress: the first call that knows its total
    opens a count of ``unit`` (a first index build, an embedding: minutes a user watches)."""
    if tick_factory is None:
        return None
    state: dict[str, Any] = {"tick": None, "done": 0}

    def progress(done: int, total: int) -> None:
        if state["tick"] is None:
            if not total:
                return
            state["tick"] = tick_factory(total, unit)
        state["tick"](done - state["done"])
        state["done"] = done
    return progress


def prepare(opts: EvalOptions, es: EvalSet, status: Status,
            tick_factory: TickFactory | None = None) -> tuple[ReplayConfig, dict[str, Any]]:
    info: dict[str, Any] = {}
    on_server = is_db_url(opts.db)
    if not es.has_corpus:
        # A set of labels without a corpus (your own queries over your own notes) is
        # replayed against your memo database: --db, else memo's own (``$MEMO_DB``, else
        # the default file), as every memo command finds it.  SQLite or PostgreSQL.
        db_path = user_database(opts.db)
        info["index"] = {"path": redact(str(db_path)), "built": False, "source": "user database",
                         "state": database_state(db_path)}
    elif on_server:
        # A PostgreSQL database given to the harness is its index: built there from the
        # data set's corpus when it does not hold it yet (memo_eval.index.build_index_on_server).
        status("index")
        built = build_index_on_server(es, str(opts.db), rebuild=opts.rebuild)
        db_path = str(opts.db)
        info["index"] = {"path": redact(db_path), "built": built.built, "records": built.records,
                         "passages": built.passages, "duplicates_skipped": built.duplicates,
                         "facts": built.facts, "seconds": built.seconds, "source": "postgresql"}
    elif opts.db is not None:
        # A SQLite file given with a data set that has its own corpus: searched as it is
        # (a database the user built from that corpus).
        db_path = user_database(opts.db)
        info["index"] = {"path": str(db_path), "built": False, "source": "user database",
                         "state": database_state(db_path)}
    else:
        status("index")
        records = counter(tick_factory, "records")
        built = build_index(es, rebuild=opts.rebuild,
                            progress=(lambda _stage, done, total: records(done, total)) if records else None)
        db_path = built.path
        info["index"] = {"path": str(built.path), "built": built.built, "records": built.records,
                         "passages": built.passages, "duplicates_skipped": built.duplicates,
                         "facts": built.facts, "seconds": built.seconds}
    model_id, qvecs = None, None
    if opts.semantic and _uses_semantic(opts.specs):
        if info["index"].get("source") != "user database":   # a user's vectors are the user's
            status("passage vectors")
            # "locomo-obs" has the same passages as "locomo": share their vector cache.
            # The count goes to the CLI's own progress (a bar on a terminal, plain lines
            # elsewhere: memo_eval.cli), not to the embedding's bar, a second live display.
            info["vectors"] = ensure_passage_vectors(db_path, es.name.removesuffix(OBS_SUFFIX), opts.model_id,
                                                     progress=False,
                                                     on_progress=counter(tick_factory, "passages embedded"))
            if es.facts is not None:
                status("fact vectors")
                info["fact_vectors"] = ensure_fact_vectors(db_path, es.name, opts.model_id)
        status("query vectors")
        model_id, qvecs = query_vectors(es, opts.model_id)
    info["model_id"] = model_id
    return ReplayConfig(db_path=db_path, unit_keys=None, es=es, model_id=model_id, query_vecs=qvecs), info


def user_database(db: Any) -> Path | str:
    """The memo database a set without a corpus is replayed against: ``db``, else memo's
    (``$MEMO_DB``, else the default file); a file that is not there is refused (a run over
    an empty new database would score 0 and say nothing)."""
    from memo.errors import DatasetError
    from memo.store.db import named_db, resolve_db_path

    named = named_db(db)
    if is_db_url(named):
        return named       # type: ignore[return-value] - a PostgreSQL URL: the server says if it is there
    path = resolve_db_path(named)
    if not path.exists():
        where = "--db" if db is not None else "$MEMO_DB" if named is not None else "memo's default database"
        raise DatasetError(f"no memo database at {path} ({where}): your labelled queries are replayed against the "
                           "database holding your notes",
                           hint="pass --db PATH (or set MEMO_DB) to the database you imported them into")
    return path


def database_state(db_path: Path | str) -> str:
    """What a run over a user's database searched: its live records and passages and its
    newest write, so two runs over different (or since changed) databases are told apart
    (``memo eval compare`` notes it)."""
    from memo.store.db import open_db

    conn = open_db(db_path, write=False)
    try:
        rec, newest = conn.execute("SELECT count(*), max(recorded_at) FROM records "
                                   "WHERE superseded_at IS NULL AND forgotten_at IS NULL").fetchone()
        pas = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    finally:
        conn.close()
    return f"{rec} records, {pas} passages, newest {newest or 'none'}"


def score_run(es: EvalSet, out: RunOutput) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Per-query metrics (unit rankings de-duplicated) and the run's aggregate, from the
    run's merged parts (the workers graded the rows and kept the rankings:
    ``memo_eval.partials``)."""
    merged = out.merged
    assert merged is not None, "score_run needs a complete run"
    ranked = merged.ranked
    # The workers scored each judged query they replayed (memo_eval.partials); a judged
    # query that was not replayed scores 0, as M.per_query gives it.  In qrels order, as
    # M.per_query returns them: the means add in that order.
    zero = dict.fromkeys(M.MEASURES, 0.0)
    perq = {q: merged.metrics.get(q) or dict(zero) for q, rel in es.qrels.items() if rel}
    answerable = {q.qid: q.answerable for q in es.queries}
    abstained = {q["qid"]: q["abstained"] for q in out.queries}
    cats = {q.qid: q.category for q in es.queries}
    agg = M.aggregate(perq, answerable, abstained, cats)
    # Annotate the rows (the Parquet tables carry per-query metrics and labels).
    for q in out.queries:
        rel = es.qrels.get(q["qid"], {})
        q["n_relevant"] = len(rel)
        first = next((i + 1 for i, d in enumerate(ranked.get(q["qid"], [])) if d in rel), None)
        q["first_relevant_rank"] = first
        q.update(perq.get(q["qid"], dict.fromkeys(M.MEASURES)))
    agg["degraded_queries"] = sum(1 for q in out.queries if q["degraded"])
    agg["by_arm"] = arm_coverage(out)
    agg["by_factor"] = factor_coverage(out)
    return perq, agg


def arm_coverage(out: RunOutput) -> dict[str, dict[str, float]]:
    """Per arm, over the run's queries: ``ran`` = share of queries the arm ran on, ``top10``
    = share whose top 10 holds a result it voted for, ``share`` = its part of the fused
    score summed over every top-10 result (the report's per-arm contribution).  What the
    regression checks use to cover every arm of a profile."""
    from memo.types import ARM_NAMES

    merged = out.merged
    assert merged is not None
    n = len(out.queries) or 1
    sums = dict.fromkeys(ARM_NAMES, 0.0)
    for a in ARM_NAMES:
        for c in merged.contributions[a]:     # row order, as one walk over the rows added them
            sums[a] += c
    total = sum(sums.values()) or 1.0
    return {a: {"ran": sum(1 for q in out.queries if q.get(f"{a}_ran")) / n,
                "top10": len(merged.voted[a]) / n, "share": sums[a] / total} for a in ARM_NAMES}


def factor_coverage(out: RunOutput) -> dict[str, dict[str, float]]:
    """Per stage-4 factor seen in the run (recency, speaker, dates, heading, context, ...):
    ``top10`` = share of queries whose top 10 holds a result it changed (value != 1), ``mean``
    = its mean value over those results.  What the fast gate pins so every shipped rescorer
    is seen to fire (issue 28.3)."""
    merged = out.merged
    assert merged is not None
    n = len(out.queries) or 1
    return {name: {"top10": len(merged.factor_qids[name]) / n,
                   "mean": sum(merged.factor_values[name]) / len(merged.factor_values[name])}
            for name in sorted(merged.factor_qids)}


class Interrupted(KeyboardInterrupt):  # noqa: N818  (a KeyboardInterrupt: Ctrl-C stays Ctrl-C to callers)
    """Ctrl-C during ``run_eval``; ``str()`` says in one line what was kept.  Run folders
    are published whole (``memo_eval.traces.publish_run``): the runs that had finished are
    kept, complete, each saying how many runs its batch was to have (``batch_runs``)."""


def check_options(opts: EvalOptions) -> None:
    """The options a caller of the library could get wrong (the CLI declares the same ranges)."""
    from memo.errors import ValidationError

    if opts.limit_queries is not None and opts.limit_queries < 1:
        raise ValidationError(f"limit_queries must be 1 or more, got {opts.limit_queries}")
    if opts.workers is not None and opts.workers < 1:
        raise ValidationError(f"workers must be 1 or more, got {opts.workers}")


def label_notes(db_path: Any, es: EvalSet) -> dict[str, Any]:
    """What the labels say that the database cannot answer, from one walk over its passages
    (``memo_eval.index.keys_and_shadowed``), each a note of the run when not empty:

    * ``unknown_relevant``: per query, the relevant ids no passage maps to (a typo, a record
      not in this database): the query's recall cannot reach 1;
    * ``shadowed_labels``: labels naming passages another label names first (label -> that
      label): a query labelled with one can never find it;
    * ``absent_namespaces``: namespaces the queries search that hold no record -> how many
      queries name each: such a query finds nothing."""
    from memo.store.db import open_db
    from memo_eval.index import keys_and_shadowed

    wanted: dict[str, int] = {}
    for q in es.queries:
        if q.namespace:
            wanted[q.namespace] = wanted.get(q.namespace, 0) + 1
    conn = open_db(db_path, write=False)
    try:
        keys, shadowed = keys_and_shadowed(conn, es)
        names = list(wanted)
        held = {r[0] for r in conn.execute(
            f"SELECT DISTINCT namespace FROM records WHERE namespace IN ({','.join('?' * len(names))})", names)
                } if names else set()
    finally:
        conn.close()
    known = set(keys.values())
    unknown = {}
    for q in es.queries:
        missing = [k for k in es.qrels.get(q.qid, {}) if k not in known and k not in shadowed]
        if missing:
            unknown[q.qid] = missing
    notes = {"unknown_relevant": unknown, "shadowed_labels": shadowed,
             "absent_namespaces": {ns: n for ns, n in wanted.items() if ns not in held}}
    return {k: v for k, v in notes.items() if v}


def run_eval(opts: EvalOptions, *, status: Status | None = None,
             tick_factory: TickFactory | None = None) -> dict[str, Any]:
    """Replay ``opts.specs`` over one split, write a folder per run, return the summary.
    Ctrl-C raises ``Interrupted`` once what had finished is kept."""
    status = status or (lambda s: None)
    check_options(opts)
    out_dir = writable_runs_dir(opts.out) if opts.write else runs_root(opts.out)   # before any work
    es = opts.eval_set or load_eval_set(opts.dataset, opts.split, limit=opts.limit_queries)
    started = datetime.now(UTC)
    try:
        cfg, info = prepare(opts, es, status, tick_factory)
    except KeyboardInterrupt:
        raise Interrupted("interrupted while preparing the index and vectors; no run was written") from None
    notes = dict(es.notes)
    notes.update(label_notes(cfg.db_path, es))
    version = code_version()
    stamp = started.strftime("%Y%m%dT%H%M%S") + secrets.token_hex(2)
    batch_id = f"{stamp}-{es.name}-{es.split}"
    staging = staging_dir(out_dir, batch_id)

    dataset_hash = es.dataset_hash        # a hash over every query and qrel: once, not per run
    profiles = {spec: spec.load() for spec in opts.specs}   # validated once (the workers load their own)
    positions = {spec: i for i, spec in enumerate(opts.specs)}   # grid order: a report's first run is the first asked
    done: dict[RunSpec, dict[str, Any]] = {}     # the runs scored and staged, by spec (finish threads add)

    def on_run(out: RunOutput) -> dict[str, Any]:
        """Score one finished run, write its traces, keep only its summary row.  Runs on
        the replay's finishing threads: it reads the shared state above, writes its own."""
        _, agg = score_run(es, out)
        profile = profiles[out.spec]
        run_id = f"{batch_id}-{profile.name}-{out.spec.key}"
        busy = out.busy_s
        row: dict[str, Any] = {
            "run_id": run_id, "batch_id": batch_id, "batch_position": positions[out.spec],
            "profile": profile.name, "label": out.spec.label,
            "profile_source": profile.source, "mode": out.spec.mode,
            "overrides": {k: v for k, v in out.spec.overrides},
            "dataset": es.name, "split": es.split, "dataset_hash": dataset_hash, "corpus_hash": es.corpus_hash,
            # the database searched: a user's (path and state), else the data set's cached index
            "db": str(info["index"]["path"]), "db_state": info["index"].get("state"),
            "model_id": cfg.model_id, **version, "started_at": started.isoformat(timespec="seconds"),
            "n_queries": len(es.queries), "busy_seconds": round(busy, 3),
            "qps_per_worker": round(len(es.queries) / busy, 1) if busy > 0 else None,
        }
        for k, v in profile.flat().items():
            if k != "name":
                row[k] = v
        row.update({k: v for k, v in agg.items() if k not in ("by_category", "by_arm", "by_factor")})
        if "by_category" in agg:
            row["by_category"] = agg["by_category"]
        row["by_arm"] = agg["by_arm"]
        row["by_factor"] = agg["by_factor"]
        if opts.write:
            label = out.spec.label          # a property that formats the overrides: once, not per row
            for q in out.queries:
                q["run_id"], q["label"], q["profile"] = run_id, label, profile.name
            assert out.merged is not None
            # The parts' chunks as they are: Parquet writes them into the same one row group,
            # the same bytes, without first copying the run's ~30k rows into one chunk.
            write_traces(staging, run_id, out.queries, fill_run_columns(out.merged.table, run_id, label, profile.name))
        done[out.spec] = row
        return row

    published: dict[str, Path] = {}

    def publish(rows: Sequence[dict[str, Any]], stats: ReplayStats | None) -> None:
        """Each run's ``runs.parquet`` (with the batch's figures), then its folder into place."""
        finished = datetime.now(UTC).isoformat(timespec="seconds")
        for row in rows:
            if row["run_id"] in published:
                continue
            row.update(finished_at=finished, batch_qps=stats.qps if stats else None,
                       workers=stats.workers if stats else None, batch_runs=len(opts.specs))
            if opts.write:
                write_run_row(staging, row)
                published[row["run_id"]] = publish_run(staging, out_dir, row["run_id"])

    stats: ReplayStats | None = None
    # held until discard_staging: a prune sees the batch alive (memo_eval.staging)
    lock = claim_staging(staging) if opts.write else None
    try:
        status("replay")
        tick = tick_factory(len(es.queries) * len(opts.specs)) if tick_factory else None
        rows, stats = replay(cfg, opts.specs, workers=opts.workers, tick=tick, on_run=on_run)
        publish(rows, stats)
    except KeyboardInterrupt:
        # The finish threads are done (replay waits for them): keep every run that had
        # finished, whole, and say so.  Runs still replaying are dropped.
        kept = [done[s] for s in opts.specs if s in done]
        publish(kept, stats)
        n = len(opts.specs)
        if not opts.write:
            said = f"interrupted; nothing written ({len(kept)} of {n} runs had finished)"
        elif not kept:
            said = f"interrupted; no run of the {n} had finished, none was written"
        elif len(kept) < n:
            said = (f"interrupted; kept the {len(kept)} of {n} runs that had finished (batch {batch_id}, "
                    f"each complete) in {out_dir}")
        else:
            said = f"interrupted while writing; all {n} runs kept (batch {batch_id}) in {out_dir}"
        raise Interrupted(said) from None
    finally:
        if opts.write:
            discard_staging(staging, lock)
    assert stats is not None
    runs = []
    for spec, row in zip(opts.specs, rows, strict=True):
        folder = published.get(row["run_id"])
        metrics = {k: row[k] for k in (*M.MEASURES, "n_queries", "n_scored", "abstain_precision",
                                       "abstain_recall", "n_unanswerable", "n_abstained", "degraded_queries")}
        runs.append({"run_id": row["run_id"], "profile": row["profile"], "label": spec.label, "mode": spec.mode,
                     "overrides": row["overrides"], "metrics": metrics, "by_category": row.get("by_category"),
                     "by_arm": row.get("by_arm"), "by_factor": row.get("by_factor"),
                     "path": str(folder) if folder else None})
    return {
        "batch_id": batch_id, "dataset": es.name, "split": es.split, "source": es.source,
        "queries": len(es.queries), "judged": len(es.qrels), "dataset_hash": dataset_hash,
        "notes": notes, **info, **version,
        "replay": {"searches": stats.queries, "seconds": stats.seconds, "qps": stats.qps,
                   "workers": stats.workers, "warmup_seconds": stats.warmup_s},
        "out_dir": str(out_dir), "runs": runs,
    }
