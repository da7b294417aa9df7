"""``memo eval tune``: search profile constants on the TRAIN split, check the winner on TEST.

1. Expand the search space (profiles x ``--set`` grid, or the default space below); with
   ``samples`` pick that many points at random (seeded) instead of the whole grid.
2. Replay every point on the tuning split (default ``train``) in one batch (index, vectors
   and workers shared) and rank the points by the metric (default nDCG@10).
3. Replay the winner, and the untuned base profiles, on the evaluation split (``test``).
   The test split is never looked at while choosing.
4. Write the winner as a profile TOML whose header comments record the provenance:
   data set, splits, metric, date, code version, the search space and both scores.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.anchors import against
from eval.grid import RunSpec, expand
from eval.run import EvalOptions, code_version, run_eval
from memo.errors import ValidationError
from memo.profile import load_profile, user_profile_dir

# Only weight *ratios* matter to both fusions (cutoff is relative, abstention reads raw
# cosines), so the keyword weight stays at 0.5 and the others move around it.  The exact
# arm is in the space because its router fires on many scientific claims (numbers,
# hyphenated names) and its votes are noise there.  fetch_depth matters to minmax only
# through each arm's minimum (the bottom of its list), which sets the normalisation.
DEFAULT_SPACE: dict[str, list[str]] = {
    "rrf": ["fusion.k=10,20,40,60,100", "weights.semantic=0.35,0.5,0.7,1.0", "weights.exact=0,0.15,0.3"],
    "minmax": ["weights.semantic=0.3,0.4,0.5,0.6,0.7,0.85,1.0", "weights.exact=0,0.15,0.3",
               "retrieve.fetch_depth=50,100,200"],
}


@dataclass(frozen=True)
class TuneOptions:
    dataset: str = "scifact"
    profiles: Sequence[str] = ("rrf", "minmax")
    sets: Sequence[str] = ()               # empty: DEFAULT_SPACE per profile
    mode: str = "auto"                     # search mode of every point (keyword: no model needed)
    metric: str = "ndcg_10"
    tune_split: str = "train"
    test_split: str = "test"
    samples: int | None = None             # random search: this many points
    seed: int = 13
    out_profile: Path | None = None
    name: str | None = None                # profile name in the header (default: file stem)
    workers: int | None = None
    limit_queries: int | None = None
    out: Path | None = None                # runs dir


def search_space(opts: TuneOptions) -> list[RunSpec]:
    specs: list[RunSpec] = []
    for prof in opts.profiles:
        sets = list(opts.sets) if opts.sets else DEFAULT_SPACE.get(prof, [])
        specs.extend(expand([prof], sets, mode=opts.mode))
    if opts.samples is not None and opts.samples < len(specs):
        specs = random.Random(opts.seed).sample(specs, opts.samples)
    if not specs:
        raise ValidationError("empty search space")
    return specs


def _metric(run: dict[str, Any], metric: str) -> float:
    v = run["metrics"].get(metric)
    return float(v) if v is not None else float("-inf")


def profile_toml(profile, header: Sequence[str]) -> str:
    """Serialise a Profile as TOML (every key, so the file stands alone)."""
    flat = profile.flat()
    sections: dict[str, dict[str, Any]] = {}
    models: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        if key == "name":
            continue
        if key.startswith("models."):
            model_id, band = key[len("models."):].rsplit(".", 1)
            models.setdefault(model_id, {})[band] = value
            continue
        section, field = key.split(".", 1)
        sections.setdefault(section, {})[field] = value

    def lit(key: str, v: Any) -> str:
        if key == "aging_kinds":
            items = [s for s in str(v).split(",") if s]
            return "[" + ", ".join(f'"{s}"' for s in items) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"# {h}" if h else "#" for h in header] + [""]
    for section in ("retrieve", "fusion", "weights", "recency", "cutoff", "limit", "budget", "entities", "graph",
                    "fact"):
        if section in sections:
            lines.append(f"[{section}]")
            lines += [f"{k} = {lit(k, v)}" for k, v in sections[section].items()]
            lines.append("")
    for model_id, bands in models.items():
        lines.append(f'[models."{model_id}"]')
        lines += [f"{k} = {lit(k, v)}" for k, v in bands.items()]
        lines.append("")
    return "\n".join(lines)


def tune(opts: TuneOptions, *, status: Callable[[str], None] | None = None,
         tick_factory=None) -> dict[str, Any]:
    status = status or (lambda s: None)
    specs = search_space(opts)
    status(f"tuning {len(specs)} points on {opts.dataset}/{opts.tune_split}")
    semantic = opts.mode in ("auto", "semantic")
    train = run_eval(EvalOptions(dataset=opts.dataset, split=opts.tune_split, specs=specs, semantic=semantic,
                                 limit_queries=opts.limit_queries, workers=opts.workers, out=opts.out),
                     status=status, tick_factory=tick_factory)
    ranked = sorted(train["runs"], key=lambda r: -_metric(r, opts.metric))
    best_run = ranked[0]
    best = next(s for s in specs if s.label == best_run["label"])
    status(f"best on {opts.tune_split}: {best.label} {opts.metric}={_metric(best_run, opts.metric):.4f}")
    bases = [RunSpec(p, mode=opts.mode) for p in dict.fromkeys(opts.profiles)]
    test = run_eval(EvalOptions(dataset=opts.dataset, split=opts.test_split, specs=[best, *bases], semantic=semantic,
                                limit_queries=opts.limit_queries, workers=opts.workers, out=opts.out),
                    status=status, tick_factory=tick_factory)
    test_best, test_bases = test["runs"][0], test["runs"][1:]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    out_profile = opts.out_profile or user_profile_dir() / f"tuned-{train['dataset']}.toml"
    name = opts.name or out_profile.stem
    version = code_version()
    space = list(opts.sets) if opts.sets else [f"{p}: {' '.join(DEFAULT_SPACE.get(p, []))}" for p in opts.profiles]
    header = [
        f'memo search profile "{name}": written by `memo eval tune`; do not edit by hand, re-run it.',
        f"Tuned on: {train['dataset']} split {opts.tune_split} ({train['queries']} queries), "
        f"metric {opts.metric}, {len(specs)} points"
        + (f" (random sample, seed {opts.seed})" if opts.samples else " (full grid)") + ".",
        f"Date: {now}; code {version['code_version']}; model {train.get('model_id')}.",
        f"Data set hash ({opts.tune_split}): {train['dataset_hash'][:16]}; "
        f"({opts.test_split}): {test['dataset_hash'][:16]}.",
        f"Search space: profiles {', '.join(opts.profiles)}; " + "; ".join(space) + ".",
        f"Winner: {best.label}.",
        f"{opts.metric} on {opts.tune_split}: {_metric(best_run, opts.metric):.4f}; "
        f"on {opts.test_split}: {_metric(test_best, opts.metric):.4f} "
        + "(" + ", ".join(f"{b['label']} {_metric(b, opts.metric):.4f}" for b in test_bases) + ").",
        "Runs: tune batch " + train["batch_id"] + ", test batch " + test["batch_id"] + ".",
    ]
    profile = best.load()
    out_profile.parent.mkdir(parents=True, exist_ok=True)
    out_profile.write_text(profile_toml(profile, header), encoding="utf-8")
    # The file must load back as a valid profile with the same constants.
    reloaded = load_profile(str(out_profile.resolve()))
    if {k: v for k, v in reloaded.flat().items() if k != "name"} != \
            {k: v for k, v in profile.flat().items() if k != "name"}:
        raise ValidationError(f"{out_profile}: the written profile does not round-trip")
    return {
        "profile_path": str(out_profile), "winner": best.label, "metric": opts.metric,
        "points": len(specs), "tune_split": opts.tune_split, "test_split": opts.test_split,
        "train": {"best": _metric(best_run, opts.metric),
                  "top": [{"label": r["label"], opts.metric: _metric(r, opts.metric)} for r in ranked[:10]],
                  "batch_id": train["batch_id"], "qps": train["replay"]["qps"]},
        "test": {"tuned": test_best["metrics"],
                 "baselines": {b["label"]: b["metrics"] for b in test_bases},
                 "batch_id": test["batch_id"],
                 # the tuned profile's test figure against the published ones (eval/anchors.toml)
                 "anchors": against(test_best["metrics"].get(opts.metric), test["dataset"],
                                    opts.test_split, opts.metric, test["queries"])},
    }
