"""Your own labelled queries over your own memo database, through run, tune and regress
(docs/eval.md "Your own labelled queries", "Tuning", "Regression"): what a user probe could
not do.  ``memo eval tune`` and ``regress`` had no way to name the database; ``run`` ignored
``$MEMO_DB``; a tuned profile below the default on test said nothing; two labels naming one
record, a line without a split and a query both labelled and unanswerable went unsaid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo import ops
from memo.errors import DatasetError
from memo.store.db import open_db
from memo.stored import RecordDraft
from memo_eval.datasets import load_eval_set
from memo_eval.grid import RunSpec
from memo_eval.regress import CheckError, regress
from memo_eval.run import EvalOptions, run_eval
from memo_eval.tune import TuneOptions, tune

NOTES = {
    "backups.md": "# Backups\n\nThe database is backed up every night at 02:00 to the NAS.\n",
    "keys.md": "# API keys\n\nRotate the API keys every 90 days with the vault CLI.\n",
    "deploy.md": "# Deploys\n\nDeploys go out on Tuesdays after the change review.\n",
    "oncall.md": "# On call\n\nThe on-call rota changes every Monday at noon.\n",
    "tool.py": 'def rotate_keys(days: int) -> bool:\n    """Rotate keys older than days."""\n    return days > 90\n',
}
LABELS = [
    {"id": "t1", "query": "when is the nightly backup", "relevant": ["backups.md"], "split": "train"},
    {"id": "t2", "query": "how often do we rotate api keys", "relevant": ["keys.md"], "split": "train"},
    {"id": "t3", "query": "which day are deploys", "relevant": ["deploy.md"], "split": "train"},
    {"id": "s1", "query": "on-call rota change", "relevant": ["oncall.md"], "split": "test"},
    {"id": "s2", "query": "backup to the NAS", "relevant": ["backups.md"], "split": "test"},
    {"id": "s3", "query": "rotate keys function", "relevant": ["tool.py#rotate_keys"], "split": "test"},
]


@pytest.fixture
def mine(tmp_path, monkeypatch):
    notes = tmp_path / "kb"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    db = tmp_path / "my.db"
    conn = open_db(db)
    ops.import_path(conn, notes)
    conn.close()
    labels = tmp_path / "my.jsonl"
    labels.write_text("".join(json.dumps(x) + "\n" for x in LABELS))
    monkeypatch.setenv("MEMO_DB", str(db))
    return db, labels


def test_run_finds_your_database_as_memo_search_does(mine) -> None:
    db, labels = mine
    res = run_eval(EvalOptions(dataset=str(labels), split="test", specs=[RunSpec("zscore", mode="keyword")],
                               semantic=False))
    assert res["index"]["source"] == "user database" and res["index"]["path"] == str(db)
    run = res["runs"][0]
    assert run["metrics"]["recall_10"] == 1.0           # the code symbol label found its function too
    import polars as pl
    row = pl.read_parquet(Path(run["path"]) / "runs.parquet").row(0, named=True)
    assert row["db"] == str(db) and row["db_state"].startswith("5 records, ")


def test_no_database_is_a_clear_error(mine, monkeypatch, tmp_path) -> None:
    _, labels = mine
    monkeypatch.setenv("MEMO_DB", str(tmp_path / "nowhere.db"))
    with pytest.raises(DatasetError, match=r"no memo database at .*nowhere\.db \(\$MEMO_DB\)") as err:
        run_eval(EvalOptions(dataset=str(labels), split="test", specs=[RunSpec("zscore", mode="keyword")],
                             semantic=False))
    assert "--db" in (err.value.hint or "")


def test_tune_takes_your_database_and_says_when_the_winner_does_not_hold(mine) -> None:
    db, labels = mine
    # A grid that leaves out the base's own value: the base is a candidate all the same.
    res = tune(TuneOptions(dataset=str(labels), profiles=("zscore",), sets=("cutoff.gap=0.05,0.1",),
                           mode="keyword", db=str(db), out_profile=db.parent / "tuned.toml"))
    labels_seen = [r["label"] for r in res["untuned"]]
    assert labels_seen[0].startswith("zscore") and any(r["default"] for r in res["untuned"])
    for ref in res["untuned"]:
        assert set(ref) >= {"train", "test", "label", "default"}
    tuned_test = res["test"]["tuned"]["ndcg_10"]
    below = [r for r in res["untuned"] if r["test"] > tuned_test]
    assert len(res["warnings"]) == len(below)


def test_your_own_check_names_its_database(mine, tmp_path, monkeypatch) -> None:
    db, labels = mine
    monkeypatch.delenv("MEMO_DB")
    monkeypatch.setenv("MY_KB", str(db))
    res = run_eval(EvalOptions(dataset=str(labels), split="test", specs=[RunSpec("zscore", mode="keyword")],
                               semantic=False, db=str(db)))
    got = res["runs"][0]["metrics"]["ndcg_10"]
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "my.jsonl").write_text(labels.read_text())
    (checks / "mine.toml").write_text(
        '[[check]]\nname = "my-notes"\ndataset = "my.jsonl"\ndb = "$MY_KB"\nprofile = "zscore"\nmode = "keyword"\n'
        f'[check.metrics]\nndcg_10 = {{ expected = {got:.4f}, tolerance = 0.002 }}\n')
    out = regress(files=[checks / "mine.toml"])
    assert out["passed"] and out["checks"][0]["measured"] == pytest.approx(got)
    (checks / "unset.toml").write_text((checks / "mine.toml").read_text().replace("$MY_KB", "$NOT_SET_ANYWHERE"))
    with pytest.raises(CheckError, match="an unset variable"):
        regress(files=[checks / "unset.toml"])


def test_regress_says_the_split_it_replayed(mine, tmp_path) -> None:
    """A labels file without splits is replayed whole ("all", as its run ids say): `memo eval
    regress` printed the check's default split, "split test", under a run id with -all-."""
    from typer.testing import CliRunner

    from memo.cli import app

    db, labels = mine
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "my.jsonl").write_text("".join(json.dumps({k: v for k, v in x.items() if k != "split"}) + "\n"
                                             for x in LABELS))
    (checks / "mine.toml").write_text(
        f'[[check]]\nname = "my-notes"\ndataset = "my.jsonl"\ndb = "{db}"\nprofile = "zscore"\nmode = "keyword"\n'
        '[check.metrics]\nrecall_100 = { expected = 0.5, tolerance = 0.002 }\n')
    out = regress(files=[checks / "mine.toml"])
    assert [b["split"] for b in out["batches"]] == ["all"] and "-all-" in out["checks"][0]["run_id"]
    res = CliRunner().invoke(app, ["eval", "regress", "--expected", str(checks / "mine.toml"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "split all: " in res.stdout and "split test" not in res.stdout, res.stdout


def test_labels_that_contradict_themselves_are_refused(tmp_path) -> None:
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps({"id": "q", "query": "x", "relevant": ["a.md"], "unanswerable": True}) + "\n")
    with pytest.raises(DatasetError, match="it is one or the other"):
        load_eval_set(str(both), "all")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"id": "a", "query": "x", "relevant": ["a.md"], "split": "test"}) + "\n"
                     + json.dumps({"id": "b", "query": "y", "relevant": ["b.md"]}) + "\n")
    with pytest.raises(DatasetError, match=r"line\(s\) 2 have no \"split\""):
        load_eval_set(str(mixed), "test")
    typo = tmp_path / "typo.jsonl"
    typo.write_text(json.dumps({"id": "a", "query": "x", "relevant": ["a.md"], "split": "test"}) + "\n")
    with pytest.raises(DatasetError, match=r"no query has split 'tets' \(its splits: test, or all\)"):
        load_eval_set(str(typo), "tets")


def test_two_labels_for_one_record_are_said(mine) -> None:
    db, labels = mine
    rid = open_db(db, write=False).execute("SELECT id FROM records WHERE import_path LIKE '%keys.md'").fetchone()[0]
    two = labels.with_name("two.jsonl")
    two.write_text(json.dumps({"id": "x1", "query": "rotate api keys", "relevant": ["keys.md"]}) + "\n"
                   + json.dumps({"id": "x2", "query": "vault cli", "relevant": [rid]}) + "\n")
    res = run_eval(EvalOptions(dataset=str(two), split="all", specs=[RunSpec("zscore", mode="keyword")],
                               semantic=False))
    assert res["notes"]["shadowed_labels"] == {"keys.md": rid}
    assert "unknown_relevant" not in res["notes"]


def test_compare_says_when_two_runs_searched_different_databases(mine, tmp_path) -> None:
    """The same labels over another database: compared (the questions are the same), and
    said; before, a run over a database of one note paired silently with one over the
    user's notes (a user probe)."""
    from memo_eval.compare import compare_runs

    db, labels = mine
    other = tmp_path / "other.db"
    conn = open_db(other)
    ops.add_record(conn, RecordDraft(body="A single unrelated note."))
    conn.close()
    runs = [run_eval(EvalOptions(dataset=str(labels), split="test", specs=[RunSpec("zscore", mode="keyword")],
                                 semantic=False, db=str(d)))["runs"][0]["path"] for d in (db, db, other)]
    same = compare_runs(Path(runs[0]), Path(runs[1]))
    assert same["same_database"] is True
    differ = compare_runs(Path(runs[0]), Path(runs[2]))
    assert differ["same_database"] is False and str(other) in differ["b_db"]


def test_a_grid_ends_with_its_best_runs(mine, capsys) -> None:
    from memo_eval.cli import ranked_runs_lines

    runs = [{"label": f"p{i}", "metrics": {"ndcg_10": i / 10}} for i in range(5)]
    ranked_runs_lines(runs)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "best 5 of 5 runs by ndcg_10:" and out[1] == "  0.4000  p4"
    ranked_runs_lines(runs[:3])
    assert capsys.readouterr().out == ""        # three runs are read at a glance


def test_a_profile_named_by_memo_profile_says_so(monkeypatch) -> None:
    from memo.errors import ProfileError
    from memo.profile import load_profile

    monkeypatch.setenv("MEMO_PROFILE", "zscroe")
    with pytest.raises(ProfileError, match=r"no profile named 'zscroe' \(from \$MEMO_PROFILE\)") as err:
        load_profile("zscroe")
    assert "unset $MEMO_PROFILE" in (err.value.hint or "")


def test_a_namespace_the_database_lacks_is_said(mine) -> None:
    db, labels = mine
    typo = labels.with_name("ns.jsonl")
    typo.write_text(json.dumps({"id": "n1", "query": "nightly backup", "relevant": ["backups.md"],
                                "namespace": "defualt"}) + "\n")
    res = run_eval(EvalOptions(dataset=str(typo), split="all", specs=[RunSpec("zscore", mode="keyword")],
                               semantic=False))
    assert res["notes"]["absent_namespaces"] == {"defualt": 1}
