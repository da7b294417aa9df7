"""The harness's rough edges a new user met (issue 32): the report's constant plots, the
report folder's name, abstention in words, data sets in `memo eval list`, where caches and
runs go, progress on a non-terminal.  Tiny synthetic set, keyword mode: no model."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memo_eval
from memo.cli import app
from memo_eval import cache as C
from memo_eval.grid import RunSpec, expand
from memo_eval.report import build_report
from memo_eval.run import EvalOptions, run_eval
from memo_eval.traces import duck, resolve_runs, runs_root

runner = CliRunner()


def _runs(tiny, specs):
    res = run_eval(EvalOptions(dataset=str(tiny), split="test", semantic=False, workers=1, specs=specs))
    return res, [resolve_runs([r["run_id"]])[0] for r in res["runs"]]


def _figures(res) -> set[str]:
    return {p.rsplit("/", 1)[-1] for p in res["figures"]}


# 1. The report plots a constant only when runs differ in it alone, and only if it can matter.

def test_profiles_compared_give_no_constant_plot(tiny, tmp_path):
    """rrf against zscore differ in a dozen constants at once: no metric-vs-constant plot
    (it plotted nDCG against every one of them, one point per profile)."""
    from memo_eval.report import constant_axes

    _, runs = _runs(tiny, expand(["rrf", "zscore"], [], mode="keyword"))
    plotted, left_out = constant_axes(duck(runs))
    assert plotted == [] and left_out, left_out
    res = build_report(runs, tmp_path / "rep")
    assert not [n for n in _figures(res) if "_vs_" in n]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "No plot: no numeric constant alone tells runs apart that are otherwise the same" in md


def test_grid_axis_is_plotted_and_an_idle_arm_constant_is_not(tiny, tmp_path):
    """A grid over cutoff.gap is plotted; weights.fact, varied too, is not: the fact arm
    found nothing (the set has no facts).  A profile run beside the grid adds no plot."""
    from memo_eval.report import constant_axes

    specs = [RunSpec("rrf", (("cutoff.gap", g), ("weights.fact", w)), mode="keyword")
             for g in (0.05, 1.0) for w in (0.2, 0.6)] + [RunSpec("zscore", (), mode="keyword")]
    _, runs = _runs(tiny, specs)
    con = duck(runs)
    plotted, left_out = constant_axes(con)
    assert plotted == ["cutoff.gap"]
    assert left_out["weights.fact"] == "the fact arm found nothing in these runs"
    res = build_report(runs, tmp_path / "rep")
    vs = sorted(n for n in _figures(res) if "_vs_" in n)
    assert vs == [f"{m}_vs_cutoff_gap.png" for m in ("ndcg_10", "recall_100", "recall_10", "rr_10")]
    assert "`weights.fact` not plotted: the fact arm found nothing in these runs." in \
        (tmp_path / "rep" / "report.md").read_text()


# 2. The report folder is named after what was asked for.

def test_report_folder_is_named_after_the_batch_asked(tiny, tmp_path):
    res, _ = _runs(tiny, expand(["rrf", "zscore"], [], mode="keyword"))
    batch = res["batch_id"]
    out = runner.invoke(app, ["eval", "report", batch, "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert Path(doc["report"]).parent == runs_root() / f"report-{batch}"
    # one run asked for: that run's name, not the batch's first run
    second = res["runs"][1]["run_id"]
    one = json.loads(runner.invoke(app, ["eval", "report", second, "--json"]).stdout)
    assert Path(one["report"]).parent.name == f"report-{second}"
    # several: all of them, in the order asked
    first = res["runs"][0]["run_id"]
    two = json.loads(runner.invoke(app, ["eval", "report", second, first, "--json"]).stdout)
    assert Path(two["report"]).parent.name == f"report-{second}+{first}"


# 3. Abstention in words when it cannot be measured; --json keeps the metric names.

def test_abstention_said_in_words(tiny):
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "abstP" not in res.stdout and "abstR" not in res.stdout
    assert "  abstention: no unanswerable queries in this set; abstained on 0 of 4 queries\n" in res.stdout
    assert all(len(line) <= 80 for line in res.stdout.splitlines())
    doc = json.loads(runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet",
                                         "--json"]).stdout)
    m = doc["runs"][0]["metrics"]
    assert {"abstain_precision", "abstain_recall", "n_unanswerable", "n_abstained"} <= set(m)


def test_abstention_words_cases():
    from memo_eval.cli import abstention_words

    base = {"n_queries": 20, "n_unanswerable": 0, "n_abstained": 2, "abstain_precision": 0.0,
            "abstain_recall": None}
    assert abstention_words(base) == "abstention: no unanswerable queries in this set; abstained on 2 of 20 queries"
    some = {"n_queries": 48, "n_unanswerable": 8, "n_abstained": 4, "abstain_precision": 0.5, "abstain_recall": 0.25}
    assert abstention_words(some) == ("abstention: abstained on 2 of 8 unanswerable (recall 0.2500) and 2 of 40 "
                                      "answerable (precision 0.5000)")
    none = {"n_queries": 48, "n_unanswerable": 8, "n_abstained": 0, "abstain_precision": None,
            "abstain_recall": 0.0}
    assert abstention_words(none) == "abstention: abstained on none (recall 0 of 8 unanswerable, precision n/a)"


# 4. `memo eval list` lists the data sets too.

def test_list_shows_the_data_sets(tiny):
    doc = json.loads(runner.invoke(app, ["eval", "list", "--json"]).stdout)
    sets = {d["name"]: d for d in doc["datasets"]}
    assert sets["sample"]["source"] == "bundled" and sets["sample"]["splits"] == {"test": 20}
    assert {"sample-chat", "sample-docs"} <= set(sets)
    assert sets["sample-docs"]["format"] == "files"
    if (Path(memo_eval.__file__).parents[1] / "datasets" / "scifact").is_dir():     # a checkout
        assert sets["scifact"]["source"] == "repository"
        assert sets["scifact"]["splits"] == {"test": 300, "train": 809}
        assert sets["locomo"]["variants"] == ["locomo-obs"]
        assert sets["chats"]["format"] == "locomo" and sets["chats"]["splits"]["dev"] > 0
    human = runner.invoke(app, ["eval", "list"])
    assert human.exit_code == 0 and re.search(r"^  sample +bundled +beir +test 20$", human.stdout, re.M)
    assert all(len(line) <= 80 for line in human.stdout.splitlines())


def test_list_counts_a_fetched_set(tiny, tmp_path):
    """A set in the fetch folder is listed with its splits (BEIR: queries per qrels file)."""
    from memo_eval.datasets import fetched_dir
    from memo_eval.synthetic import write_beir

    write_beir(fetched_dir() / "mine")
    doc = json.loads(runner.invoke(app, ["eval", "list", "-d", "mine", "--json"]).stdout)
    assert [(d["name"], d["source"], d["format"], d["splits"]) for d in doc["datasets"]] == \
        [("mine", "fetched", "beir", {"test": 4, "train": 5})]


def test_a_folder_holding_one_conversation_json_loads_by_name():
    """datasets/chats holds chats.json: `-d chats` loads it (it said "not a BEIR folder")."""
    from memo_eval.datasets import DATASETS_DIR, load_eval_set

    if not (DATASETS_DIR / "chats" / "chats.json").is_file():
        pytest.skip("not a checkout")
    es = load_eval_set("chats", "dev")
    assert es.name == "chats" and len(es.queries) > 0


# 5. Caches and runs never land in the current directory.

def test_outside_a_checkout_caches_and_runs_go_to_the_user_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMO_CACHE")
    monkeypatch.delenv("MEMO_EVAL_RUNS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(C, "checkout_root", lambda: None)        # an installed harness
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert C.cache_root() == tmp_path / "xdg" / "memo-eval"
    assert runs_root() == tmp_path / "xdg" / "memo-eval" / "runs"
    from memo_eval.datasets import fetched_dir
    assert fetched_dir() == tmp_path / "xdg" / "memo-eval" / "datasets"


def test_in_a_checkout_the_checkouts_folders_wherever_the_command_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMO_CACHE")
    monkeypatch.delenv("MEMO_EVAL_RUNS")
    monkeypatch.chdir(tmp_path)
    root = C.checkout_root()
    if root is None:
        pytest.skip("the harness is installed, not a checkout")
    assert root == Path(memo_eval.__file__).resolve().parents[1]
    assert C.cache_root() == root / ".cache" / "memo-eval"      # scripts/test.sh, CI's cache
    assert runs_root() == root / "runs"
    assert not str(C.cache_root()).startswith(str(tmp_path))


def test_env_vars_still_win(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("MEMO_EVAL_RUNS", str(tmp_path / "r"))
    assert C.cache_root() == tmp_path / "c" / "eval" and runs_root() == tmp_path / "r"
    assert runs_root(tmp_path / "x") == tmp_path / "x"


def test_a_run_leaves_the_working_directory_alone(tiny, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMO_CACHE")
    monkeypatch.delenv("MEMO_EVAL_RUNS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(C, "checkout_root", lambda: None)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert list(work.iterdir()) == []
    assert Path(doc["out_dir"]) == tmp_path / "xdg" / "memo-eval" / "runs"
    assert Path(doc["index"]["path"]).is_relative_to(tmp_path / "xdg" / "memo-eval")


# 6. Progress on a non-terminal: plain lines at start, every PLAIN_PROGRESS_EVERY s, at the end.

def test_plain_progress_lines_when_stderr_is_not_a_terminal(tiny, monkeypatch):
    import memo_eval.run as R
    from memo_eval import cli as eval_cli

    monkeypatch.setattr(eval_cli, "PLAIN_PROGRESS_EVERY", 0.2)
    orig = R.prepare

    def slow_prepare(opts, es, status, tick_factory=None):
        status("index")
        time.sleep(1.3)          # a long first build: lines keep coming
        return orig(opts, es, status, tick_factory)

    monkeypatch.setattr(R, "prepare", slow_prepare)
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--json"])
    assert res.exit_code == 0, res.output
    json.loads(res.stdout)                        # stdout stays one JSON document
    lines = res.stderr.splitlines()
    assert lines[0].startswith("memo eval: started")
    assert "memo eval: index... (0 s)" in lines
    assert sum("index, still working" in ln for ln in lines) >= 2
    assert any(re.match(r"memo eval: replay: 0/4 searches \(\d+ s\)", ln) for ln in lines)
    assert lines[-1].startswith("memo eval: done")
