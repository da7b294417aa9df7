"""What the harness refuses before any work (a probe's findings): query files with values of
the wrong type or ids reused across splits, labels that name nothing in the index,
expected files that cannot say what they mean, option values out of range, an unusable
runs dir, grid values skipped unvalidated.  Tiny synthetic set, keyword mode: no model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.errors import DatasetError, ProfileError, ValidationError
from memo_eval.datasets.custom import load_custom
from memo_eval.grid import expand, parse_set
from memo_eval.regress import CheckError, load_checks
from memo_eval.run import EvalOptions, run_eval
from memo_eval.synthetic import write_user_queries

runner = CliRunner()
GOOD = {"id": "q1", "query": "rotate keys", "relevant": ["d01"]}


# 1. The query file: every field type-checked, ids unique over every split.

@pytest.mark.parametrize("change,msg", [
    ({"unanswerable": "false"}, "'unanswerable' must be true or false (got the string \"false\")"),
    ({"relevant": {"r1": "high"}}, "'relevant' grade of 'r1' must be an integer such as 1 or 2 (got the string"),
    ({"relevant": {"r1": True}}, "'relevant' grade of 'r1' must be an integer"),
    ({"relevant": {"r1": 1.5}}, "'relevant' grade of 'r1' must be an integer"),
    ({"query": ["rotate", "keys"]}, "'query' must be a non-empty string (got a list)"),
    ({"category": ["x"]}, "'category' must be a non-empty string (got a list)"),
    ({"id": 0}, "'id' must be a non-empty string (got the number 0)"),
    ({"relevant": [None]}, "'relevant' ids must be non-empty strings (got null)"),
    ({"relevant": ["d01", 7]}, "'relevant' ids must be non-empty strings (got the number 7)"),
    ({"relevant": "d01"}, "'relevant' must be a list of ids or an object id -> grade (got the string"),
    ({"namespace": 3}, "'namespace' must be a non-empty string"),
    ({"split": True}, "'split' must be a non-empty string"),
    ({"now": "yesterday"}, "'now' 'yesterday' is not an ISO-8601 date"),
])
def test_query_line_types_are_checked(tmp_path, change, msg):
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({**GOOD, **change}) + "\n")
    with pytest.raises(DatasetError) as err:
        load_custom(p)
    assert str(err.value) == f"{p}:1: {msg}" or str(err.value).startswith(f"{p}:1: {msg}")


def test_query_id_reused_across_splits(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text("\n".join(json.dumps({**GOOD, "id": i, "split": s})
                           for i, s in (("q1", "train"), ("q2", "test"), ("q1", "test"))) + "\n")
    with pytest.raises(DatasetError, match=r"q.jsonl:3: query id 'q1' is already used on line 1 "
                                           r"\(split train there, test here\)"):
        load_custom(p, "test")


def test_good_lines_still_load(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({**GOOD, "relevant": {"d01": 2, "d02": 0}, "unanswerable": False, "category": "howto",
                             "namespace": "ops", "now": "2026-01-31"}) + "\n")
    es = load_custom(p)
    assert es.qrels == {"q1": {"d01": 2}} and es.queries[0].category == "howto"


def test_labels_naming_nothing_are_noted(tiny, tmp_path):
    db = tmp_path / "mine.db"
    imp = runner.invoke(app, ["import", str(tiny / "corpus.jsonl"), "--format", "beir", "--db", str(db),
                              "--no-embed", "--json"])
    assert imp.exit_code == 0, imp.output
    rows = [json.loads(line) for line in write_user_queries(tmp_path / "q.jsonl").read_text().splitlines()]
    rows[0]["relevant"] = ["nope-1"]
    rows[1]["relevant"] = {**rows[1]["relevant"], "ghost": 1}
    queries = tmp_path / "bad.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = run_eval(EvalOptions(dataset=str(queries), db=db, semantic=False, workers=1, write=False,
                               specs=expand(["rrf"], [], mode="keyword")))
    assert res["notes"]["unknown_relevant"] == {"q1": ["nope-1"], "q2": ["ghost"]}
    human = runner.invoke(app, ["eval", "run", "-d", str(queries), "--db", str(db), "--mode", "keyword", "-w", "1",
                                "--quiet"])
    assert human.exit_code == 0, human.output
    assert "note: 2 of 5 queries label ids that are in no passage of the database" in human.stdout
    assert max(len(line) for line in human.stdout.splitlines()) <= 80


# 2. The expected file: validated before any replay, each problem exit 8 naming the check and key.

BASE = """[[check]]
name = "tiny"
dataset = "{tiny}"
mode = "keyword"
fast = true
[check.metrics]
recall_100 = {{ expected = 0.5, tolerance = 0.002 }}
"""


@pytest.mark.parametrize("edit,msg", [
    (lambda t: t + 'ndcg_100 = { expected = 0.5, tolerance = 0.002 }\n', "metric 'ndcg_100' is no metric a run has"),
    (lambda t: t + '"by_arm.rerank.share" = { expected = 0.5, tolerance = 0.002 }\n',
     "metric 'by_arm.rerank.share' is no metric a run has"),
    (lambda t: t.replace('mode = "keyword"', 'mode = "keyword"\nprofil = "minmax"'), "(tiny): unknown key 'profil'"),
    (lambda t: t.replace("fast = true", 'overides = { "fusion.k" = 20 }'), "(tiny): unknown key 'overides'"),
    (lambda t: t.replace("fast = true", 'fast = "false"'), "(tiny): fast must be true or false, got 'false'"),
    (lambda t: t + t, "check #2: name 'tiny' is already used"),
    (lambda t: t.replace("fast = true", 'overrides = { "fusion.k" = 0 }'), "(tiny): overrides: "),
    (lambda t: t.replace("expected = 0.5,", 'expected = "0.5",'), "metrics.recall_100.expected must be a number"),
    (lambda t: t.replace("0.002 }", "0.002, sprad = 0.01 }"), "metrics.recall_100: unknown key 'sprad'"),
    (lambda t: t.replace('mode = "keyword"', 'mode = "hybrid"'), "mode must be one of"),
    (lambda t: t.replace("[[check]]", "[check]"), "write each check as [[check]]"),
])
def test_expected_file_is_validated(tiny, tmp_path, edit, msg):
    exp = tmp_path / "exp.toml"
    exp.write_text(edit(BASE.format(tiny=tiny)))
    with pytest.raises(CheckError) as err:
        load_checks([exp])
    assert msg in str(err.value)


def test_unmeasurable_metric_is_a_config_error_before_any_replay(tiny, tmp_path, monkeypatch):
    """abstain_recall on a set without unanswerable queries: exit 8 before the replay, not
    'measured - FAIL' (exit 1) after it."""
    import memo_eval.regress as R

    def no_replay(*a, **k):
        raise AssertionError("replayed before the checks were validated")
    monkeypatch.setattr(R, "run_eval", no_replay)
    exp = tmp_path / "exp.toml"
    exp.write_text(BASE.format(tiny=tiny) + "abstain_recall = { expected = 0.5, tolerance = 0.002 }\n")
    with pytest.raises(CheckError, match="abstain_recall: .* has no unanswerable queries"):
        R.regress(fast=True, files=[exp], workers=1)
    exp.write_text(BASE.format(tiny=tiny) + '"by_category.howto.recall_10" = { expected = 0.5, tolerance = 0.002 }\n')
    with pytest.raises(CheckError, match="has no category 'howto'"):
        R.regress(fast=True, files=[exp], workers=1)
    res = runner.invoke(app, ["eval", "regress", "--expected", str(exp), "--quiet"])
    assert res.exit_code == 8 and "FAIL" not in res.stdout, res.output


# 3. and 4. Options: ranges declared on the command line, the runs dir checked first.

@pytest.mark.parametrize("args", [["--limit-queries", "-1"], ["--limit-queries", "0"], ["-w", "0"], ["-w", "-3"]])
def test_out_of_range_options(tiny, args):
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet", "--json", *args])
    assert res.exit_code == 2 and "greater than or equal to 1" in json.loads(res.stdout)["message"], res.output


def test_out_of_range_in_the_library(tiny, monkeypatch):
    from memo_eval.replay import default_workers

    monkeypatch.setenv("MEMO_EVAL_WORKERS", "-3")
    with pytest.raises(ValidationError, match="MEMO_EVAL_WORKERS='-3'"):
        default_workers()
    with pytest.raises(ValidationError, match="limit_queries must be 1 or more"):
        run_eval(EvalOptions(dataset=str(tiny), semantic=False, limit_queries=-1))
    with pytest.raises(ValidationError, match="workers must be 1 or more"):
        run_eval(EvalOptions(dataset=str(tiny), semantic=False, workers=0))


def test_runs_dir_checked_before_any_work(tiny, tmp_path, monkeypatch):
    import memo_eval.run as R

    def no_work(*a, **k):
        raise AssertionError("prepared an index before checking the runs dir")
    monkeypatch.setattr(R, "prepare", no_work)
    afile = tmp_path / "afile"
    afile.write_text("")
    for out in (afile, afile / "sub"):
        with pytest.raises(ValidationError, match=f"{afile} is a file, not a folder"):
            run_eval(EvalOptions(dataset=str(tiny), semantic=False, workers=1, out=out))
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet", "--runs-dir", str(afile)])
    assert res.exit_code == 2 and "is a file, not a folder" in res.stderr


# 6. Grid values: every value of every axis validated, integer keys take integer literals.

def test_dropped_axis_values_are_validated():
    notes: list[str] = []
    with pytest.raises(ProfileError, match="--set fusion.k=0 with profile minmax"):
        expand(["minmax"], ["fusion.k=0,-5"], notes=notes)
    with pytest.raises(ProfileError, match="weights.semantic"):
        expand(["rrf"], ["weights.semantic=0.5,-1"], mode="keyword")
    # valid values on an axis that cannot matter are still dropped, with the note
    assert len(expand(["minmax"], ["fusion.k=20,60"], notes=notes)) == 1 and notes


@pytest.mark.parametrize("value", ["1e2", "100.0", "1.5"])
def test_integer_key_refuses_float_literal(value):
    with pytest.raises(ValidationError, match="fusion.k takes integers"):
        parse_set(f"fusion.k=20,{value}")
    assert parse_set("weights.semantic=1e-1") == ("weights.semantic", [0.1])
