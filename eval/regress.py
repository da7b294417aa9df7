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

Metric paths: ``ndcg_10`` ... (run aggregates), ``by_category.<cat>.<metric>`` and
``by_arm.<arm>.{ran,top10,share}`` (``memo_eval.run.arm_coverage``: how often an arm ran, how
often it voted for a top-10 result, its share of the top-10 fused score).

The loader refuses a check that cannot fail (``CheckError``):

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
from memo_eval.grid import RunSpec
from memo_eval.run import EvalOptions, run_eval

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
MAX_DETERMINISTIC_TOL = 0.002     # replays are deterministic: the same code gives the same figures
SPREAD_FACTOR = 2.0               # a noisy metric's tolerance: at most this x its measured spread
METRIC_RANGE = (0.0, 1.0)         # every checked metric is a mean of [0, 1] values or a share
RANK_DEPTH = 100
RANKING_METRIC = "ranking.agreement"


class CheckError(DatasetError):
    """A check the loader refuses (it could never fail, or its tolerance is not justified)."""


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


def load_checks(paths: Sequence[Path] | None = None) -> list[Check]:
    files = list(paths) if paths else sorted(EXPECTED_DIR.glob("*.toml"))
    checks = []
    for f in files:
        try:
            doc = tomllib.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise DatasetError(f"{f}: {exc}") from exc
        for i, c in enumerate(doc.get("check", [])):
            where = f"{f} check #{i + 1}"
            try:
                metrics = {str(k): (float(v["expected"]), float(v.get("tolerance", MAX_DETERMINISTIC_TOL)))
                           for k, v in c["metrics"].items()}
                for k, v in c["metrics"].items():
                    validate_metric(f"{where} ({c.get('name')})", str(k), float(v["expected"]),
                                    float(v.get("tolerance", MAX_DETERMINISTIC_TOL)),
                                    None if v.get("spread") is None else float(v["spread"]))
                spec = RunSpec(profile=str(c.get("profile", "rrf")),
                               overrides=tuple((str(k), v) for k, v in c.get("overrides", {}).items()),
                               mode=str(c.get("mode", "auto")))
                rankings = Path(f).parent / str(c["rankings"]) if c.get("rankings") else None
                if RANKING_METRIC in metrics and rankings is None:
                    raise CheckError(f"{where}: {RANKING_METRIC} needs rankings = <file>")
                checks.append(Check(name=str(c["name"]), dataset=str(c["dataset"]), split=str(c.get("split", "test")),
                                    spec=spec, metrics=metrics, fast=bool(c.get("fast", False)),
                                    nightly=bool(c.get("nightly", False)),
                                    limit_queries=c.get("limit_queries"), source=str(f), rankings=rankings))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(f"{where}: bad check ({exc})") from exc
    return checks


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
            tick_factory=None, update_rankings: bool = False, nightly: bool = False) -> dict[str, Any]:
    """``fast``: the per-push checks; ``nightly``: the nightly gate's checks (every suite
    domain, default profile), never in the other two sets; neither: every other check."""
    checks = [c for c in load_checks(files)
              if (c.nightly if nightly else not c.nightly and (c.fast or not fast)) and (not only or c.name in only)]
    if not checks:
        raise DatasetError("no regression checks selected", hint="see eval/expected/*.toml")
    groups: dict[tuple, list[Check]] = {}
    for c in checks:
        groups.setdefault((c.dataset, c.split, c.limit_queries), []).append(c)
    outcomes: list[Outcome] = []
    batches = []
    for (dataset, split, limit), group in groups.items():
        specs = list(dict.fromkeys(c.spec for c in group))
        semantic = any(s.mode in ("auto", "semantic") for s in specs)
        from memo_eval.suite import resolve_dataset

        res = run_eval(EvalOptions(dataset=resolve_dataset(dataset), split=split, specs=specs, limit_queries=limit,
                                   workers=workers, out=out, semantic=semantic),
                       status=status, tick_factory=tick_factory)
        batches.append({"batch_id": res["batch_id"], "dataset": dataset, "split": split,
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
