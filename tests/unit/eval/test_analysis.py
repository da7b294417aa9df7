"""compare / report / tune / regress on the tiny synthetic set (keyword mode, no model)."""

from __future__ import annotations

import json
import tomllib

import pytest

from memo.profile import load_profile
from memo_eval.compare import compare_runs, paired_tests
from memo_eval.grid import RunSpec, expand
from memo_eval.regress import load_checks, regress
from memo_eval.report import build_report
from memo_eval.run import EvalOptions, run_eval
from memo_eval.traces import resolve_runs
from memo_eval.tune import TuneOptions, profile_toml, tune


def test_paired_tests_by_hand():
    a = [0.1, 0.2, 0.3, 0.4, 0.5]
    b = [0.2, 0.2, 0.5, 0.3, 0.9]
    r = paired_tests(a, b)
    assert (r["wins"], r["losses"], r["ties"]) == (3, 1, 1)
    assert r["delta"] == pytest.approx(0.12)
    from scipy import stats
    assert r["t_p"] == pytest.approx(stats.ttest_rel(b, a).pvalue)
    same = paired_tests(a, a)
    assert same["t_p"] == 1.0 and same["ties"] == 5


@pytest.fixture
def two_runs(tiny):
    res = run_eval(EvalOptions(dataset=str(tiny), split="test", semantic=False, workers=1,
                               specs=expand(["rrf"], ["cutoff.gap=0.05,1.0"], mode="keyword")))
    return [resolve_runs([r["run_id"]])[0] for r in res["runs"]]


def test_compare(two_runs):
    res = compare_runs(two_runs[0], two_runs[1], metric="recall_100")
    assert res["paired_queries"] == 4 and res["same_query_set"]
    m = res["metrics"]["recall_100"]
    assert m["wins"] + m["losses"] + m["ties"] == 4
    # never cutting can only keep more relevant docs than cutting hard
    assert m["mean_b"] >= m["mean_a"] and m["losses"] == 0
    for mv in res["movers"]:
        assert mv["delta"] != 0


def test_report(two_runs, tmp_path):
    res = build_report(two_runs, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Runs" in md and "## Metrics against constants" in md and "## Latency" in md
    names = {p.rsplit("/", 1)[-1] for p in res["figures"]}
    assert {"ndcg_10_vs_cutoff_gap.png", "arm_contribution.png", "latency.png"} <= names
    assert all((tmp_path / "rep" / n).stat().st_size > 1000 for n in names)


def test_profile_toml_round_trip(tmp_path):
    prof = load_profile("rrf").with_overrides({"fusion.k": 17, "weights.semantic": 0.8})
    p = tmp_path / "t.toml"
    p.write_text(profile_toml(prof, ["provenance line"]))
    assert p.read_text().startswith("# provenance line")
    back = load_profile(str(p))
    assert {k: v for k, v in back.flat().items() if k != "name"} == \
        {k: v for k, v in prof.flat().items() if k != "name"}


def test_tune_keyword(tiny, tmp_path):
    out = tmp_path / "profiles" / "tuned-tiny.toml"
    res = tune(TuneOptions(dataset=str(tiny), profiles=("rrf",), sets=("cutoff.gap=0.05,0.5,1.0",),
                           mode="keyword", metric="recall_100", out_profile=out, workers=1))
    assert res["points"] == 3 and res["tune_split"] == "train"
    assert res["search"]["seconds"] > 0 and res["search"]["trials_per_s"] == pytest.approx(
        3 / res["search"]["seconds"], rel=0.01)
    text = out.read_text()
    assert "Tuned on: tiny split train (5 queries)" in text and "Search space" in text
    # the untuned base is a candidate too (its own gap), and the search default a reference
    assert load_profile(str(out)).cutoff.gap in (0.05, 0.5, 1.0, load_profile("rrf").cutoff.gap)
    assert set(res["test"]["baselines"]) == {"rrf[keyword]", "zscore[keyword]"}
    assert [(r["label"], r["default"]) for r in res["untuned"]] == [("rrf[keyword]", False), ("zscore[keyword]", True)]


def test_regress_pass_and_fail(tiny, tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(f"""
[[check]]
name = "tiny-keyword"
dataset = "{tiny}"
profile = "rrf"
mode = "keyword"
fast = true
[check.metrics]
recall_100 = {{ expected = 0.5, tolerance = 0.002 }}
ndcg_10 = {{ expected = 0.1, tolerance = 0.002 }}
""")
    res = regress(fast=True, files=[good], workers=1)
    assert res["passed"] and {c["status"] for c in res["checks"]} == {"improved"}
    # a pinned ranking: recorded, then met, then broken (the reference reordered)
    pinned = tmp_path / "pinned.toml"
    pinned.write_text(good.read_text().replace('fast = true', 'fast = true\nrankings = "tiny.rankings.json"')
                      + '"ranking.agreement" = { expected = 1.0, tolerance = 0.002 }\n')
    res = regress(fast=True, files=[pinned], workers=1, update_rankings=True)
    assert res["passed"] and (tmp_path / "tiny.rankings.json").exists()
    res = regress(fast=True, files=[pinned], workers=1)
    assert res["passed"] and [c["measured"] for c in res["checks"] if c["metric"] == "ranking.agreement"] == [1.0]
    ref = json.loads((tmp_path / "tiny.rankings.json").read_text())
    (tmp_path / "tiny.rankings.json").write_text(json.dumps({q: ids[::-1] for q, ids in ref.items()}))
    res = regress(fast=True, files=[pinned], workers=1)
    assert not res["passed"] and res["failures"] == 1
    assert [c["metric"] for c in res["checks"] if c["status"] == "FAIL"] == ["ranking.agreement"]


@pytest.mark.parametrize(("entry", "why"), [
    ("ndcg_10 = { expected = 0.0, tolerance = 0.0 }", "can never fail"),
    ('"by_category.5.abstain_recall" = { expected = 0.0, tolerance = 0.0 }', "can never fail"),
    ("ndcg_10 = { expected = 0.3, tolerance = 0.5 }", "can never fail"),
    ("ndcg_10 = { expected = 0.7, tolerance = 1.0 }", "whole range"),
    ("ndcg_10 = { expected = 1.5, tolerance = 0.001 }", "outside the metric's range"),
    ("ndcg_10 = { expected = 0.7, tolerance = 0.01 }", "measured spread"),
    ("ndcg_10 = { expected = 0.7, tolerance = 0.01, spread = 0.004 }", "measured spread"),
    ('"ranking.agreement" = { expected = 1.0, tolerance = 0.002 }', "needs rankings"),
])
def test_loader_refuses_checks_that_cannot_fail(tmp_path, entry, why):
    from memo_eval.regress import CheckError
    f = tmp_path / "x.toml"
    f.write_text(f'[[check]]\nname = "x"\ndataset = "sample"\n[check.metrics]\n{entry}\n')
    with pytest.raises(CheckError, match=why):
        load_checks([f])


def test_loader_accepts_a_tolerance_from_measured_spread(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[[check]]\nname = "x"\ndataset = "sample"\n[check.metrics]\n'
                 "ndcg_10 = { expected = 0.7, tolerance = 0.008, spread = 0.004 }\n")
    assert load_checks([f])[0].metrics == {"ndcg_10": (0.7, 0.008)}


def test_committed_expected_files_parse():
    checks = load_checks()
    assert any(c.fast for c in checks) and any(not c.fast for c in checks)
    for c in checks:
        c.spec.load()
        assert c.metrics
    for f in load_checks.__globals__["EXPECTED_DIR"].glob("*.toml"):
        tomllib.loads(f.read_text())
    assert RunSpec("rrf")


def test_anchors_file_has_the_issue_references():
    from memo_eval.anchors import against, anchors_for
    sf = {a.name: a.value for a in anchors_for("scifact", "test", "ndcg_10")}
    assert sf["BM25 flat (Pyserini)"] == 0.679 and sf["bge-small-en-v1.5 alone (MTEB)"] == 0.713
    assert {0.717, 0.731, 0.744} <= set(sf.values())
    assert {a.value for a in anchors_for("locomo", "all", "recall_10")} == {0.593, 0.438, 0.558, 0.634}
    rows = against(0.7, "scifact", "test", "ndcg_10", 300)
    assert rows[0]["anchor"] == 0.645 and rows[0]["delta"] == pytest.approx(0.055)
    assert against(None, "scifact", "test", "ndcg_10", 300)[0]["delta"] is None
    assert against(0.7, "nosuch", "test", "ndcg_10", 300) == []
    assert against(0.7, "scifact", "test", "ndcg_10", 100) == []     # --limit-queries: not comparable


def test_report_compares_runs_with_anchors(two_runs, tmp_path, monkeypatch):
    from memo_eval import report
    from memo_eval.anchors import Anchor
    monkeypatch.setattr(report, "anchors_for", lambda d, s, m=None, n=None: [
        a for a in [Anchor(d, s, "recall_100", "a made-up baseline", 0.25, 4)] if m in (None, a.metric)])
    build_report(two_runs, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Against published anchors" in md and "a made-up baseline (0.250)" in md
    assert md.count("| rrf[keyword](cutoff.gap=") >= 2


def test_tune_refuses_a_test_split(tiny, tmp_path):
    from memo.errors import ValidationError
    for split in ("test", "all"):
        with pytest.raises(ValidationError, match="refusing to tune"):
            tune(TuneOptions(dataset=str(tiny), tune_split=split, test_split="test", mode="keyword",
                             out_profile=tmp_path / "t.toml"))
    with pytest.raises(ValidationError, match="refusing to tune"):
        tune(TuneOptions(dataset=str(tiny), tune_split="dev", test_split="dev", out_profile=tmp_path / "t.toml"))


def test_default_space_covers_the_pipeline_constants():
    from memo_eval.tune import MAX_GRID, axes, choose_method, grid_size
    space = axes(TuneOptions(profiles=("rrf", "minmax")))
    for prof in ("rrf", "minmax"):
        keys = {k for k, _ in space[prof]}
        assert {"models.all-minilm-l6-v2-int8.semantic_floor", "recency.floor", "recency.half_life_days",
                "cutoff.gap", "retrieve.fetch_depth", "weights.semantic", "weights.exact"} <= keys
    assert "fusion.k" in {k for k, _ in space["rrf"]}
    assert grid_size(space) > MAX_GRID and choose_method(TuneOptions(), space) == "optuna"
    assert choose_method(TuneOptions(sets=("cutoff.gap=0.5,1.0",)), axes(TuneOptions(sets=("cutoff.gap=0.5,1.0",)))) \
        == "grid"


def test_optuna_search_is_reproducible_with_a_seed(tiny, tmp_path):
    sets = ("cutoff.gap=0.05,0.2,0.5,1.0", "fusion.k=5,20,60", "weights.exact=0,0.3", "retrieve.fetch_depth=5,50")
    winners, trials = [], []
    for i in range(2):
        res = tune(TuneOptions(dataset=str(tiny), profiles=("rrf",), sets=sets, mode="keyword", method="optuna",
                               trials=10, seed=7, tune_split="train", test_split="test", workers=1,
                               out_profile=tmp_path / f"t{i}.toml", out=tmp_path / "runs"))
        assert res["search"]["method"] == "optuna" and res["search"]["trials"] == 10
        assert res["search"]["trials_per_s"] > 0
        winners.append(res["winner"])
        trials.append([t["label"] for t in res["train"]["top"]])
    assert winners[0] == winners[1] and trials[0] == trials[1]
    assert "Optuna TPE, 10 trials, seed 7" in (tmp_path / "t0.toml").read_text()


def test_weight_gain_pairs_each_query_with_the_baseline(tmp_path):
    """Adaptive fusion's picture (issue 30.3): a query's keyword multiplier against its
    metric minus the baseline run's on the same query; runs with fixed weights (null
    multiplier) and queries the baseline lacks are left out."""
    import duckdb

    from memo_eval.report import _weight_gain_section, weight_gain

    con = duckdb.connect()
    con.execute("""CREATE TABLE queries AS SELECT * FROM (VALUES
        ('base', 'q1', 1.0, 1.0, 0.5), ('base', 'q2', 0.5, 1.0, 0.2),
        ('run', 'q1', 0.4, 1.0, 0.7), ('run', 'q2', 1.0, 0.0, 0.1), ('run', 'q3', 0.2, 0.0, 0.9),
        ('fixed', 'q1', NULL, NULL, 0.5)) t(run_id, qid, keyword_multiplier, code_share, ndcg_10)""")
    got = weight_gain(con, "ndcg_10", "base")
    assert [(g["run_id"], g["qid"], g["multiplier"], g["code_share"], round(g["delta"], 9)) for g in got] == [
        ("run", "q1", 0.4, 1.0, 0.2), ("run", "q2", 1.0, 0.0, -0.1)]
    figures: list[str] = []
    md = "\n".join(_weight_gain_section(con, tmp_path, "ndcg_10", "base",
                                        {"base": "B", "run": "R", "fixed": "F"}, figures))
    assert figures == ["keyword_weight_gain.png"] and (tmp_path / figures[0]).stat().st_size > 1000
    assert "| R | 2 | 1 | 0.2000 | -0.1000 |" in md
    con.execute("CREATE TABLE q2 AS SELECT run_id, qid, ndcg_10 FROM queries")
    con.execute("DROP TABLE queries")
    con.execute("ALTER TABLE q2 RENAME TO queries")     # traces written before the column: no section
    assert weight_gain(con, "ndcg_10", "base") == []
