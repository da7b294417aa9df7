"""``memo eval regress``: replay the committed checks and fail when a metric drops.

Expected figures live in ``eval/expected/*.toml`` (pyserini-2cr style: a condition, its
command and its scores)::

    [[check]]
    name = "scifact-rrf"
    dataset = "scifact"          # split defaults to "test"
    profile = "rrf"              # mode defaults to "auto"; overrides = {"fusion.k" = 20}
    fast = false                 # true: part of the --fast set (CI on every push)
    nightly = false              # true: only with --nightly (every suite domain; eval/expected/nightly.toml)
    [check.metrics]
    ndcg_10 = { expected = 0.7312, tolerance = 0.005 }
    "by_category.5.abstain_recall" = { expected = 0.12, tolerance = 0.02 }

A check fails when ``measured < expected - tolerance``.  ``measured > expected + tolerance``
passes but is flagged ``improved`` (update the file so the gain is locked in).  Checks
that share (data set, split, query limit) replay in one batch.

Your own checks: ``dataset`` may be your labels file (a relative path is read from the
TOML's folder first), replayed against your memo database: the check's ``db`` (``$VARS``
expanded, relative to the TOML's folder, or a ``postgresql://`` URL), else ``--db``, else
``$MEMO_DB`` / memo's default database, as ``memo search`` finds it.

Metric paths: ``ndcg_10`` ... (run aggregates), ``by_category.<cat>.<metric>`` and
``by_arm.<arm>.{ran,top10,share}`` (``memo_eval.run.arm_coverage``: how often an arm ran, how
often it voted for a top-10 result, its share of the top-10 fused score).

Every check is validated before any replay (``load_checks``: unknown keys, strict types,
profiles, metric paths a run cannot have, names used twice; then ``regress`` holds each
against its data set's split: ``_unmeasurable``), each problem a ``CheckError`` (exit 8)
naming the check and the key, never a ``FAIL``.  The loader also refuses a check that
cannot fail (``CheckError``):

* every metric lies in [0, 1]: a check with ``expected - tolerance <= 0`` (e.g. expected
  0.0, tolerance 0.0) can never be undershot, and a tolerance >= 1 spans the whole range;
* a tolerance must come from measured run-to-run spread: at most ``MAX_DETERMINISTIC_TOL``
  (0.002) unless the entry records the measured ``spread`` (max - min over repeated
  runs), and then at most ``SPREAD_FACTOR`` x that spread.

Pinned rankings.  A check may name a reference ranking file (``rankings = "x.json"``, next
to the TOML: qid -> the ranked unit ids of the accepted run).  Its metric
``ranking.agreement`` = the mean over those queries of the share of positions (top
``RANK_DEPTH``) where the run ranks the same unit as the reference.  On a small set (the
bundled sample: 20 claims) relevance metrics cannot see a change that only reorders
results below the relevant ones (e.g. the rrf tiebreak); the pinned ranking can.  After a
deliberate change, ``memo eval regress --fast --update-rankings`` rewrites the files.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo_eval import metrics as M
from memo_eval.grid import RunSpec
from memo_eval.run import EvalOptions, run_eval

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
MAX_DETERMINISTIC_TOL = 0.002     # replays are deterministic: the same code gives the same figures
SPREAD_FACTOR = 2.0               # a noisy metric's tolerance: at most this x its measured spread
METRIC_RANGE = (0.0, 1.0)         # every checked metric is a mean of [0, 1] values or a share
RANK_DEPTH = 100
RANKING_METRIC = "ranking.agreement"


class CheckError(DatasetError):
    """A check the loader refuses: it could never fail, its tolerance is not justified, or
    it cannot be read or measured as written (exit 8, the expected file's error)."""

    hint = 'see docs/eval.md "Regression" for what a check may say'


def validate_metric(where: str, metric: str, expected: float, tolerance: float, spread: float | None) -> None:
    lo, hi = METRIC_RANGE
    if not lo <= expected <= hi:
        raise CheckError(f"{where}: {metric} expected {expected} is outside the metric's range [{lo}, {hi}]")
    if tolerance < 0:
        raise CheckError(f"{where}: {metric} has a negative tolerance")
    if tolerance >= hi - lo:
        raise CheckError(f"{where}: {metric} tolerance {tolerance} spans the metric's whole range: it can never fail")
    if expected - tolerance <= lo:
        raise CheckError(f"{where}: {metric} = {expected} with tolerance {tolerance} can never fail "
                         f"(the metric cannot go below {lo})",
                         hint="check a metric that can drop, or drop this line")
    limit = MAX_DETERMINISTIC_TOL if spread is None else max(MAX_DETERMINISTIC_TOL, SPREAD_FACTOR * spread)
    if tolerance > limit + 1e-12:
        raise CheckError(f"{where}: {metric} tolerance {tolerance} is wider than the measured spread allows "
                         f"({limit:g})", hint="record the measured run-to-run spread as spread = ... "
                                               "(max - min over repeated runs)")


@dataclass(frozen=True)
class Check:
    name: str
    dataset: str
    split: str
    spec: RunSpec
    metrics: dict[str, tuple[float, float]]      # metric path -> (expected, tolerance)
    fast: bool = False
    nightly: bool = False                        # replayed only by --nightly (every suite domain)
    limit_queries: int | None = None
    source: str = ""
    rankings: Path | None = None                 # reference ranking (pinned), see the module doc
    db: str | None = None                        # your memo database (a set of your own labels), see the module doc


@dataclass
class Outcome:
    check: str
    metric: str
    expected: float
    tolerance: float
    measured: float | None
    status: str                    # ok | improved | FAIL
    run_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# What a [[check]] may say, and the type of each value (checked strictly: ``fast = "false"``
# is a string, not false).  Required: name, dataset, metrics.
_CHECK_KEYS: dict[str, tuple[type, ...]] = {
    "name": (str,), "dataset": (str,), "split": (str,), "profile": (str,), "mode": (str,), "overrides": (dict,),
    "fast": (bool,), "nightly": (bool,), "limit_queries": (int,), "rankings": (str,), "db": (str,),
    "metrics": (dict,)}
_REQUIRED = ("name", "dataset", "metrics")
_ENTRY_KEYS = ("expected", "tolerance", "spread")
_TYPE_WORDS = {str: "a string", dict: "a table", bool: "true or false", int: "an integer"}
# Metric paths a run summary can hold (``metric_value``); <cat> and <factor> are the data's.
ABSTENTION = ("abstain_precision", "abstain_recall")
RUN_METRICS = (*M.MEASURES, *ABSTENTION)
ARM_FIGURES = ("ran", "top10", "share")          # memo_eval.run.arm_coverage
FACTOR_FIGURES = ("top10", "mean")               # memo_eval.run.factor_coverage
METRIC_PATHS = (f"{', '.join(RUN_METRICS)}, by_category.<category>.<one of those>, "
                f"by_arm.<arm>.{{{','.join(ARM_FIGURES)}}}, by_factor.<factor>.{{{','.join(FACTOR_FIGURES)}}}, "
                f"{RANKING_METRIC}")


def metric_path_error(path: str) -> str | None:
    """Why ``path`` names no figure a run summary can hold (None: it may)."""
    from memo.types import ARM_NAMES

    parts = path.split(".")
    if path == RANKING_METRIC or (len(parts) == 1 and path in RUN_METRICS):
        return None
    head = parts[0]
    if head == "by_category" and len(parts) == 3 and parts[1] and parts[2] in RUN_METRICS:
        return None
    if head == "by_arm" and len(parts) == 3 and parts[1] in ARM_NAMES and parts[2] in ARM_FIGURES:
        return None
    if head == "by_factor" and len(parts) == 3 and parts[1] and parts[2] in FACTOR_FIGURES:
        return None
    return f"metric {path!r} is no metric a run has (metrics: {METRIC_PATHS})"


def _typed(where: str, key: str, value: Any, types: tuple[type, ...]) -> Any:
    # bool is an int to Python: limit_queries = true is not a limit
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise CheckError(f"{where}: {key} must be {_TYPE_WORDS[types[0]]}, got {value!r}")
    return value


def _number(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CheckError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _check(c: Any, where: str, source: Path) -> Check:
    """One [[check]] table -> Check, or CheckError naming the check and the key."""
    from memo.errors import ProfileError
    from memo.types import MODES

    if not isinstance(c, dict):
        raise CheckError(f"{where}: expected a [[check]] table, got {c!r}")
    if isinstance(c.get("name"), str) and c["name"]:
        where = f"{where} ({c['name']})"
    for key in c:
        if key not in _CHECK_KEYS:
            raise CheckError(f"{where}: unknown key {key!r} (a check's keys: {', '.join(_CHECK_KEYS)})")
    for key in _REQUIRED:
        if key not in c:
            raise CheckError(f"{where}: {key} is required")
    for key, value in c.items():
        _typed(where, key, value, _CHECK_KEYS[key])
    if not c["name"].strip():
        raise CheckError(f"{where}: name must not be empty")
    mode = c.get("mode", "auto")
    if mode not in MODES:
        raise CheckError(f"{where}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    limit = c.get("limit_queries")
    if limit is not None and limit < 1:
        raise CheckError(f"{where}: limit_queries must be 1 or more, got {limit}")
    if not c["metrics"]:
        raise CheckError(f"{where}: [check.metrics] is empty: a check must check something")
    metrics: dict[str, tuple[float, float]] = {}
    for path, entry in c["metrics"].items():
        key = f"metrics.{path}"
        if (why := metric_path_error(path)) is not None:
            raise CheckError(f"{where}: {why}")
        if not isinstance(entry, dict):
            raise CheckError(f"{where}: {key} must be a table {{ expected = ..., tolerance = ... }}, got {entry!r}")
        unknown = [k for k in entry if k not in _ENTRY_KEYS]
        if unknown:
            raise CheckError(f"{where}: {key}: unknown key {unknown[0]!r} (keys: {', '.join(_ENTRY_KEYS)})")
        if "expected" not in entry:
            raise CheckError(f"{where}: {key}: expected is required")
        exp = _number(where, f"{key}.expected", entry["expected"])
        tol = _number(where, f"{key}.tolerance", entry.get("tolerance", MAX_DETERMINISTIC_TOL))
        spread = None if entry.get("spread") is None else _number(where, f"{key}.spread", entry["spread"])
        validate_metric(where, path, exp, tol, spread)
        metrics[path] = (exp, tol)
    spec = RunSpec(profile=c.get("profile", "rrf"), overrides=tuple(c.get("overrides", {}).items()), mode=mode)
    try:
        spec.load()
    except ProfileError as exc:
        key = "overrides" if spec.overrides else "profile"
        raise CheckError(f"{where}: {key}: {exc}") from None
    rankings = source.parent / c["rankings"] if c.get("rankings") else None
    db = _db_of(c["db"], source, where) if c.get("db") is not None else None
    if RANKING_METRIC in metrics and rankings is None:
        raise CheckError(f"{where}: {RANKING_METRIC} needs rankings = <file>")
    return Check(name=c["name"], dataset=_dataset_of(c["dataset"], source), split=c.get("split", "test"), spec=spec,
                 metrics=metrics, fast=c.get("fast", False), nightly=c.get("nightly", False), limit_queries=limit,
                 source=str(source), rankings=rankings, db=db)


def _db_of(value: str, source: Path, where: str) -> str:
    """A check's ``db``: ``$VARS`` and ``~`` expanded (a CI job's ``db = "$MEMO_DB"``), a
    relative path read from the TOML's folder, a PostgreSQL URL as it is."""
    import os

    from memo.store.dialect import is_db_url

    expanded = os.path.expandvars(value).strip()
    if not expanded or "$" in expanded:
        raise CheckError(f"{where}: db = {value!r} names no database (an unset variable?)",
                         hint="set the variable, or give the database's path")
    if is_db_url(expanded):
        return expanded
    path = Path(expanded).expanduser()
    return str(path if path.is_absolute() else source.parent / path)


def _dataset_of(value: str, source: Path) -> str:
    """A check's data set: a name as it is; a relative path from the TOML's folder when it
    is there (your own checks beside your labels), else as ``suite.resolve_dataset`` reads
    it (the working folder, then the checkout's root: the committed checks)."""
    if "/" not in value and not value.endswith((".jsonl", ".json")):
        return value
    beside = source.parent / value
    return str(beside) if not Path(value).is_absolute() and beside.exists() else value


def load_checks(paths: Sequence[Path] | None = None) -> list[Check]:
    """Every check of ``paths`` (default ``eval/expected/*.toml``), validated before any
    replay: unknown keys, types, modes, profiles and overrides, metric paths a run cannot
    have, names used twice (``CheckError``, exit 8, naming the check and the key).  A file
    given by name must hold checks; the default folder also holds profiles (skipped)."""
    files = list(paths) if paths else sorted(EXPECTED_DIR.glob("*.toml"))
    checks: list[Check] = []
    seen: dict[str, str] = {}
    for f in files:
        try:
            doc = tomllib.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CheckError(f"{f}: {exc}") from exc
        if "check" not in doc:
            if paths:
                raise CheckError(f"{f}: no [[check]] tables")
            continue
        other = [k for k in doc if k != "check"]
        if other or not isinstance(doc["check"], list):
            raise CheckError(f"{f}: unknown top-level key {other[0]!r}" if other else
                             f"{f}: write each check as [[check]] (an array of tables), not [check]")
        for i, c in enumerate(doc["check"]):
            check = _check(c, f"{f} check #{i + 1}", Path(f))
            if check.name in seen:
                raise CheckError(f"{f} check #{i + 1}: name {check.name!r} is already used ({seen[check.name]})",
                                 hint="give every check its own name")
            seen[check.name] = f"{f} check #{i + 1}"
            checks.append(check)
    return checks


def _unmeasurable(check: Check, es: Any) -> str | None:
    """Why one of ``check``'s metrics cannot be measured on the data set ``es`` (the split
    it replays), or None.  ``abstain_recall`` needs unanswerable queries, a ranking metric
    judged answerable ones, ``by_category.<cat>`` a category the set has: the run would
    report no value and the check would read as a regression."""
    def ask(metric: str, queries: list) -> str | None:
        if metric == "abstain_recall" and not any(not q.answerable for q in queries):
            return "has no unanswerable queries"
        if metric in M.MEASURES and not any(q.answerable and es.qrels.get(q.qid) for q in queries):
            return "has no judged answerable queries"
        return None

    for path in check.metrics:
        parts = path.split(".")
        if len(parts) == 1:
            why = ask(path, list(es.queries))
            if why:
                return f"{path}: {es.name}/{es.split} {why}"
        elif parts[0] == "by_category":
            qs = [q for q in es.queries if q.category == parts[1]]
            if not qs:
                cats = sorted({q.category for q in es.queries if q.category is not None})
                return f"{path}: {es.name}/{es.split} has no category {parts[1]!r} (its categories: " \
                       f"{', '.join(cats) or 'none'})"
            why = ask(parts[2], qs)
            if why:
                return f"{path}: category {parts[1]!r} of {es.name}/{es.split} {why}"
    return None


def metric_value(run: dict[str, Any], path: str) -> float | None:
    """``ndcg_10``, ``by_category.<cat>.<metric>`` or ``by_arm.<arm>.<figure>`` from a run summary."""
    node: Any = {**run["metrics"], "by_category": run.get("by_category") or {}, "by_arm": run.get("by_arm") or {},
                 "by_factor": run.get("by_factor") or {}}
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if node is None else float(node)


def run_rankings(run_folder: Path, depth: int = RANK_DEPTH) -> dict[str, list[str]]:
    """qid -> the run's ranked unit ids (de-duplicated, the scoring order), from results.parquet."""
    import polars as pl

    df = (pl.read_parquet(Path(run_folder) / "results.parquet", columns=["qid", "rank", "doc_id"])
          .sort(["qid", "rank"]))
    out: dict[str, list[str]] = {}
    for qid, doc in zip(df["qid"].to_list(), df["doc_id"].to_list(), strict=True):
        lst = out.setdefault(qid, [])
        if doc not in lst and len(lst) < depth:
            lst.append(doc)
    return out


def rankings_json(ranked: dict[str, list[str]]) -> str:
    """One query per line (readable diffs when a deliberate change re-pins them)."""
    lines = [f"{json.dumps(q)}: {json.dumps(ids)}" for q, ids in sorted(ranked.items(), key=lambda kv: (len(kv[0]), kv[0]))]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def ranking_agreement(run: dict[str, list[str]], ref: dict[str, list[str]]) -> float:
    """Mean over the reference's queries of the share of positions holding the same unit."""
    if not ref:
        return 0.0
    total = 0.0
    for qid, want in ref.items():
        got = run.get(qid, [])
        n = max(len(want), len(got))
        total += (sum(1 for a, b in zip(want, got, strict=False) if a == b) / n) if n else 1.0
    return total / len(ref)


def regress(*, fast: bool = False, files: Sequence[Path] | None = None, only: Sequence[str] = (),
            workers: int | None = None, out: Path | None = None, status: Callable[[str], None] | None = None,
            tick_factory=None, update_rankings: bool = False, nightly: bool = False,
            db: str | None = None) -> dict[str, Any]:
    """``fast``: the per-push checks; ``nightly``: the nightly gate's checks (every suite
    domain, default profile), never in the other two sets; neither: every other check.
    ``db``: the memo database of the checks that name none (``--db``); a set of your own
    labels without one is replayed against memo's database (``$MEMO_DB``, else the
    default: ``memo_eval.run.user_database``)."""
    loaded = load_checks(files)
    unknown = [n for n in only if n not in {c.name for c in loaded}]
    if unknown:
        raise CheckError(f"no check named {unknown[0]!r} (checks: {', '.join(c.name for c in loaded)})")
    checks = [c for c in loaded
              if (c.nightly if nightly else not c.nightly and (c.fast or not fast)) and (not only or c.name in only)]
    if not checks:
        raise DatasetError("no regression checks selected", hint="see eval/expected/*.toml")
    from memo_eval.datasets import load_eval_set
    from memo_eval.suite import resolve_dataset
    from memo_eval.traces import writable_runs_dir

    writable_runs_dir(out)
    groups: dict[tuple, list[Check]] = {}
    for c in checks:
        groups.setdefault((c.dataset, c.split, c.limit_queries, c.db or db), []).append(c)
    # Every group's data set is read, and every check held against it, before the first
    # replay: a check that cannot be measured there is the file's error (exit 8), not a
    # FAIL found after minutes of replay.
    sets = {}
    for (dataset, split, limit, _), group in groups.items():
        es = sets[dataset, split, limit] = load_eval_set(resolve_dataset(dataset), split, limit=limit)
        for c in group:
            if (why := _unmeasurable(c, es)) is not None:
                raise CheckError(f"{c.source} ({c.name}): {why}: this check can never be measured",
                                 hint="drop that metric from the check or check it on a set that has them")
    outcomes: list[Outcome] = []
    batches = []
    for (dataset, split, limit, group_db), group in groups.items():
        specs = list(dict.fromkeys(c.spec for c in group))
        semantic = any(s.mode in ("auto", "semantic") for s in specs)
        res = run_eval(EvalOptions(dataset=resolve_dataset(dataset), split=split, specs=specs, limit_queries=limit,
                                   workers=workers, out=out, semantic=semantic, eval_set=sets[dataset, split, limit],
                                   db=group_db),
                       status=status, tick_factory=tick_factory)
        # the split replayed, not the one asked for: a labels file without splits is replayed
        # whole ("all", as its run ids say) whatever the check's split
        batches.append({"batch_id": res["batch_id"], "dataset": dataset, "split": res["split"],
                        "qps": res["replay"]["qps"], "index": res["index"]})
        by_label = {r["label"]: r for r in res["runs"]}
        for c in group:
            run = by_label[c.spec.label]
            ranked = run_rankings(Path(run["path"])) if c.rankings is not None else None
            if ranked is not None and update_rankings:
                assert c.rankings is not None
                c.rankings.write_text(rankings_json(ranked), encoding="utf-8")
            for metric, (exp, tol) in c.metrics.items():
                if metric == RANKING_METRIC:
                    assert c.rankings is not None and ranked is not None
                    if not c.rankings.exists():
                        raise CheckError(f"{c.source} ({c.name}): no reference ranking {c.rankings}",
                                         hint="memo eval regress --update-rankings writes it")
                    ref = json.loads(c.rankings.read_text(encoding="utf-8"))
                    got = ranking_agreement(ranked, ref)
                else:
                    got = metric_value(run, metric)
                if got is None or got < exp - tol:
                    st = "FAIL"
                elif got > exp + tol:
                    st = "improved"
                else:
                    st = "ok"
                outcomes.append(Outcome(c.name, metric, exp, tol, got, st, run["run_id"]))
    failed = [o for o in outcomes if o.status == "FAIL"]
    return {"mode": "nightly" if nightly else "fast" if fast else "full", "passed": not failed, "failures": len(failed),
            "checks": [o.__dict__ for o in outcomes], "batches": batches}
