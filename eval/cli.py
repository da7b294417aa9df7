"""``memo eval``: run, compare, report, tune, regress, fetch, cache (the evaluation harness).

``app`` is the ``eval`` group of memo's command line: this distribution (memo-kb-eval)
declares it under the entry-point group ``memo.cli_plugins`` and ``memo`` mounts it when
``memo eval ...`` runs (memo/cli/plugins.py); memo itself never imports the harness.  The
commands parse options (memo's CLI plumbing: ``--json``, error mapping), call
``memo_eval.*`` and print; progress goes to stderr.  The harness's modules are imported
when a command runs, not when memo builds its command line.  Should the harness's own
dependencies be missing (duckdb, polars, pyarrow, scipy, matplotlib, pytrec_eval: installed
without its dependencies), the command says one line, ``pip install "memo-kb[eval]"``
(exit 11, ``ExtraMissing``), instead of a traceback.  ``memo eval fetch`` needs none of
them.  docs/eval.md describes every command.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
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

from memo.cli.common import handle_errors, print_json, typer_annotation
from memo.cli.options import JSON
from memo.errors import ExtraMissing, MemoError
from memo.progress import PLAIN_PROGRESS_EVERY
from memo.types import default_profile

# Mounted under `memo` (memo/cli/plugins.py): no completion options of its own, as memo's root.
app = typer.Typer(name="eval", help="Evaluate search quality: replay labelled queries, compare, tune, regress.",
                  no_args_is_help=True, add_completion=False)
_err = Console(stderr=True)

DatasetOpt = Annotated[str, typer.Option("--dataset", "-d", help="sample (bundled), scifact, locomo, a BEIR folder, a "
                                                                 "LoCoMo .json or your queries .jsonl (docs/eval.md).")]
ProfileOpt = Annotated[list[str] | None, typer.Option("--profile", "-p", help="Profile name or TOML path (repeat; "
                                                                            "run: default the search default, $MEMO_PROFILE or zscore).")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=V1,V2,... grid over a constant (repeat: "
                                                                      "cartesian product).")]
EvalDbOpt = Annotated[str | None, typer.Option(
    "--db", help="Your memo database, for your own queries .jsonl (default: $MEMO_DB, else memo's default "
                 "database, as `memo search` finds it); data sets with a corpus use a cached index.  A "
                 "PostgreSQL URL (postgresql://...): your database there, or for a data set with a corpus "
                 "its index built in that database (once) and replayed against the server.")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-w", min=1, help="Worker processes (default: all "
                                                                             "cores).")]
LimitOpt = Annotated[int | None, typer.Option("--limit-queries", min=1, help="Only the first N queries.")]
RunsDirOpt = Annotated[Path | None, typer.Option("--runs-dir", help="Where runs live (default $MEMO_EVAL_RUNS, "
                                                                     "else a checkout's runs/, else the user "
                                                                     "cache dir's memo-eval/runs).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
# memo's --json, but its help names where the eval documents are described: docs/cli-json.md
# only sends readers on to docs/eval.md.
JsonOption = typer_annotation(replace(JSON, help="Print one JSON document (schema in docs/eval.md, section "
                                                 "`memo eval run`)."))

# What the harness imports from its dependencies (eval/pyproject.toml, memo's `eval` extra).
EVAL_EXTRA_MODULES = ("duckdb", "polars", "pyarrow", "scipy", "matplotlib", "pytrec_eval")


class ReplayInterrupted(MemoError):
    """Ctrl-C during a replay: one line saying what was kept (``memo_eval.run.Interrupted``)."""

    exit_code = 130         # 128 + SIGINT, as a shell reports a command Ctrl-C stopped


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C -> one line (what was kept) and exit 130, not typer's bare blank line."""
    try:
        yield
    except KeyboardInterrupt as exc:
        # memo_eval.run.Interrupted says what it kept; a Ctrl-C outside a replay kept nothing new
        raise ReplayInterrupted(str(exc) or "interrupted; runs written before were complete and are kept",
                           hint="run the command again to replay the rest") from None


def need_eval_extra() -> None:
    """Raise ``ExtraMissing`` (one line, exit 11) unless the eval extra is installed."""
    missing = [m for m in EVAL_EXTRA_MODULES if find_spec(m) is None]
    if missing:
        raise ExtraMissing(f"memo eval needs the eval extra, not installed here (missing: {', '.join(missing)})")




@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Callable[[str], None], Callable[..., Callable[[int], None]]]]:
    """(status, tick_factory) backed by one rich progress bar on stderr; on a stderr that is
    not a terminal (a log, a pipe, CI) plain lines instead (``_plain_progress``)."""
    if not enabled:
        yield (lambda s: None), (lambda total, unit="searches": (lambda n: None))
        return
    if not _err.is_terminal:
        with _plain_progress() as pair:
            yield pair
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=_err, transient=True)
    state: dict[str, Any] = {"task": None, "label": "preparing"}

    def status(label: str) -> None:
        state["label"] = label
        if state["task"] is None:
            state["task"] = bar.add_task(label, total=None)
        bar.update(state["task"], description=label)

    def tick_factory(total: int, unit: str = "searches") -> Callable[[int], None]:
        doing = "searching" if unit == "searches" else unit
        task = bar.add_task(f"{doing} ({state['label']})", total=total)

        def tick(n: int) -> None:
            bar.update(task, advance=n)
        return tick

    with bar:
        yield status, tick_factory


@contextmanager
def _plain_progress(every: float | None = None
                    ) -> Iterator[tuple[Callable[[str], None], Callable[..., Callable[[int], None]]]]:
    """Progress as plain stderr lines (a rich bar draws nothing there): one when each stage
    starts, one every ``every`` seconds (``PLAIN_PROGRESS_EVERY``) while nothing else was
    said (a first index build or embedding runs for minutes without a status), one at the end.
    A count also gets a line with its last count when it completes or its stage ends: a
    stage shorter than ``every`` showed only its ``0/N`` line, as if nothing was done."""
    import threading
    import time

    every = PLAIN_PROGRESS_EVERY if every is None else every
    start = time.monotonic()
    lock = threading.Lock()
    state: dict[str, Any] = {"label": "preparing", "done": 0, "total": None, "unit": "searches", "last": start,
                             "said": 0}

    def say(text: str) -> None:            # with the lock held
        now = time.monotonic()
        state["last"] = now
        typer.echo(f"memo eval: {text} ({now - start:.0f} s)", err=True)

    def where() -> str:
        total = state["total"]
        return state["label"] if total is None else f"{state['label']}: {state['done']:,}/{total:,} {state['unit']}"

    def say_count() -> None:               # with the lock held: the count, unless already said
        if state["total"] is not None and state["done"] != state["said"]:
            state["said"] = state["done"]
            say(where())

    def status(label: str) -> None:
        with lock:
            if label != state["label"] or state["total"] is not None:
                say_count()
                state.update(label=label, done=0, total=None)
                say(f"{label}...")

    def tick_factory(total: int, unit: str = "searches") -> Callable[[int], None]:
        with lock:
            say_count()
            state.update(done=0, total=total, unit=unit, said=0)
            say(where())

        def tick(n: int) -> None:
            with lock:
                state["done"] += n
                if state["total"] is not None and state["done"] >= state["total"]:
                    say_count()
        return tick

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(min(every, 1.0)):
            with lock:
                if time.monotonic() - state["last"] >= every:
                    say(f"{where()}, still working")

    thread = threading.Thread(target=beat, name="memo-eval-progress", daemon=True)
    with lock:
        say("started")
    thread.start()
    try:
        yield status, tick_factory
    finally:
        stop.set()
        thread.join()
    with lock:
        say_count()
        say("done")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if isinstance(v, float) else str(v)


_SHORT = {"ndcg_10": "nDCG@10", "recall_10": "R@10", "recall_100": "R@100", "rr_10": "MRR@10",
          "abstain_precision": "abstP", "abstain_recall": "abstR"}
_RANKING = ("ndcg_10", "recall_10", "recall_100", "rr_10")


def _metric_line(metrics: dict[str, Any]) -> str:
    """The ranking metrics on one line, the abstention in words on the next (80 columns)."""
    return "  " + " ".join(f"{_SHORT[m]} {_fmt(metrics.get(m))}" for m in _RANKING) + "\n" + \
        _abstention_line(metrics)


def abstention_words(metrics: dict[str, Any]) -> str:
    """What abstention precision and recall say about a run, in words: they cannot be
    measured without unanswerable queries, precision has no value without an abstention.
    (``--json`` keeps ``abstain_precision`` / ``abstain_recall`` as they are.)"""
    n = metrics.get("n_queries")
    un = metrics.get("n_unanswerable")
    ab = metrics.get("n_abstained")
    if n is None or un is None or ab is None:      # an older run: the figures only
        return (f"abstention: precision {_fmt(metrics.get('abstain_precision'))}, "
                f"recall {_fmt(metrics.get('abstain_recall'))}")
    answerable = n - un
    if un == 0:
        return f"abstention: no unanswerable queries in this set; abstained on {ab:,} of {answerable:,} queries"
    recall = metrics.get("abstain_recall") or 0.0
    caught = round(recall * un)
    wrong = ab - caught
    if ab == 0:
        return f"abstention: abstained on none (recall 0 of {un:,} unanswerable, precision n/a)"
    return (f"abstention: abstained on {caught:,} of {un:,} unanswerable (recall {recall:.4f}) and "
            f"{wrong:,} of {answerable:,} answerable (precision {_fmt(metrics.get('abstain_precision'))})")


def _abstention_line(metrics: dict[str, Any], width: int = 80) -> str:
    """``abstention_words`` indented, wrapped to ``width``."""
    import textwrap

    return "\n".join(textwrap.wrap(abstention_words(metrics), width=width, initial_indent="  ",
                                    subsequent_indent="    "))


def _print_runs(res: dict[str, Any]) -> None:
    """80 columns: per run its label, its full id on its own line, then the metrics."""
    typer.echo(f"{res['dataset']} / {res['split']}: {res['queries']} queries")
    if (where := database_line(res.get("index") or {})):
        typer.echo(where)
    for r in res["runs"]:
        typer.echo(f"{r['label']}\n  {r['run_id']}\n{_metric_line(r['metrics'])}")
        cats = r.get("by_category")
        if not cats:
            continue
        typer.echo(f"  {'category':>8} {'n':>5} {'R@10':>7} {'nDCG@10':>7} {'abstP':>7} {'abstR':>7}")
        for cat, e in cats.items():
            typer.echo(f"  {cat:>8} {e.get('n')!s:>5} " + " ".join(
                f"{_fmt(e.get(k)):>7}" for k in ("recall_10", "ndcg_10", "abstain_precision", "abstain_recall")))
        if any(e.get(k) is None for e in cats.values() for k in ("abstain_precision", "abstain_recall")):
            typer.echo("  -: abstR without unanswerable queries, abstP without abstentions")
    ranked_runs_lines(res["runs"], "recall_10" if str(res["dataset"]).startswith("locomo") else "ndcg_10")
    rp = res["replay"]
    typer.echo(f"replay: {rp['searches']} searches in {rp['seconds']} s = {rp['qps']} queries/s "
               f"on {rp['workers']} worker(s); traces in\n  {res['out_dir']}")
    for note in res.get("grid_notes", []):
        typer.echo(f"note: {note}")
    notes = res.get("notes", {}).get("evidence")
    if notes:
        from memo_eval.datasets.locomo import describe_fixes
        typer.echo(f"evidence ids repaired/dropped: {describe_fixes(res['notes'])}")
    unknown = res.get("notes", {}).get("unknown_relevant")
    if unknown:
        typer.echo(unknown_relevant_line(unknown, res["queries"]))
    absent = res.get("notes", {}).get("absent_namespaces")
    if absent:
        typer.echo(textwrap.fill("note: queries search namespaces the database does not hold, so they find "
                                 "nothing: " + ", ".join(f"{ns!r} ({n} queries)" for ns, n in absent.items()),
                                 width=80, subsequent_indent="  "))
    shadowed = res.get("notes", {}).get("shadowed_labels")
    if shadowed:
        some = "; ".join(f"{k!r} (taken by {v!r})" for k, v in list(shadowed.items())[:3])
        more = f"; and {len(shadowed) - 3} more (--json: notes.shadowed_labels)" if len(shadowed) > 3 else ""
        typer.echo(textwrap.fill(f"note: {len(shadowed)} label(s) name passages another label names first, so they "
                                 f"can never be found: {some}{more}; name each record one way", width=80,
                                 subsequent_indent="  "))


RANKED_SHOWN = 10     # a grid's best runs listed again at its end


def ranked_runs_lines(runs: list[dict[str, Any]], metric: str = "ndcg_10") -> None:
    """After a grid of more than three runs, its best ``RANKED_SHOWN`` by ``metric`` on one
    line each (a 24-point grid printed ~240 lines and no winner: a user probe)."""
    scored = [r for r in runs if r["metrics"].get(metric) is not None]
    if len(scored) <= 3:
        return
    scored.sort(key=lambda r: -r["metrics"][metric])
    typer.echo(f"best {min(RANKED_SHOWN, len(scored))} of {len(runs)} runs by {metric}:")
    for r in scored[:RANKED_SHOWN]:
        line = f"  {r['metrics'][metric]:.4f}  {r['label']}"
        typer.echo(line if len(line) <= 80 else line[:79] + "…")


def database_line(index: dict[str, Any]) -> str | None:
    """Which of your databases a set of your own labels searched (``--db``, ``$MEMO_DB`` or
    memo's default): said, since a run over the wrong one scores 0 for no visible reason."""
    if index.get("source") != "user database":
        return None
    return textwrap.fill(f"database: {index['path']} ({index.get('state')})", width=80, subsequent_indent="  ")


def unknown_relevant_line(unknown: dict[str, list[str]], n_queries: int, shown: int = 3) -> str:
    """The run's note on labels no passage of the database maps to (``notes.unknown_relevant``),
    wrapped to 80 columns: how many queries, the first few with their ids."""
    some = "; ".join(f"{q}: {', '.join(ids)}" for q, ids in list(unknown.items())[:shown])
    more = f"; and {len(unknown) - shown} more (--json: notes.unknown_relevant)" if len(unknown) > shown else ""
    text = (f"note: {len(unknown)} of {n_queries} queries label ids that are in no passage of the database "
            f"(their recall cannot reach 1; a typo, or a record not imported): {some}{more}")
    return "\n".join(textwrap.wrap(text, width=80, subsequent_indent="  "))


@handle_errors
def run(dataset: DatasetOpt, split: Annotated[str, typer.Option("--split", help="Split to replay.")] = "test",
        profile: ProfileOpt = None, set_: SetOpt = None,
        mode: Annotated[str, typer.Option("--mode", help="auto | keyword | exact | semantic.")] = "auto",
        db: EvalDbOpt = None,
        model: Annotated[str | None, typer.Option("--model", help="Embedding model id (default: registry's).")] = None,
        limit_queries: LimitOpt = None,
        workers: WorkersOpt = None, out: RunsDirOpt = None,
        rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild the cached index.")] = False,
        quiet: QuietOpt = False, as_json: JsonOption = False) -> None:
    """Replay a labelled query set across profiles and a grid of constants; write Parquet traces."""
    need_eval_extra()
    from memo_eval.grid import expand
    from memo_eval.run import EvalOptions, run_eval

    notes: list[str] = []
    # No -p: the profile searches use (memo.types.default_profile), so a run measures what users get.
    specs = expand(profile or [default_profile()], set_ or [], mode=mode, notes=notes)
    opts = EvalOptions(dataset=dataset, split=split, specs=specs, db=db, model_id=model,
                       semantic=mode in ("auto", "semantic"), limit_queries=limit_queries, workers=workers,
                       out=out, rebuild=rebuild)
    with _interruptible(), _progress(not quiet) as (status, ticks):
        res = run_eval(opts, status=status, tick_factory=ticks)
    res["grid_notes"] = notes
    if as_json:
        print_json(res)
    else:
        _print_runs(res)


@handle_errors
def compare(run_a: Annotated[str, typer.Argument(help="Baseline run, or a batch (id, prefix or folder).")],
            run_b: Annotated[str | None, typer.Argument(help="Candidate run or batch (each of its runs is "
                                                              "compared with the baseline).")] = None,
            baseline: Annotated[str | None, typer.Option("--baseline", "-b", help="With one batch: the label "
                                                                                  "(or run id) of its baseline "
                                                                                  "run.")] = None,
            metric: Annotated[str, typer.Option("--metric", help="Metric for the movers list.")] = "ndcg_10",
            movers: Annotated[int, typer.Option("--movers", help="How many biggest movers to list.")] = 10,
            runs_dir: RunsDirOpt = None, as_json: JsonOption = False) -> None:
    """Paired comparison: t-test, Wilcoxon, wins/losses/ties, biggest movers.  A and B may be
    runs or batches (a run vs every run of a batch; two batches paired by label; one batch
    with --baseline LABEL: that run vs the others)."""
    need_eval_extra()
    from memo_eval.compare import compare_runs, pair_runs
    from memo_eval.traces import resolve_runs

    a = resolve_runs([run_a], runs_dir)
    b = resolve_runs([run_b], runs_dir) if run_b else []
    pairs = pair_runs(a, b, baseline)
    results = [compare_runs(x, y, metric=metric, movers=movers) for x, y in pairs]
    if as_json:
        print_json(results[0] if len(results) == 1 and run_b and len(a) == len(b) == 1
                   else {"baseline": results[0]["a"]["run_id"] if results else None, "comparisons": results})
        return
    for i, res in enumerate(results):
        if i:
            typer.echo("")
        _print_comparison(res, metric)


def _print_comparison(res: dict[str, Any], metric: str) -> None:
    """80 columns: labels, full run ids on their own lines, one line per metric."""
    typer.echo(f"A (baseline): {res['a']['label']}\n  {res['a']['run_id']}")
    typer.echo(f"B: {res['b']['label']}\n  {res['b']['run_id']}")
    typer.echo(f"{res['paired_queries']} paired queries")
    typer.echo(f"{'metric':<11}{'A':>7}{'B':>8}{'B-A':>9} {'wins/loss/tie':>13}{'t p':>9}{'Wilc. p':>9}  sig")
    for m, r in res["metrics"].items():
        wlt = f"{r['wins']}/{r['losses']}/{r['ties']}"
        delta = "-" if r["delta"] is None else f"{r['delta']:+.4f}"
        typer.echo(f"{m:<11}{_fmt(r['mean_a']):>7}{_fmt(r['mean_b']):>8}{delta:>9} {wlt:>13}"
                   f"{_p(r['t_p']):>9}{_p(r['wilcoxon_p']):>9}  {'yes' if r['significant'] else 'no'}")
    if not res["same_query_set"]:
        typer.echo("note: the runs used different query sets or qrels; compared on the shared queries")
    if res.get("same_database") is False:
        typer.echo(textwrap.fill(f"note: A searched {res['a_db']}, B {res['b_db']}: not the same knowledge base "
                                 "(another database, or one changed between the runs)", width=80,
                                 subsequent_indent="  "))
    if res["movers"]:
        typer.echo(f"biggest movers ({metric}): qid, A, B, delta, 1st relevant rank A -> B, query")
        for mv in res["movers"]:
            head = (f"  {str(mv['qid'])[:14]:<14} {_fmt(mv['a'])} {_fmt(mv['b'])} {mv['delta']:+.4f} "
                    f"{_fmt(mv['first_relevant_a']):>3}->{_fmt(mv['first_relevant_b']):<3} ")
            typer.echo(head + mv["query"][:max(0, 80 - len(head))])


def _p(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


@handle_errors
def list_(runs_dir: RunsDirOpt = None,
          dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Only this data set (and its "
                                                                                 "runs).")] = None,
          limit: Annotated[int | None, typer.Option("--limit", "-n", help="Only the newest N batches.")] = None,
          as_json: JsonOption = False) -> None:
    """The data sets available (bundled, repository, fetched: splits and query counts), then the runs
    and batches under the runs dir: id, data set, split, profile, overrides, key metrics, date."""
    need_eval_extra()
    from memo_eval.listing import format_list, list_runs

    doc = list_runs(runs_dir, dataset=dataset, limit=limit)
    if as_json:
        print_json(doc)
    else:
        typer.echo("\n".join(format_list(doc)))


@handle_errors
def report(runs: Annotated[list[str], typer.Argument(help="Runs or batches (ids, prefixes or folders).")],
           out: Annotated[Path | None, typer.Option("--out", "-o", help="Report folder (default "
                                                                      "<runs dir>/report-<the runs or batches "
                                                                      "asked for>).")] = None,
           baseline: Annotated[str | None, typer.Option("--baseline", "-b", help="Run (label or id) the per-query "
                                                                                 "deltas are taken against "
                                                                                 "(default: the first).")] = None,
           metric: Annotated[str | None, typer.Option("--metric", help="Metric of the bars, deltas "
                                                                       "(default nDCG@10; recall@10 for LoCoMo).")] = None,
           runs_dir: RunsDirOpt = None, as_json: JsonOption = False) -> None:
    """Markdown report + PNG figures: metric bars with bootstrap CIs, per-query deltas against a
    baseline, recall@k, adaptive fusion's keyword weight against the gain, per category, metric vs constants,
    per-arm contribution, latency."""
    need_eval_extra()
    from memo_eval.report import build_report
    from memo_eval.traces import report_name, resolve_named, runs_root

    named = resolve_named(runs, runs_dir)
    folders = list(dict.fromkeys(p for _, group in named for p in group))
    # Named after what was asked for (a run, a batch, several), not after the first run found.
    target = out or runs_root(runs_dir) / report_name([name for name, _ in named])
    res = build_report(folders, target, baseline=baseline, metric=metric)
    if as_json:
        print_json(res)
    else:
        typer.echo(f"report ({len(res['figures'])} figures, {res['runs']} runs):\n  {res['report']}")


@handle_errors
def tune(dataset: DatasetOpt = "scifact",
         profile: Annotated[list[str] | None, typer.Option(
             "--profile", "-p", help="Profile to tune (repeat; default rrf and minmax, the seed's).  Each is a "
                                     "candidate as it is, and the default `memo search` uses is replayed beside "
                                     "them as a reference.")] = None,
         set_: SetOpt = None,
         metric: Annotated[str, typer.Option("--metric", help="Metric to maximise on the tuning split.")] = "ndcg_10",
         mode: Annotated[str, typer.Option("--mode", help="auto | keyword | exact | semantic.")] = "auto",
         samples: Annotated[int | None, typer.Option("--samples", help="Random search: this many points.")] = None,
         seed: Annotated[int, typer.Option("--seed", help="Seed of the random / Optuna search.")] = 13,
         method: Annotated[str, typer.Option("--method", help="auto (grid up to 200 points, else Optuna TPE) | "
                                                             "grid | random | optuna.")] = "auto",
         trials: Annotated[int, typer.Option("--trials", help="Optuna: points to replay.")] = 48,
         tune_split: Annotated[str, typer.Option("--tune-split", help="Split to tune on.")] = "train",
         test_split: Annotated[str | None, typer.Option("--test-split", help="Split to report the winner on (default: the data set's held-out split: test; dev for LoCoMo-format sets).")] = None,
         out_profile: Annotated[Path | None, typer.Option("--out-profile", help="Profile TOML to write "
                                                                               "(default tuned-<dataset>.toml in the user profile folder, docs/profiles.md).")] = None,
         limit_queries: LimitOpt = None, db: EvalDbOpt = None,
         workers: WorkersOpt = None, out: RunsDirOpt = None, quiet: QuietOpt = False,
         as_json: JsonOption = False) -> None:
    """Search constants on the train split, evaluate the winner on test, write a tuned profile."""
    need_eval_extra()
    from memo_eval.tune import TuneOptions
    from memo_eval.tune import tune as run_tune

    opts = TuneOptions(dataset=dataset, profiles=tuple(profile or ("rrf", "minmax")), sets=tuple(set_ or ()),
                       mode=mode, metric=metric, tune_split=tune_split, test_split=test_split, samples=samples, seed=seed,
                       method=method, trials=trials,
                       out_profile=out_profile, workers=workers, limit_queries=limit_queries, out=out, db=db)
    with _interruptible(), _progress(not quiet) as (status, ticks):
        res = run_tune(opts, status=status, tick_factory=ticks)
    if as_json:
        print_json(res)
        return
    if (where := database_line(res.get("index") or {})):
        typer.echo(where)
    if res.get("notes", {}).get("unknown_relevant"):
        typer.echo(unknown_relevant_line(res["notes"]["unknown_relevant"], res["train"]["queries"]))
    sr = res.get("search", {})
    typer.echo(f"search: {sr.get('method')}, {res['points']} points replayed of {sr.get('grid_points')} in the grid"
               f" in {sr.get('seconds')} s ({sr.get('trials_per_s')} trials/s)")
    typer.echo(f"winner ({metric} {res['train']['best']:.4f} on {tune_split}):")
    typer.echo(textwrap.fill(res["winner"], width=80, initial_indent="  ", subsequent_indent="    ",
                             break_on_hyphens=False))
    split = res["test_split"]
    typer.echo(f"  {metric:<48}{tune_split:>10}{split:>10}")
    typer.echo(f"  {'tuned':<48}{res['train']['best']:>10.4f}{_fmt(res['test']['tuned'].get(metric)):>10}")
    for ref in res["untuned"]:
        name = ("untuned " + ref["label"]) + (" (memo search's default)" if ref["default"] else "")
        typer.echo(f"  {name[:48]:<48}{ref[tune_split]:>10.4f}{ref[split]:>10.4f}")
    for a in res["test"].get("anchors", []):
        delta = "" if a["delta"] is None else f" ({a['delta']:+.4f})"
        typer.echo(f"  vs {a['name']}: {a['anchor']:.3f}{delta}")
    for w in res["warnings"]:
        typer.echo(textwrap.fill(f"note: {w}", width=80, subsequent_indent="  "), err=True)
    typer.echo(f"profile written:\n  {res['profile_path']}")


@handle_errors
def regress(fast: Annotated[bool, typer.Option("--fast", help="Only the fast checks (the bundled sample, hybrid, "
                                                             "every arm of the default profile).")] = False,
            expected: Annotated[list[Path] | None, typer.Option("--expected", help="Expected-figures TOML "
                                                                                   "(default eval/expected/*.toml).")] = None,
            check: Annotated[list[str] | None, typer.Option("--check", help="Only this check (repeat).")] = None,
            nightly: Annotated[bool, typer.Option("--nightly", help="The nightly gate: every suite domain under "
                                                                    "the default profile "
                                                                    "(eval/expected/nightly.toml).")] = False,
            update_rankings: Annotated[bool, typer.Option("--update-rankings", help="Rewrite the checks' pinned "
                                                                                    "reference rankings from this "
                                                                                    "run (after a deliberate "
                                                                                    "change).")] = False,
            db: EvalDbOpt = None,
            workers: WorkersOpt = None, out: RunsDirOpt = None, quiet: QuietOpt = False,
            as_json: JsonOption = False) -> None:
    """Replay the committed checks; exit 1 when a metric falls below expected - tolerance."""
    need_eval_extra()
    from memo_eval.regress import regress as run_regress

    with _interruptible(), _progress(not quiet) as (status, ticks):
        res = run_regress(fast=fast, files=expected, only=check or (), workers=workers, out=out,
                          status=status, tick_factory=ticks, update_rankings=update_rankings, nightly=nightly,
                          db=db)
    if as_json:
        print_json(res)
    else:
        typer.echo(f"regression ({res['mode']})")
        current = None
        for c in res["checks"]:
            if c["check"] != current:
                current = c["check"]
                typer.echo(f"{current}\n  {c['run_id']}")
                typer.echo(f"  {'metric':<28}{'expected':>9}{'tol':>7}{'measured':>10}  status")
            typer.echo(f"  {c['metric']:<28}{_fmt(c['expected']):>9}{c['tolerance']:>7.4f}"
                       f"{_fmt(c['measured']):>10}  {c['status']}")
        for b in res["batches"]:
            typer.echo(f"split {b['split']}: {b['qps']} queries/s; data set\n  {b['dataset']}")
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
    from memo_eval.datasets import fetched_dir
    from memo_eval.datasets.fetch import fetch as do_fetch

    res = do_fetch(name, url=url, sha256=sha256, dest=dest or fetched_dir() / name, verify=not no_verify)
    if as_json:
        print_json(res)
    else:
        typer.echo(f"{name}: {res.bytes} bytes from {res.url}\n  sha256 {res.sha256}\n  into {res.dest} "
                   f"({len(res.files)} files; verified: {', '.join(res.verified) or 'nothing'})")


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


@handle_errors
def cache(prune: Annotated[bool, typer.Option("--prune", help="Delete the stale and orphan entries (indexes "
                                                              "built by other code, dead builds' temp files) and "
                                                              "the staging folders of dead batches.")] = False,
          runs_dir: RunsDirOpt = None,
          verbose: Annotated[bool, typer.Option("--verbose", "-v", help="One line per entry.")] = False,
          as_json: JsonOption = False) -> None:
    """What the harness's cache holds (indexes, vectors, data sets) and the batch folders left
    in the runs dir's .incomplete/; --prune frees what this code will never read again."""
    from memo_eval import staging as S
    from memo_eval.cache import cache_root, default_runs_dir
    from memo_eval.cache_files import prune as do_prune
    from memo_eval.cache_files import scan, summary

    root = cache_root()
    entries = scan(root)
    gone = {e.name for e in do_prune(root, entries)} if prune else set()
    runs = runs_dir.expanduser() if runs_dir else default_runs_dir()   # traces.runs_root, without pyarrow
    batches = S.scan(runs)
    removed = {b.batch_id for b in S.prune(runs, batches)} if prune else set()
    staged = {s: {"batches": sum(b.status == s for b in batches), "bytes": sum(b.bytes for b in batches if b.status == s)}
              for s in S.STATUSES}
    doc = {"root": str(root), "summary": summary(entries), "pruned": prune,
           "freed_bytes": sum(e.bytes for e in entries if e.name in gone),
           "entries": [{"kind": e.kind, "name": e.name, "status": e.status, "bytes": e.bytes,
                        "deleted": e.name in gone} for e in entries],
           # <runs dir>/.incomplete: batches being written (live), dead (abandoned: pruned)
           "staging": {"dir": str(runs / S.STAGING), "summary": staged,
                       "removed_batches": len(removed),
                       "removed_bytes": sum(b.bytes for b in batches if b.batch_id in removed),
                       "batches": [{"batch_id": b.batch_id, "status": b.status, "bytes": b.bytes,
                                    "owner": b.owner, "deleted": b.batch_id in removed} for b in batches]}}
    if as_json:
        print_json(doc)
        return
    if verbose:
        for e in entries:
            typer.echo(f"{e.status:9s} {_mb(e.bytes):>12s}  {e.name}{'  (deleted)' if e.name in gone else ''}")
        for b in batches:
            typer.echo(f"{b.status:9s} {_mb(b.bytes):>12s}  {S.STAGING}/{b.batch_id}"
                       f"{'  (deleted)' if b.batch_id in removed else ''}")
            if b.owner:
                typer.echo(f"{'':24s}lock: {b.owner}")
    parts = [f"{s} {v['entries']} ({_mb(v['bytes'])})" for s, v in doc["summary"].items() if v["entries"]]
    typer.echo(f"{root}: {', '.join(parts) or 'empty'}")
    if batches:
        parts = [f"{s} {v['batches']} ({_mb(v['bytes'])})" for s, v in staged.items() if v["batches"]]
        typer.echo(f"{runs / S.STAGING}: batch folders {', '.join(parts)}")
    if prune:
        typer.echo(f"pruned {len(gone)} entries, freed {_mb(doc['freed_bytes'])}")
        typer.echo(f"removed {len(removed)} abandoned batch folders, freed {_mb(doc['staging']['removed_bytes'])}")
    elif any(e.status in ("stale", "orphan") for e in entries) or staged["abandoned"]["batches"]:
        typer.echo("memo eval cache --prune deletes the stale, orphan and abandoned ones")


@handle_errors
def suite(split: Annotated[str, typer.Option("--split", help="report: each domain's held-out split (the table "
                                                             "of docs/eval.md); choose: the split choices are "
                                                             "made on.")] = "report",
          domain: Annotated[list[str] | None, typer.Option("--domain", "-d", help="Only this domain (repeat).")] = None,
          profile: Annotated[str | None, typer.Option("--profile", "-p", help="The profile whose extras are "
                                                                              "ablated (default: the default "
                                                                              "profile).")] = None,
          also: Annotated[list[str] | None, typer.Option("--also", help="Another profile (name or path) as a row "
                                                                        "of its own, e.g. the default before a "
                                                                        "change (repeat).")] = None,
          write_docs: Annotated[bool, typer.Option("--write-docs", help="Write the table into docs/eval.md.")] = False,
          pin_nightly: Annotated[bool, typer.Option("--pin-nightly", help="Pin the default's figures as the "
                                                                          "nightly gate (eval/expected/"
                                                                          "nightly.toml).")] = False,
          workers: WorkersOpt = None, out: RunsDirOpt = None, quiet: QuietOpt = False,
          as_json: JsonOption = False) -> None:
    """Replay every domain with the seed's profiles, the default, its arms alone and each extra off: one table."""
    need_eval_extra()
    from memo_eval import suite as S

    with _interruptible(), _progress(not quiet) as (status, ticks):
        res = S.run_suite(split=split, only=domain or (), profile=profile, also=also or (), workers=workers, out=out,
                          status=status, tick_factory=ticks)
    res["verdicts"] = S.verdicts(res)
    res["fusion_checks"] = S.fusion_checks(res)
    table = S.render(res)
    if write_docs:
        res["written"] = str(S.write_docs(table))
    if pin_nightly:
        res["nightly"] = str(S.nightly_checks(res))
    if as_json:
        print_json(res)
    else:
        typer.echo(table)
        if write_docs:
            typer.echo(f"table written to {res['written']}")


app.command("run")(run)
app.command("suite")(suite)
app.command("compare")(compare)
app.command("list")(list_)
app.command("report")(report)
app.command("tune")(tune)
app.command("regress")(regress)
app.command("fetch")(fetch)
app.command("cache")(cache)
