"""``memo eval tune``: search profile constants on the TRAIN split, check the winner on TEST.

1. The search space: profiles x ``--set`` axes, or the default space below (fusion and
   weights, the semantic abstention floor, recency floor and half-life, the cutoff gap and
   the fetch depth).  Small spaces (at most ``MAX_GRID`` points) are replayed whole;
   bigger ones are searched with Optuna's TPE sampler (``--trials``, ``--seed``: the same
   seed and data give the same trials, since a replay is deterministic), asking
   ``BATCH`` points at a time and replaying each batch in one ``memo eval run`` batch.
   ``--samples N`` = that many random grid points instead (seeded).
2. Every point runs on the tuning split (default ``train``) and is ranked by the metric.
   Tuning on a test split is refused (``test``, ``all``, or the evaluation split itself),
   and so is an evaluation split that holds any question of the tuning split (compared by
   query id: a LoCoMo-format set's ``test`` is every question, ``train`` included).
3. The untuned base profiles are candidates too (a grid without their own values could
   never pick them), and they and the default ``memo search`` uses are replayed on both
   splits as references.  Replay the winner and those on the evaluation split (default the
   data set's held-out split, ``held_out_split``: ``test``; LoCoMo-format sets ``dev``).
   The evaluation split is never looked at while choosing; a winner below a reference
   there is reported (``warnings``), not hidden.
4. Write the winner as a profile TOML whose header comments record the provenance:
   data set, splits, metric, date, code version, the search space and both scores.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memo.errors import ExtraMissing, ValidationError
from memo.profile import LIST_KEYS, load_profile, user_profile_dir
from memo.types import default_profile
from memo_eval.anchors import against
from memo_eval.datasets import EvalSet, load_eval_set
from memo_eval.datasets.locomo import HELD_OUT
from memo_eval.grid import RunSpec, expand, parse_set
from memo_eval.run import EvalOptions, code_version, run_eval

MAX_GRID = 200          # more points than this: Optuna TPE (or --samples) instead of the whole grid
BATCH = 8               # Optuna points replayed per batch
TEST_SPLITS = ("test", "all")   # never tuned on ("all" holds the test questions)

# Only weight *ratios* matter to the three fusions (cutoff is relative, abstention reads raw
# cosines), so the keyword weight stays at 0.5 and the others move around it.  The exact
# arm is in the space because its router fires on many scientific claims (numbers,
# hyphenated names) and its votes are noise there.  fetch_depth matters to minmax through
# each arm's minimum (the bottom of its list), which sets the normalisation, and to both
# through which candidates exist at all.  semantic_floor: the abstention floor of the
# default model (-1 = never abstain).  Recency: floor 1.0 = off; half-life in days (doc and
# code never age, so on SciFact these have no effect).  cutoff.gap 1.0 = never cut.
_COMMON = ["weights.exact=0,0.15,0.3", "retrieve.fetch_depth=50,100,200", "SEMANTIC_FLOOR=-1.0,0.3,0.35,0.39,0.45",
           "recency.floor=0.6,0.8,0.9,1.0", "recency.half_life_days=30,90,365", "cutoff.gap=0.3,0.5,0.7,1.0"]
DEFAULT_SPACE: dict[str, list[str]] = {
    "rrf": ["fusion.k=10,20,40,60,100", "weights.semantic=0.35,0.5,0.7,1.0", *_COMMON],
    "minmax": ["weights.semantic=0.3,0.4,0.5,0.6,0.7,0.85,1.0", *_COMMON],
    "zscore": ["weights.semantic=0.3,0.4,0.5,0.6,0.7,0.85,1.0", *_COMMON],
}


def default_space(profile: str, model_id: str | None = None) -> list[str]:
    """The default ``--set`` axes of a profile (the semantic floor keyed by the model)."""
    from memo.embed.registry import load_registry

    mid = load_registry().get(model_id).id
    return [a.replace("SEMANTIC_FLOOR", f"models.{mid}.semantic_floor") for a in DEFAULT_SPACE.get(profile, [])]


@dataclass(frozen=True)
class TuneOptions:
    dataset: str = "scifact"
    profiles: Sequence[str] = ("rrf", "minmax")
    sets: Sequence[str] = ()               # empty: DEFAULT_SPACE per profile
    mode: str = "auto"                     # search mode of every point (keyword: no model needed)
    metric: str = "ndcg_10"
    tune_split: str = "train"
    test_split: str | None = None          # None: held_out_split() of the data set
    samples: int | None = None             # random search: this many points
    seed: int = 13
    method: str = "auto"                   # auto | grid | random | optuna
    trials: int = 48                       # optuna: points to replay
    out_profile: Path | None = None
    name: str | None = None                # profile name in the header (default: file stem)
    workers: int | None = None
    limit_queries: int | None = None
    out: Path | None = None                # runs dir
    db: str | Path | None = None           # your memo database (a set of your own labels): memo_eval.run.user_database


def held_out_split(tuning: EvalSet) -> str:
    """The split the winner is reported on unless ``--test-split`` says: ``test``, but for a
    LoCoMo-format set (whose ``test`` is every question) the other half of its conversations."""
    if tuning.corpus_format == "locomo":
        return HELD_OUT.get(tuning.split, "dev")
    return "test"


def check_splits(opts: TuneOptions) -> str:
    """The evaluation split (``opts.test_split``, else ``held_out_split``), once it is known
    to hold none of the questions tuned on.  Compared by query id: split names say nothing
    about the questions (a LoCoMo-format set's ``test`` holds its ``train``)."""
    if opts.tune_split in TEST_SPLITS or opts.tune_split == opts.test_split:
        raise ValidationError(f"refusing to tune on split {opts.tune_split!r}: it holds the test questions",
                              hint="tune on train (--tune-split train, LoCoMo: train or dev) and report on test")
    tuning = load_eval_set(opts.dataset, opts.tune_split)
    test_split = opts.test_split or held_out_split(tuning)
    held = load_eval_set(opts.dataset, test_split)
    if not tuning.queries or not held.queries:
        empty = opts.tune_split if not tuning.queries else test_split
        raise ValidationError(f"split {empty!r} of {tuning.name} has no questions",
                              hint="`memo eval list` shows each split's questions; pick --tune-split and "
                                   "--test-split among those")
    shared = {q.qid for q in tuning.queries} & {q.qid for q in held.queries}
    if shared:
        other = held_out_split(tuning)
        raise ValidationError(
            f"refusing to tune on {opts.tune_split!r} and report on {test_split!r}: {test_split!r} holds "
            f"{len(shared)} of the {len(tuning.queries)} questions tuned on",
            hint=f"report on a held-out split: --test-split {other}" if other != test_split
            else "give a --test-split that shares no question with --tune-split")
    return test_split


def axes(opts: TuneOptions) -> dict[str, list[tuple[str, list[Any]]]]:
    """profile -> its axes [(key, values)]."""
    out = {}
    for prof in opts.profiles:
        sets = list(opts.sets) if opts.sets else default_space(prof)
        out[prof] = [parse_set(x) for x in sets]
    return out


def grid_size(space: dict[str, list[tuple[str, list[Any]]]]) -> int:
    total = 0
    for ax in space.values():
        n = 1
        for _, vals in ax:
            n *= len(vals)
        total += n
    return total


def choose_method(opts: TuneOptions, space: dict[str, list[tuple[str, list[Any]]]]) -> str:
    if opts.method != "auto":
        return opts.method
    if opts.samples is not None:
        return "random"
    return "grid" if grid_size(space) <= MAX_GRID else "optuna"


def search_space(opts: TuneOptions) -> list[RunSpec]:
    """Every grid point (``grid``) or ``samples`` random ones (``random``)."""
    specs: list[RunSpec] = []
    for prof in opts.profiles:
        sets = list(opts.sets) if opts.sets else default_space(prof)
        specs.extend(expand([prof], sets, mode=opts.mode))
    if opts.samples is not None and opts.samples < len(specs):
        specs = random.Random(opts.seed).sample(specs, opts.samples)
    if not specs:
        raise ValidationError("empty search space")
    return specs


def _replay(opts: TuneOptions, specs: Sequence[RunSpec], status, tick_factory) -> dict[str, Any]:
    semantic = opts.mode in ("auto", "semantic")
    return run_eval(EvalOptions(dataset=opts.dataset, split=opts.tune_split, specs=list(specs), semantic=semantic,
                                limit_queries=opts.limit_queries, workers=opts.workers, out=opts.out, db=opts.db),
                    status=status, tick_factory=tick_factory)


def optuna_search(opts: TuneOptions, space: dict[str, list[tuple[str, list[Any]]]], status, tick_factory
                  ) -> tuple[list[RunSpec], list[dict[str, Any]], dict[str, Any]]:
    """TPE over the categorical axes, ``opts.trials`` points asked ``BATCH`` at a time;
    each batch replayed as one eval batch.  Returns (specs, their run summaries, info)."""
    try:
        import optuna
    except ImportError:
        raise ExtraMissing('memo eval tune over a large space needs optuna: pip install "memo-kb[eval]"') from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=opts.seed, n_startup_trials=min(16, max(4, opts.trials // 3)))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    profiles = list(space)
    seen: dict[RunSpec, dict[str, Any]] = {}
    order: list[RunSpec] = []
    batch_ids: list[str] = []
    asked = 0
    while asked < opts.trials:
        trials, specs = [], []
        for _ in range(min(BATCH, opts.trials - asked)):
            t = study.ask()
            prof = t.suggest_categorical("profile", profiles)
            overrides = tuple((k, t.suggest_categorical(f"{prof}:{k}", vals)) for k, vals in space[prof])
            spec = RunSpec(profile=prof, overrides=overrides, mode=opts.mode)
            spec.load()
            trials.append((t, spec))
            specs.append(spec)
            asked += 1
        new = [sp for sp in dict.fromkeys(specs) if sp not in seen]
        if new:
            status(f"optuna: points {asked - len(specs) + 1}-{asked} of {opts.trials}")
            res = _replay(opts, new, status, tick_factory)
            batch_ids.append(res["batch_id"])
            for sp, run in zip(new, res["runs"], strict=True):
                seen[sp] = {**run, "_res": res}
                order.append(sp)
        for t, sp in trials:
            study.tell(t, _metric(seen[sp], opts.metric))
    runs = [seen[sp] for sp in order]
    info = {"sampler": "optuna TPE", "seed": opts.seed, "trials": opts.trials, "distinct_points": len(order),
            "batches": batch_ids, "optuna_version": optuna.__version__}
    return order, runs, info


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

    def lit(section: str, key: str, v: Any) -> str:
        if f"{section}.{key}" in LIST_KEYS:
            items = [s for s in str(v).split(",") if s]
            return "[" + ", ".join(f'"{s}"' for s in items) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"# {h}" if h else "#" for h in header] + [""]
    # Every table Profile.flat() has, in its order: a new profile table needs no edit here.
    for section, fields in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {lit(section, k, v)}" for k, v in fields.items()]
        lines.append("")
    for model_id, bands in models.items():
        lines.append(f'[models."{model_id}"]')
        lines += [f"{k} = {lit('models', k, v)}" for k, v in bands.items()]
        lines.append("")
    return "\n".join(lines)


def tune(opts: TuneOptions, *, status: Callable[[str], None] | None = None,
         tick_factory=None) -> dict[str, Any]:
    status = status or (lambda s: None)
    test_split = check_splits(opts)
    space = axes(opts)
    method = choose_method(opts, space)
    search: dict[str, Any] = {"method": method, "grid_points": grid_size(space)}
    t_search = time.perf_counter()
    if method == "optuna":
        specs, train_runs, info = optuna_search(opts, space, status, tick_factory)
        search.update(info)
        train = {**train_runs[0]["_res"], "runs": [{k: v for k, v in r.items() if k != "_res"} for r in train_runs]}
        train["batch_id"] = ",".join(info["batches"])
    else:
        specs = search_space(opts if method != "grid" else replace(opts, samples=None))
        status(f"tuning {len(specs)} points on {opts.dataset}/{opts.tune_split}")
        train = _replay(opts, specs, status, tick_factory)
    # Trials per second: points replayed over the search's wall time (index checks, worker
    # start-up and, for Optuna, the sampler included): what a person tuning waits for.
    search["seconds"] = round(time.perf_counter() - t_search, 2)
    search["trials_per_s"] = round(len(specs) / search["seconds"], 3) if search["seconds"] > 0 else None
    semantic = opts.mode in ("auto", "semantic")
    # The profiles as they are, and the default memo search uses, on the tuning split too:
    # a base is a candidate (a grid that leaves out its own values could never pick it, and
    # a tuned profile below its base on train is no gain), the default the reference.
    bases = [RunSpec(p, mode=opts.mode) for p in dict.fromkeys(opts.profiles)]
    default = RunSpec(default_profile(), mode=opts.mode)
    references = list(dict.fromkeys([*bases, default]))
    status(f"the untuned profiles on {opts.tune_split}")
    untuned = _replay(opts, references, status, tick_factory)
    untuned_by = {r["label"]: r for r in untuned["runs"]}
    candidates = [*train["runs"], *(untuned_by[b.label] for b in bases)]
    ranked = sorted(candidates, key=lambda r: -_metric(r, opts.metric))
    best_run = ranked[0]
    best = next(s for s in [*specs, *bases] if s.label == best_run["label"])
    status(f"best on {opts.tune_split}: {best.label} {opts.metric}={_metric(best_run, opts.metric):.4f}")
    test = run_eval(EvalOptions(dataset=opts.dataset, split=test_split,
                                specs=list(dict.fromkeys([best, *references])), semantic=semantic,
                                limit_queries=opts.limit_queries, workers=opts.workers, out=opts.out, db=opts.db),
                    status=status, tick_factory=tick_factory)
    test_by = {r["label"]: r for r in test["runs"]}
    test_best = test_by[best.label]
    test_bases = [test_by[r.label] for r in references]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    out_profile = opts.out_profile or user_profile_dir() / f"tuned-{train['dataset']}.toml"
    name = opts.name or out_profile.stem
    version = code_version()
    space_txt = list(opts.sets) if opts.sets else [f"{p}: {' '.join(default_space(p))}" for p in opts.profiles]
    header = [
        f'memo search profile "{name}": written by `memo eval tune`; do not edit by hand, re-run it.',
        f"Tuned on: {train['dataset']} split {opts.tune_split} ({train['queries']} queries), "
        f"metric {opts.metric}, {len(specs)} points"
        + {"random": f" (random sample, seed {opts.seed})", "grid": " (full grid)",
           "optuna": f" (Optuna TPE, {opts.trials} trials, seed {opts.seed}, of {search['grid_points']} grid points)"
           }[method] + ".",
        f"Date: {now}; code {version['code_version']}; model {train.get('model_id')}.",
        f"Data set hash ({opts.tune_split}): {train['dataset_hash'][:16]}; "
        f"({test_split}): {test['dataset_hash'][:16]}.",
        f"Search space: profiles {', '.join(opts.profiles)}; " + "; ".join(space_txt) + ".",
        f"Winner: {best.label}.",
        f"{opts.metric} on {opts.tune_split}: {_metric(best_run, opts.metric):.4f}; "
        f"on {test_split}: {_metric(test_best, opts.metric):.4f} "
        + "(" + ", ".join(f"{b['label']} {_metric(b, opts.metric):.4f}" for b in test_bases) + ").",
        "Runs: tune batch " + train["batch_id"] + ", test batch " + test["batch_id"] + ".",
    ]
    reference = [{"label": r.label, "default": r == default,
                  opts.tune_split: _metric(untuned_by[r.label], opts.metric),
                  test_split: _metric(test_by[r.label], opts.metric)} for r in references]
    warnings = [f"on {test_split} the tuned profile scores below {ref['label']}"
                f"{' (memo search default)' if ref['default'] else ''}: {_metric(test_best, opts.metric):.4f} < "
                f"{ref[test_split]:.4f}; its gain on {opts.tune_split} did not hold"
                for ref in reference if ref[test_split] > _metric(test_best, opts.metric) + 1e-12]
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
        "points": len(specs), "tune_split": opts.tune_split, "test_split": test_split, "search": search,
        "train": {"best": _metric(best_run, opts.metric),
                  "top": [{"label": r["label"], opts.metric: _metric(r, opts.metric)} for r in ranked[:10]],
                  "batch_id": train["batch_id"], "qps": train["replay"]["qps"], "queries": train["queries"]},
        "index": train.get("index"),             # the database searched (your own: its path and state)
        "notes": train.get("notes") or {},       # the tuning split's label notes (labels naming nothing...)
        "untuned": reference,       # the base profiles and the default, on both splits
        "warnings": warnings,       # the tuned profile below an untuned one on the evaluation split
        "test": {"tuned": test_best["metrics"],
                 "baselines": {b["label"]: b["metrics"] for b in test_bases},
                 "batch_id": test["batch_id"],
                 # the tuned profile's test figure against the published ones (eval/anchors.toml)
                 "anchors": against(test_best["metrics"].get(opts.metric), test["dataset"],
                                    test_split, opts.metric, test["queries"])},
    }
