"""``memo eval``: run, compare, report, tune, regress, fetch (the evaluation harness).

The commands parse options, call ``eval.*`` and print; progress goes to stderr.  The
``eval`` package needs the ``eval`` extra (duckdb, polars, pyarrow, scipy, matplotlib,
pytrec_eval): it is imported only when an eval command runs, and without the extra the
command says one line, ``pip install "memo[eval]"`` (exit 11, ``ExtraMissing``), instead
of a traceback.  ``memo eval fetch`` needs no extra.  docs/eval.md describes every command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from memo.cli.common import JsonOption, handle_errors, print_json
from memo.errors import ExtraMissing, ValidationError

eval_app = typer.Typer(name="eval", help="Evaluate search quality: replay labelled queries, compare, tune, regress.",
                       no_args_is_help=True)
_err = Console(stderr=True)

DatasetOpt = Annotated[str, typer.Option("--dataset", "-d", help="sample (bundled), scifact, locomo, a BEIR folder, a "
                                                                 "LoCoMo .json or your queries .jsonl (docs/eval.md).")]
ProfileOpt = Annotated[list[str] | None, typer.Option("--profile", "-p", help="Profile name or TOML path (repeat).")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=V1,V2,... grid over a constant (repeat: "
                                                                      "cartesian product).")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-w", help="Worker processes (default: all cores).")]
RunsDirOpt = Annotated[Path | None, typer.Option("--runs-dir", help="Where runs live (default $MEMO_EVAL_RUNS, "
                                                                     "else ./runs).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]

# What the harness imports from the `eval` extra (pyproject.toml [project.optional-dependencies]).
EVAL_EXTRA_MODULES = ("duckdb", "polars", "pyarrow", "scipy", "matplotlib", "pytrec_eval")


def need_eval_extra() -> None:
    """Raise ``ExtraMissing`` (one line, exit 11) unless the eval extra is installed."""
    missing = [m for m in EVAL_EXTRA_MODULES if find_spec(m) is None]
    if missing:
        raise ExtraMissing(f"memo eval needs the eval extra, not installed here (missing: {', '.join(missing)})")


_METRICS = ("ndcg_10", "recall_10", "recall_100", "rr_10", "abstain_precision", "abstain_recall")


@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Callable[[str], None], Callable[[int], Callable[[int], None]]]]:
    """(status, tick_factory) backed by one rich progress bar on stderr."""
    if not enabled:
        yield (lambda s: None), (lambda total: (lambda n: None))
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=_err, transient=True)
    state: dict[str, Any] = {"task": None, "label": "preparing"}

    def status(label: str) -> None:
        state["label"] = label
        if state["task"] is None:
            state["task"] = bar.add_task(label, total=None)
        bar.update(state["task"], description=label)

    def tick_factory(total: int) -> Callable[[int], None]:
        task = bar.add_task(f"searching ({state['label']})", total=total)

        def tick(n: int) -> None:
            bar.update(task, advance=n)
        return tick

    with bar:
        yield status, tick_factory


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _print_runs(res: dict[str, Any]) -> None:
    t = Table(title=f"{res['dataset']} / {res['split']}: {res['queries']} queries", title_justify="left")
    t.add_column("run")
    t.add_column("label")
    for m in _METRICS:
        t.add_column(m, justify="right")
    for r in res["runs"]:
        t.add_row(r["run_id"], r["label"], *[_fmt(r["metrics"].get(m)) for m in _METRICS])
    Console().print(t)
    for r in res["runs"]:
        cats = r.get("by_category")
        if not cats:
            continue
        ct = Table(title=f"{r['label']} by category", title_justify="left")
        for col in ("category", "n", "recall_10", "ndcg_10", "abstain_precision", "abstain_recall"):
            ct.add_column(col, justify="right")
        for cat, e in cats.items():
            ct.add_row(cat, str(e.get("n")), *[_fmt(e.get(k)) for k in
                                               ("recall_10", "ndcg_10", "abstain_precision", "abstain_recall")])
        Console().print(ct)
    rp = res["replay"]
    typer.echo(f"replay: {rp['searches']} searches in {rp['seconds']} s = {rp['qps']} queries/s "
               f"on {rp['workers']} worker(s); traces in {res['out_dir']}")
    notes = res.get("notes", {}).get("evidence")
    if notes:
        from eval.datasets.locomo import describe_fixes
        typer.echo(f"evidence ids repaired/dropped: {describe_fixes(res['notes'])}")


@handle_errors
def run(dataset: DatasetOpt, split: Annotated[str, typer.Option("--split", help="Split to replay.")] = "test",
        profile: ProfileOpt = None, set_: SetOpt = None,
        mode: Annotated[str, typer.Option("--mode", help="auto | keyword | exact | semantic.")] = "auto",
        db: Annotated[Path | None, typer.Option("--db", help="Your memo database (for your own queries .jsonl); "
                                                             "data sets with a corpus use a cached index.")] = None,
        model: Annotated[str | None, typer.Option("--model", help="Embedding model id (default: registry's).")] = None,
        limit_queries: Annotated[int | None, typer.Option("--limit-queries", help="Only the first N queries.")] = None,
        workers: WorkersOpt = None, out: RunsDirOpt = None,
        rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild the cached index.")] = False,
        quiet: QuietOpt = False, as_json: JsonOption = False) -> None:
    """Replay a labelled query set across profiles and a grid of constants; write Parquet traces."""
    need_eval_extra()
    from eval.grid import expand
    from eval.run import EvalOptions, run_eval

    specs = expand(profile or ["rrf"], set_ or [], mode=mode)
    opts = EvalOptions(dataset=dataset, split=split, specs=specs, db=db, model_id=model,
                       semantic=mode in ("auto", "semantic"), limit_queries=limit_queries, workers=workers,
                       out=out, rebuild=rebuild)
    with _progress(not quiet) as (status, ticks):
        res = run_eval(opts, status=status, tick_factory=ticks)
    if as_json:
        print_json(res)
    else:
        _print_runs(res)


@handle_errors
def compare(run_a: Annotated[str, typer.Argument(help="Baseline run (id, prefix or folder).")],
            run_b: Annotated[str, typer.Argument(help="Candidate run.")],
            metric: Annotated[str, typer.Option("--metric", help="Metric for the movers list.")] = "ndcg_10",
            movers: Annotated[int, typer.Option("--movers", help="How many biggest movers to list.")] = 10,
            runs_dir: RunsDirOpt = None, as_json: JsonOption = False) -> None:
    """Paired comparison of two runs: t-test, Wilcoxon, wins/losses/ties, biggest movers."""
    need_eval_extra()
    from eval.compare import compare_runs
    from eval.traces import resolve_runs

    a = resolve_runs([run_a], runs_dir)
    b = resolve_runs([run_b], runs_dir)
    if len(a) != 1 or len(b) != 1:
        raise ValidationError("compare takes exactly two runs (not batches)")
    res = compare_runs(a[0], b[0], metric=metric, movers=movers)
    if as_json:
        print_json(res)
        return
    t = Table(title=f"B = {res['b']['label']}  vs  A = {res['a']['label']}  ({res['paired_queries']} paired queries)",
              title_justify="left")
    for col in ("metric", "A", "B", "B-A", "wins", "losses", "ties", "t-test p", "Wilcoxon p", "sig."):
        t.add_column(col, justify="right")
    for m, r in res["metrics"].items():
        t.add_row(m, _fmt(r["mean_a"]), _fmt(r["mean_b"]), _fmt(r["delta"]), str(r["wins"]), str(r["losses"]),
                  str(r["ties"]), _fmt(r["t_p"]), _fmt(r["wilcoxon_p"]), "yes" if r["significant"] else "no")
    Console().print(t)
    if not res["same_query_set"]:
        typer.echo("note: the runs used different query sets or qrels; compared on the shared queries")
    mt = Table(title=f"biggest movers ({metric})", title_justify="left")
    for col in ("qid", "A", "B", "delta", "1st rel A", "1st rel B", "query"):
        mt.add_column(col)
    for mv in res["movers"]:
        mt.add_row(mv["qid"], _fmt(mv["a"]), _fmt(mv["b"]), _fmt(mv["delta"]), _fmt(mv["first_relevant_a"]),
                   _fmt(mv["first_relevant_b"]), mv["query"][:70])
    Console().print(mt)


@handle_errors
def report(runs: Annotated[list[str], typer.Argument(help="Runs or batches (ids, prefixes or folders).")],
           out: Annotated[Path | None, typer.Option("--out", "-o", help="Report folder (default "
                                                                      "<runs dir>/report-<first run>).")] = None,
           runs_dir: RunsDirOpt = None, as_json: JsonOption = False) -> None:
    """Markdown report + PNG figures (metric vs constants, per-arm contribution, latency)."""
    need_eval_extra()
    from eval.report import build_report
    from eval.traces import resolve_runs, runs_root

    folders = resolve_runs(runs, runs_dir)
    target = out or runs_root(runs_dir) / f"report-{folders[0].name}"
    res = build_report(folders, target)
    if as_json:
        print_json(res)
    else:
        typer.echo(f"report: {res['report']} ({len(res['figures'])} figures, {res['runs']} runs)")


@handle_errors
def tune(dataset: DatasetOpt = "scifact", profile: ProfileOpt = None, set_: SetOpt = None,
         metric: Annotated[str, typer.Option("--metric", help="Metric to maximise on the tuning split.")] = "ndcg_10",
         mode: Annotated[str, typer.Option("--mode", help="auto | keyword | exact | semantic.")] = "auto",
         samples: Annotated[int | None, typer.Option("--samples", help="Random search: this many points.")] = None,
         seed: Annotated[int, typer.Option("--seed", help="Seed of the random search.")] = 13,
         tune_split: Annotated[str, typer.Option("--tune-split", help="Split to tune on.")] = "train",
         test_split: Annotated[str, typer.Option("--test-split", help="Split to report the winner on.")] = "test",
         out_profile: Annotated[Path | None, typer.Option("--out-profile", help="Profile TOML to write "
                                                                               "(default tuned-<dataset>.toml in the user profile folder, docs/profiles.md).")] = None,
         limit_queries: Annotated[int | None, typer.Option("--limit-queries", help="Only the first N queries.")] = None,
         workers: WorkersOpt = None, out: RunsDirOpt = None, quiet: QuietOpt = False,
         as_json: JsonOption = False) -> None:
    """Search constants on the train split, evaluate the winner on test, write a tuned profile."""
    need_eval_extra()
    from eval.tune import TuneOptions
    from eval.tune import tune as run_tune

    opts = TuneOptions(dataset=dataset, profiles=tuple(profile or ("rrf", "minmax")), sets=tuple(set_ or ()),
                       mode=mode, metric=metric, tune_split=tune_split, test_split=test_split, samples=samples, seed=seed,
                       out_profile=out_profile, workers=workers, limit_queries=limit_queries, out=out)
    with _progress(not quiet) as (status, ticks):
        res = run_tune(opts, status=status, tick_factory=ticks)
    if as_json:
        print_json(res)
        return
    typer.echo(f"winner: {res['winner']} ({metric} {res['train']['best']:.4f} on {tune_split})")
    typer.echo(f"{test_split}: tuned {_fmt(res['test']['tuned'].get(metric))}; "
               + "; ".join(f"{k} {_fmt(v.get(metric))}" for k, v in res["test"]["baselines"].items()))
    for a in res["test"].get("anchors", []):
        delta = "" if a["delta"] is None else f" ({a['delta']:+.4f})"
        typer.echo(f"  vs {a['name']}: {a['anchor']:.3f}{delta}")
    typer.echo(f"profile written: {res['profile_path']}")


@handle_errors
def regress(fast: Annotated[bool, typer.Option("--fast", help="Only the fast checks (keyword-only SciFact).")] = False,
            expected: Annotated[list[Path] | None, typer.Option("--expected", help="Expected-figures TOML "
                                                                                   "(default eval/expected/*.toml).")] = None,
            check: Annotated[list[str] | None, typer.Option("--check", help="Only this check (repeat).")] = None,
            workers: WorkersOpt = None, out: RunsDirOpt = None, quiet: QuietOpt = False,
            as_json: JsonOption = False) -> None:
    """Replay the committed checks; exit 1 when a metric falls below expected - tolerance."""
    need_eval_extra()
    from eval.regress import regress as run_regress

    with _progress(not quiet) as (status, ticks):
        res = run_regress(fast=fast, files=expected, only=check or (), workers=workers, out=out,
                          status=status, tick_factory=ticks)
    if as_json:
        print_json(res)
    else:
        t = Table(title=f"regression ({res['mode']})", title_justify="left")
        for col in ("check", "metric", "expected", "tolerance", "measured", "status"):
            t.add_column(col)
        for c in res["checks"]:
            t.add_row(c["check"], c["metric"], _fmt(c["expected"]), _fmt(c["tolerance"]), _fmt(c["measured"]),
                      c["status"])
        Console().print(t)
        for b in res["batches"]:
            typer.echo(f"{b['dataset']}/{b['split']}: {b['qps']} queries/s")
    if not res["passed"]:
        _err.print(f"regression: {res['failures']} metric(s) below tolerance")
        raise typer.Exit(1)


@handle_errors
def fetch(name: Annotated[str, typer.Argument(help="Data set name (scifact, locomo, or your own).")],
          url: Annotated[str | None, typer.Option("--url", help="Where to download from (http(s):// or file://).")] = None,
          sha256: Annotated[str | None, typer.Option("--sha256", help="Expected sha256 of the download.")] = None,
          dest: Annotated[Path | None, typer.Option("--dest", help="Folder to create (default: the eval cache).")] = None,
          no_verify: Annotated[bool, typer.Option("--no-verify", help="Keep it even if nothing could be "
                                                                      "verified.")] = False,
          as_json: JsonOption = False) -> None:
    """Download a public data set (sha256-checked) so `memo eval run --dataset NAME` finds it."""
    from eval.datasets import fetched_dir
    from eval.datasets.fetch import fetch as do_fetch

    res = do_fetch(name, url=url, sha256=sha256, dest=dest or fetched_dir() / name, verify=not no_verify)
    if as_json:
        print_json(res)
    else:
        typer.echo(f"{name}: {res.bytes} bytes from {res.url}\n  sha256 {res.sha256}\n  into {res.dest} "
                   f"({len(res.files)} files; verified: {', '.join(res.verified) or 'nothing'})")


def register(app: typer.Typer) -> None:
    eval_app.command("run")(run)
    eval_app.command("compare")(compare)
    eval_app.command("report")(report)
    eval_app.command("tune")(tune)
    eval_app.command("regress")(regress)
    eval_app.command("fetch")(fetch)
    app.add_typer(eval_app, name="eval")
