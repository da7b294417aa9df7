"""`memo eval ...` end to end through the CLI, on the tiny synthetic set.

The auto-mode run uses the real ONNX model (12 passages + 4 queries: a second or two)."""

from __future__ import annotations

import json
import zipfile

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo_eval.synthetic import write_beir, write_user_queries

runner = CliRunner()


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMO_EVAL_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("MEMO_EVAL_WORKERS", "2")


@pytest.fixture
def tiny(tmp_path):
    return write_beir(tmp_path / "tiny")


def _json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_run_json_is_one_document(tiny):
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "-p", "rrf", "-p", "minmax",
                              "--set", "fusion.k=20,60", "--quiet", "--json"])
    doc = _json(res)
    # fusion.k has no effect under minmax: rrf x 2 + minmax once, with a note
    assert len(doc["runs"]) == 3 and doc["model_id"] == "all-minilm-l6-v2-int8"
    assert doc["grid_notes"] == ["minmax: fusion.k has no effect under fusion.method = minmax; "
                                 "skipped --set fusion.k=20,60"]
    assert doc["vectors"]["vectors"] == 12
    assert doc["replay"]["qps"] > 0 and doc["replay"]["searches"] == 12
    for run in doc["runs"]:
        assert 0.0 <= run["metrics"]["ndcg_10"] <= 1.0
        assert run["metrics"]["degraded_queries"] == 0      # the semantic arm really ran
    assert doc["runs"][0]["metrics"]["recall_100"] > 0.5
    # Second run: the index and the vectors come from the cache.
    again = _json(runner.invoke(app, ["eval", "run", "-d", str(tiny), "--quiet", "--json"]))
    assert again["index"]["built"] is False and again["vectors"]["source"] == "index"
    # No -p: the profile searches use (memo.types.default_profile), not a fixed one.
    from memo.types import default_profile
    assert [r["profile"] for r in again["runs"]] == [default_profile()]


def test_run_compare_report_human(tiny, tmp_path):
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--set", "cutoff.gap=0.05,1.0",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    assert "queries/s" in res.stdout
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    cmp_ = _json(runner.invoke(app, ["eval", "compare", runs[0], runs[1], "--json"]))
    assert cmp_["paired_queries"] == 4 and "wilcoxon_p" in cmp_["metrics"]["ndcg_10"]
    human = runner.invoke(app, ["eval", "compare", runs[0], runs[1]])
    assert human.exit_code == 0 and "4 paired queries" in human.stdout
    rep = _json(runner.invoke(app, ["eval", "report", *runs, "--out", str(tmp_path / "rep"), "--json"]))
    assert (tmp_path / "rep" / "report.md").exists() and rep["runs"] == 2


def test_user_queries_over_a_memo_db(tiny, tmp_path):
    """A user's own labelled JSONL + their corpus imported with memo's normal import."""
    db = tmp_path / "mine.db"
    imp = runner.invoke(app, ["import", str(tiny / "corpus.jsonl"), "--format", "beir", "--db", str(db), "--json"])
    assert imp.exit_code == 0, imp.output
    queries = write_user_queries(tmp_path / "mine.jsonl")
    doc = _json(runner.invoke(app, ["eval", "run", "-d", str(queries), "--db", str(db), "--mode", "keyword",
                                    "--quiet", "--json"]))
    run = doc["runs"][0]
    assert doc["queries"] == 5 and run["metrics"]["n_unanswerable"] == 1
    assert run["metrics"]["recall_100"] > 0.5


def test_fetch_file_url(tmp_path):
    src = write_beir(tmp_path / "src")
    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in src.rglob("*"):
            zf.write(p, f"tiny/{p.relative_to(src)}")
    import hashlib
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    bad = runner.invoke(app, ["eval", "fetch", "tiny", "--url", archive.as_uri(), "--sha256", "1" * 64])
    assert bad.exit_code == 8 and "sha256 mismatch" in bad.stderr
    doc = _json(runner.invoke(app, ["eval", "fetch", "tiny", "--url", archive.as_uri(), "--sha256", sha, "--json"]))
    assert doc["verified"] == ["download"]
    # A fetched data set is found by name.
    run = _json(runner.invoke(app, ["eval", "run", "-d", "tiny", "--mode", "keyword", "--quiet", "--json"]))
    assert run["queries"] == 4


def test_regress_exit_code(tiny, tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""[[check]]
name = "tiny"
dataset = "{tiny}"
mode = "keyword"
fast = true
[check.metrics]
recall_100 = {{ expected = 2.0, tolerance = 0.01 }}
""")
    # a check that can never fail (or has no measured spread) is refused: exit 8
    res = runner.invoke(app, ["eval", "regress", "--fast", "--expected", str(exp), "--quiet"])
    assert res.exit_code == 8 and "outside the metric's range" in res.stderr
    exp.write_text(exp.read_text().replace("expected = 2.0, tolerance = 0.01", "expected = 0.0, tolerance = 0.0"))
    res = runner.invoke(app, ["eval", "regress", "--fast", "--expected", str(exp), "--quiet"])
    assert res.exit_code == 8 and "can never fail" in res.stderr
    exp.write_text(exp.read_text().replace("expected = 0.0, tolerance = 0.0", "expected = 0.5, tolerance = 0.002")
                   .replace("fast = true", 'fast = true\nrankings = "tiny.rankings.json"')
                   + '"ranking.agreement" = { expected = 1.0, tolerance = 0.002 }\n')
    res = runner.invoke(app, ["eval", "regress", "--fast", "--expected", str(exp), "--quiet", "--update-rankings",
                              "--json"])
    assert _json(res)["passed"] is True
    res = runner.invoke(app, ["eval", "regress", "--fast", "--expected", str(exp), "--quiet"])
    assert res.exit_code == 0 and max(len(line) for line in res.stdout.splitlines()) <= 80
    ref = json.loads((tmp_path / "tiny.rankings.json").read_text())
    (tmp_path / "tiny.rankings.json").write_text(json.dumps({q: ids[::-1] for q, ids in ref.items()}))
    res = runner.invoke(app, ["eval", "regress", "--fast", "--expected", str(exp), "--quiet"])
    assert res.exit_code == 1 and "FAIL" in res.stdout


def test_bad_input_is_one_line_error(tiny):
    res = runner.invoke(app, ["eval", "run", "-d", "no-such-set", "--quiet"])
    assert res.exit_code == 8 and res.stderr.startswith("error: unknown data set")
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--set", "fusion.kk=3", "--quiet"])
    assert res.exit_code == 2 and "fusion.kk" in res.stderr


def test_fetch_scifact_beir_zip_verified_by_content(tmp_path):
    """BEIR's scifact.zip layout (scifact/corpus.jsonl ...), served from a file:// URL: the
    corpus and queries must match the hashes in datasets/scifact/SOURCE.md."""
    import gzip

    from memo_eval.datasets import DATASETS_DIR

    src = DATASETS_DIR / "scifact"
    archive = tmp_path / "scifact.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("scifact/corpus.jsonl", gzip.decompress((src / "corpus.jsonl.gz").read_bytes()))
        zf.write(src / "queries.jsonl", "scifact/queries.jsonl")
        for split in ("train", "test"):
            zf.write(src / "qrels" / f"{split}.tsv", f"scifact/qrels/{split}.tsv")
    doc = _json(runner.invoke(app, ["eval", "fetch", "scifact", "--url", archive.as_uri(),
                                    "--dest", str(tmp_path / "sf"), "--json"]))
    assert set(doc["verified"]) == {"corpus.jsonl", "queries.jsonl"}
    from memo_eval.datasets import load_eval_set

    es = load_eval_set(str(tmp_path / "sf"), "test")
    assert len(es.queries) == 300 and es.corpus_hash != ""


def test_user_labels_name_imported_files_by_relative_path(tmp_path):
    """Folder imports store absolute paths; labels written by hand name files relative to
    the folder ("guides/backup.md") and still match."""
    kb = tmp_path / "kb"
    (kb / "guides").mkdir(parents=True)
    (kb / "guides" / "backup.md").write_text("# Backup\n\nRun the online backup every night and verify the copy.\n")
    (kb / "guides" / "deploy.md").write_text("# Deploy\n\nDeploys go out on Tuesdays after the release review.\n")
    (kb / "notes.md").write_text("# Notes\n\nLunch menu and other chatter.\n")
    db = tmp_path / "kb.db"
    assert runner.invoke(app, ["import", str(kb), "--db", str(db), "--no-embed", "--json"]).exit_code == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": "verify the nightly backup", "relevant": ["guides/backup.md"]})
                       + "\n" + json.dumps({"id": "q2", "query": "when do deploys go out",
                                            "relevant": {"deploy.md": 1}}) + "\n")
    doc = _json(runner.invoke(app, ["eval", "run", "-d", str(queries), "--db", str(db), "--mode", "keyword",
                                    "--quiet", "--json"]))
    assert doc["runs"][0]["metrics"]["recall_10"] == 1.0


def test_list_compare_batches_and_80_columns(tiny, tmp_path):
    first = _json(runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "-p", "rrf", "-p", "minmax",
                                      "--set", "cutoff.gap=0.05,1.0", "--set", "fusion.k=20,60", "--quiet", "--json"]))
    # fusion.k has no effect under minmax: 4 rrf points + 2 minmax points, and a note
    assert len(first["runs"]) == 6 and any("fusion.k has no effect" in n for n in first["grid_notes"])
    base = _json(runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet", "--json"]))
    batch = first["batch_id"]
    listed = _json(runner.invoke(app, ["eval", "list", "--json"]))
    assert [b["batch_id"] for b in listed["batches"]][:2] == [base["batch_id"], batch] or \
        {b["batch_id"] for b in listed["batches"]} == {base["batch_id"], batch}
    got = next(b for b in listed["batches"] if b["batch_id"] == batch)
    assert len(got["runs"]) == 6 and got["dataset"] == "tiny" and got["split"] == "test"
    assert {"run_id", "profile", "label", "overrides", "metrics"} <= set(got["runs"][0])
    # a baseline run against every run of a batch; one batch with --baseline LABEL
    many = _json(runner.invoke(app, ["eval", "compare", base["runs"][0]["run_id"], batch, "--json"]))
    assert len(many["comparisons"]) == 6 and many["baseline"] == base["runs"][0]["run_id"]
    inner = _json(runner.invoke(app, ["eval", "compare", batch, "--baseline", "minmax[keyword](cutoff.gap=1.0)",
                                      "--json"]))
    assert len(inner["comparisons"]) == 5
    # human output: 80 columns, full ids on their own lines
    for args in (["eval", "list"], ["eval", "compare", base["runs"][0]["run_id"], batch],
                 ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet"]):
        out = runner.invoke(app, args)
        assert out.exit_code == 0, out.output
        assert max(len(line) for line in out.stdout.splitlines()) <= 80, args
        assert any(line.strip() == batch or line.strip().startswith(batch) for line in out.stdout.splitlines()) \
            or args[1] == "run"


def test_cache_lists_and_prunes(tiny, tmp_path):
    _json(runner.invoke(app, ["eval", "run", "-d", str(tiny), "-p", "rrf", "--mode", "keyword", "--quiet", "--json"]))
    index = tmp_path / "cache" / "eval" / "index"
    (index / "tiny-0123456789ab-v1-deadbeef.db").write_bytes(b"x" * 100)
    doc = _json(runner.invoke(app, ["eval", "cache", "--json"]))
    assert doc["summary"]["stale"] == {"entries": 1, "bytes": 100} and doc["summary"]["current"]["entries"] >= 1
    assert not doc["pruned"] and (index / "tiny-0123456789ab-v1-deadbeef.db").exists()
    human = runner.invoke(app, ["eval", "cache"])
    assert human.exit_code == 0 and "stale 1" in human.stdout and "--prune" in human.stdout
    res = runner.invoke(app, ["eval", "cache", "--prune", "-v"])
    assert res.exit_code == 0 and "(deleted)" in res.stdout and "freed 0.0 MB" in res.stdout
    assert not (index / "tiny-0123456789ab-v1-deadbeef.db").exists()
    # the current index survives: a second run reuses it
    again = _json(runner.invoke(app, ["eval", "run", "-d", str(tiny), "-p", "rrf", "--mode", "keyword",
                                      "--quiet", "--json"]))
    assert again["index"]["built"] is False
