"""``memo eval regress``: replay the committed checks and fail when a metric drops.

Expected figures live in ``eval/expected/*.toml`` (pyserini-2cr style: a condition, its
command and its scores)::

    [[check]]
    name = "scifact-rrf"
    dataset = "scifact"          # split defaults to "test"
    profile = "rrf"              # mode defaults to "auto"; overrides = {"fusion.k" = 20}
    fast = false                 # true: part of the --fast set (CI on every push)
    [check.metrics]
    ndcg_10 = { expected = 0.7312, tolerance = 0.005 }
    "by_category.5.abstain_recall" = { expected = 0.12, tolerance = 0.02 }

A check fails when ``measured < expected - tolerance``.  ``measured > expected + tolerance``
passes but is flagged ``improved`` (update the file so the gain is locked in).  Checks
that share (data set, split, query limit) replay in one batch.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.grid import RunSpec
from eval.run import EvalOptions, run_eval
from memo.errors import DatasetError

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"


@dataclass(frozen=True)
class Check:
    name: str
    dataset: str
    split: str
    spec: RunSpec
    metrics: dict[str, tuple[float, float]]      # metric path -> (expected, tolerance)
    fast: bool = False
    limit_queries: int | None = None
    source: str = ""


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
                metrics = {str(k): (float(v["expected"]), float(v.get("tolerance", 0.01)))
                           for k, v in c["metrics"].items()}
                spec = RunSpec(profile=str(c.get("profile", "rrf")),
                               overrides=tuple((str(k), v) for k, v in c.get("overrides", {}).items()),
                               mode=str(c.get("mode", "auto")))
                checks.append(Check(name=str(c["name"]), dataset=str(c["dataset"]), split=str(c.get("split", "test")),
                                    spec=spec, metrics=metrics, fast=bool(c.get("fast", False)),
                                    limit_queries=c.get("limit_queries"), source=str(f)))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(f"{where}: bad check ({exc})") from exc
    return checks


def metric_value(run: dict[str, Any], path: str) -> float | None:
    """``ndcg_10`` or ``by_category.<cat>.<metric>`` from a run summary."""
    node: Any = {**run["metrics"], "by_category": run.get("by_category") or {}}
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if node is None else float(node)


def regress(*, fast: bool = False, files: Sequence[Path] | None = None, only: Sequence[str] = (),
            workers: int | None = None, out: Path | None = None, status: Callable[[str], None] | None = None,
            tick_factory=None) -> dict[str, Any]:
    checks = [c for c in load_checks(files) if (c.fast or not fast) and (not only or c.name in only)]
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
        res = run_eval(EvalOptions(dataset=dataset, split=split, specs=specs, limit_queries=limit,
                                   workers=workers, out=out, semantic=semantic),
                       status=status, tick_factory=tick_factory)
        batches.append({"batch_id": res["batch_id"], "dataset": dataset, "split": split,
                        "qps": res["replay"]["qps"], "index": res["index"]})
        by_label = {r["label"]: r for r in res["runs"]}
        for c in group:
            run = by_label[c.spec.label]
            for metric, (exp, tol) in c.metrics.items():
                got = metric_value(run, metric)
                if got is None or got < exp - tol:
                    st = "FAIL"
                elif got > exp + tol:
                    st = "improved"
                else:
                    st = "ok"
                outcomes.append(Outcome(c.name, metric, exp, tol, got, st, run["run_id"]))
    failed = [o for o in outcomes if o.status == "FAIL"]
    return {"mode": "fast" if fast else "full", "passed": not failed, "failures": len(failed),
            "checks": [o.__dict__ for o in outcomes], "batches": batches}
