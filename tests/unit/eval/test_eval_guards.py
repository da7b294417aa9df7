"""What tune, compare and report refuse, and the figures that must not depend on their company:
the held-out split checked by question id, bootstrap CIs per run, compare only over the same
questions, the report's metric and its default baseline, per-category abstention precision."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.errors import DatasetError, ValidationError
from memo_eval.analysis import bootstrap_ci
from memo_eval.compare import compare_runs, pair_runs
from memo_eval.datasets import load_eval_set
from memo_eval.grid import expand
from memo_eval.metrics import MEASURES, aggregate
from memo_eval.report import build_report
from memo_eval.run import EvalOptions, run_eval
from memo_eval.traces import resolve_runs
from memo_eval.tune import TuneOptions, held_out_split, tune

runner = CliRunner()


def _chats(folder: Path, conversations: int = 6) -> Path:
    """A LoCoMo-format file of ``conversations`` small conversations: ``train`` holds the first
    five, ``dev`` the rest, ``test`` (= ``all``) every one."""
    samples = []
    for i in range(conversations):
        samples.append({"sample_id": f"c{i}", "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": f"I adopted a dog named Rex{i}"},
                          {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice, I started pottery classes"}],
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The dog learned to sit"}]},
            "qa": [{"question": "What is the dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
                   {"question": "Which classes did Bob start?", "answer": "pottery", "evidence": ["D1:2"],
                    "category": 1}]})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "chats.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


# --- 1. tune: the report split must hold none of the questions tuned on -----------------------

@pytest.mark.parametrize("test_split", ["test", "all"])
def test_tune_refuses_a_report_split_holding_the_tuned_questions(tmp_path, test_split):
    chats = _chats(tmp_path / "chats")
    with pytest.raises(ValidationError, match=f"report on '{test_split}'.* holds 10 of the 10 questions") as err:
        tune(TuneOptions(dataset=str(chats), profiles=("rrf",), sets=("cutoff.gap=0.5,1.0",), mode="keyword",
                         tune_split="train", test_split=test_split, workers=1, out=tmp_path / "runs",
                         out_profile=tmp_path / "t.toml"))
    assert "--test-split dev" in err.value.hint
    assert not (tmp_path / "runs").exists()           # refused before any replay


def test_tune_reports_a_locomo_format_set_on_the_other_half(tmp_path):
    chats = _chats(tmp_path / "chats")
    assert held_out_split(load_eval_set(str(chats), "train")) == "dev"
    assert held_out_split(load_eval_set(str(chats), "dev")) == "train"
    res = tune(TuneOptions(dataset=str(chats), profiles=("rrf",), sets=("cutoff.gap=0.5,1.0",), mode="keyword",
                           tune_split="train", workers=1, out=tmp_path / "runs", out_profile=tmp_path / "t.toml"))
    assert res["test_split"] == "dev"
    assert "split train (10 queries)" in (tmp_path / "t.toml").read_text()


def test_tune_refuses_an_empty_report_split(tmp_path):
    one = _chats(tmp_path / "one", conversations=1)       # like sample-chat: nothing is held out
    with pytest.raises(ValidationError, match="split 'dev' of chats has no questions"):
        tune(TuneOptions(dataset=str(one), profiles=("rrf",), sets=("cutoff.gap=0.5,1.0",), mode="keyword",
                         workers=1, out=tmp_path / "runs", out_profile=tmp_path / "t.toml"))


# --- 2. bootstrap CIs depend on the run's own values only -----------------------------------

def test_bootstrap_ci_of_a_run_does_not_depend_on_the_other_runs():
    vals = [0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.7, 0.2]
    frame = pl.DataFrame({"run_id": [f"r{i}" for i in range(4) for _ in vals], "ndcg_10": vals * 4})
    together = bootstrap_ci(frame, "ndcg_10")
    assert together.select("ci_low", "ci_high").unique().height == 1
    alone = bootstrap_ci(frame.filter(pl.col("run_id") == "r3"), "ndcg_10")
    assert alone.row(0) == together.filter(pl.col("run_id") == "r3").row(0)


# --- 3. compare: the same questions, two different runs, ids from the files ------------------

@pytest.fixture
def grid(tiny):
    """Three keyword runs of the tiny set (grid order = res["runs"] order) and their folders."""
    res = run_eval(EvalOptions(dataset=str(tiny), split="test", semantic=False, workers=1,
                               specs=expand(["rrf"], ["cutoff.gap=0.05,0.5,1.0"], mode="keyword")))
    return res, [resolve_runs([r["run_id"]])[0] for r in res["runs"]]


def test_compare_refuses_runs_of_different_data_sets(grid, tmp_path, tiny):
    other = tmp_path / "other"
    shutil.copytree(tiny, other)
    queries = other / "queries.jsonl"
    queries.write_text(queries.read_text().replace("how do we rotate api keys", "who waters the cactus"))
    res = run_eval(EvalOptions(dataset=str(other), split="test", semantic=False, workers=1,
                               specs=expand(["rrf"], [], mode="keyword")))
    theirs = resolve_runs([res["runs"][0]["run_id"]])[0]
    with pytest.raises(DatasetError, match="A ran tiny/test .* B ran other/test .*not the same questions"):
        compare_runs(grid[1][0], theirs)


def test_compare_a_run_with_itself_says_so(grid):
    run = grid[1][0]
    with pytest.raises(ValidationError, match="compared with itself"):
        pair_runs([run], [run])
    with pytest.raises(ValidationError, match="same run"):
        compare_runs(run, run)
    out = runner.invoke(app, ["eval", "compare", str(run), str(run)])
    assert out.exit_code == 2 and "compared with itself" in out.output


def test_compare_a_run_folder_copied_elsewhere(grid, tmp_path):
    a, b = grid[1][0], grid[1][2]
    copy = tmp_path / "elsewhere" / "my-run"
    shutil.copytree(a, copy)
    res = compare_runs(copy, b, metric="recall_100")
    assert res["a"]["run_id"] == a.name and res["paired_queries"] == 4
    assert pair_runs([copy], [b]) == [(copy, b)]


# --- 4. report --metric --------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["bogus", "abstain_recall"])
def test_report_refuses_a_metric_it_cannot_plot(grid, tmp_path, metric):
    with pytest.raises(ValidationError, match="no per-query values") as err:
        build_report(grid[1], tmp_path / "rep", metric=metric)
    assert "ndcg_10, recall_10, recall_100, rr_10" in err.value.hint
    out = runner.invoke(app, ["eval", "report", grid[1][0].name, "--metric", metric, "-o", str(tmp_path / "r")])
    assert out.exit_code == 2 and "no per-query values" in out.output


# --- 5. the report's default baseline: the first run as replayed ----------------------------

def _baseline_label(md: str) -> str:
    line = next(x for x in md.splitlines() if x.startswith("## Per query against the baseline"))
    return line.split("(", 1)[1].rsplit(")", 1)[0]


def test_report_baseline_is_the_first_run_replayed(grid, tmp_path):
    res, folders = grid
    ids = [r["run_id"] for r in res["runs"]]
    assert sorted(ids)[0] != ids[0]           # else this test could not tell grid order from id order
    # The replay writes runs.parquet in grid order; set the times apart so no clock tick ties them.
    for i, folder in enumerate(folders):
        os.utime(folder / "runs.parquet", ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    rep = build_report(sorted(folders), tmp_path / "rep", metric="recall_100")
    assert [s["run_id"] for s in rep["summary"]] == ids
    md = (tmp_path / "rep" / "report.md").read_text()
    assert _baseline_label(md) == res["runs"][0]["label"]


def test_report_baseline_follows_a_recorded_batch_position(grid, tmp_path):
    res, folders = grid
    order = [1, 2, 0]                         # recorded positions, against the write order
    for folder, pos in zip(folders, order, strict=True):
        table = pq.read_table(folder / "runs.parquet")
        column = pa.array([pos], pa.int64())
        at = table.schema.get_field_index("batch_position")
        table = (table.set_column(at, "batch_position", column) if at >= 0
                 else table.append_column("batch_position", column))
        pq.write_table(table, folder / "runs.parquet")
    rep = build_report(folders, tmp_path / "rep", metric="recall_100")
    first = folders[order.index(0)].name
    assert first not in (folders[0].name, min(f.name for f in folders))   # neither written nor id first
    assert rep["summary"][0]["run_id"] == first


# --- 6. per-category abstention precision: the run-level rule --------------------------------

def test_category_abstention_precision_follows_the_run_rule():
    answerable = {"q1": True, "q2": True, "u1": False}
    abstained = {"q2": True}                  # only an answerable query abstained
    metrics = {q: dict.fromkeys(MEASURES, 0.0) for q in ("q1", "q2")}
    agg = aggregate(metrics, answerable, abstained, {"q1": "1", "q2": "1", "u1": "5"})
    assert agg["abstain_precision"] == 0.0
    cat = agg["by_category"]["1"]
    assert cat["abstain_precision"] == 0.0 and cat["abstain_recall"] is None
    five = agg["by_category"]["5"]
    assert five["abstain_precision"] is None and five["abstain_recall"] == 0.0
