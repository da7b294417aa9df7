"""bench/user_wait.py (issue 31.6): each script's JSON (canned, trimmed from real --quick
outputs) becomes the right rows, goals are judged on the right side of their limit, a
failing script becomes a "failed: <one line>" row and the run goes on with exit status 1."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_user_wait", ROOT / "bench" / "user_wait.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod              # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


uw = _load()


def keyword_live(p50: float, p99: float) -> dict:
    return {"source": "x.db", "cores": 2, "postings": {
        "phase": "postings", "searches": 967, "keyword_p50_ms": 5.17, "keyword_p99_ms": 11.72, "floor_p50_ms": 53.52,
        "p50_ratio": p50, "p99_ratio": p99, "served": {"postings": 967, "fts5": 0}, "writes": 60}}


def cold_cli(keyword_x: float, hybrid_x: float | None, claims_x: float | None = None) -> dict:
    commands = {"floor": {"median_ms": 23.2, "x_sqlite": 0.87}, "sqlite": {"median_ms": 26.5, "x_sqlite": 1.0},
                "keyword": {"median_ms": 282.0, "x_sqlite": keyword_x}}
    if claims_x is not None:
        commands["keyword_claims"] = {"median_ms": 151.0, "x_sqlite": claims_x}
    if hybrid_x is not None:
        commands["hybrid"] = {"median_ms": 614.0, "x_sqlite": hybrid_x}
    return {"runs": 3, "commands": commands}


def mcp_start(init_ms: float) -> dict:
    return {"rounds": 1, "floors_ms": {"sqlite": {"median": 27.7}, "sdk": {"median": 595.9}, "types": {"median": 201.6}},
            "variants": {"server": {"ms": {"initialize": {"median": init_ms}, "tools_list": {"median": 713.8}}}}}


def ingest_scale(records: int, cpu_ratio: float) -> dict:
    return {"records": records, "passages": records + records // 8, "ratio_floor_over_memo": 0.118,
            "cpu_ratio_floor_over_memo": cpu_ratio, "floor_cpu_per_s": 11906, "memo_cpu_per_s": 1328}


def embed(corpus: str, cpu_ratio: float) -> dict:
    return {"corpus": corpus, "passages": 64, "ratio": 1.845, "cpu_ratio": cpu_ratio, "memo_per_cpu_s": 12.31,
            "bare_per_cpu_s": 7.04}


def scale(hybrid_ratio: float, cli: bool = True) -> dict:
    rows = [{"what": "keyword_fts5", "p50_ms": 2.0, "floor": "floor_fts_or", "floor_p50_ms": 1.17, "ratio": 1.713},
            {"what": "keyword_impact", "p50_ms": 0.98, "floor": "floor_fts_or", "floor_p50_ms": 1.17, "ratio": 0.842},
            {"what": "hybrid_noembed", "p50_ms": 2.5, "floor": "floor_fts_or+floor_matvec", "floor_p50_ms": 1.36,
             "ratio": hybrid_ratio},
            {"what": "hybrid_embed", "p50_ms": 11.16, "floor": "floor_fts_or+floor_matvec", "floor_p50_ms": 1.36,
             "ratio": 8.202}]
    if cli:
        rows += [{"what": "cli_keyword", "p50_ms": 120.0, "floor": "cli_floor", "floor_p50_ms": 29.08, "ratio": 4.13},
                 {"what": "cli_hybrid", "p50_ms": 650.18, "floor": "cli_floor", "floor_p50_ms": 29.08, "ratio": 22.356}]
    rows += [{"what": "floor_fts_or", "p50_ms": 1.17}, {"what": "floor_matvec", "p50_ms": 0.2}]
    return {"passages": 2000, "db_mb": 23.7, "rows": rows, "rss_memo_mb": 238.2, "max_rss_mb": 291.2}


def by_figure(rows: list) -> dict:
    return {r.figure: r for r in rows}


# --- reading a script's stdout ----------------------------------------------------------------

def test_json_docs_reads_one_document_a_list_and_json_lines() -> None:
    assert uw.json_docs(json.dumps({"a": 1}, indent=1)) == [{"a": 1}]
    assert uw.json_docs(json.dumps([{"a": 1}, {"a": 2}], indent=1)) == [{"a": 1}, {"a": 2}]
    assert uw.json_docs('{"a": 1}\n\n{"a": 2}\n') == [{"a": 1}, {"a": 2}]
    for bad in ("", "/tmp/x.db\n", "[1, 2]"):
        with pytest.raises(ValueError):
            uw.json_docs(bad)


def test_one_line_is_the_last_line_cut_short() -> None:
    assert uw.one_line("Traceback ...\n  File x\nKeyError: 'p50'\n\n") == "KeyError: 'p50'"
    assert uw.one_line("") == "(no output)"
    assert len(uw.one_line("x" * 500)) == 160


# --- the parsers and the goals ------------------------------------------------------------------

def test_keyword_live_judges_p50_and_p99_against_their_own_limits() -> None:
    rows = uw.rows_keyword_live([keyword_live(0.097, 0.219)])
    assert [(r.value, r.goal_text(), r.met_text()) for r in rows] == [(0.097, "<= 0.1", "yes"), (0.219, "<= 0.5", "yes")]
    assert rows[0].floor == "FTS5 OR p50 53.52 ms"
    assert rows[0].measured.startswith("0.097 (5.17 ms; 967 searches, 60 writes)")
    rows = uw.rows_keyword_live([keyword_live(0.105, 0.51)])
    assert [r.met for r in rows] == [False, False]
    rows = uw.rows_keyword_live([keyword_live(0.1, 0.5)])     # on the limit: met
    assert [r.met for r in rows] == [True, True]


def test_cold_cli_keyword_5x_hybrid_15x() -> None:
    rows = uw.rows_cold_cli([cold_cli(6.4, 14.0)])
    assert [(r.figure.split("`")[2].split()[0], r.goal_text(), r.met) for r in rows] == [
        ("keyword", "<= 5x", False), ("hybrid", "<= 15x", True)]
    assert rows[0].floor == "import sqlite3 26.5 ms" and rows[0].measured == "6.40x (282 ms)"
    assert len(uw.rows_cold_cli([cold_cli(4.9, None)])) == 1     # --no-hybrid: keyword only
    assert uw.rows_cold_cli([cold_cli(4.9, None)])[0].met is True
    claims = uw.rows_cold_cli([cold_cli(4.9, 14.0, claims_x=5.7)])      # --claims N: its own row
    assert [(r.figure, r.met) for r in claims] == [
        ("31.2 cold `memo search` keyword / import sqlite3", True),
        ("31.2 cold `memo search` keyword, the sample's claims / import sqlite3", False),
        ("31.2 cold `memo search` hybrid / import sqlite3", True)]
    assert claims[1].measured == "5.70x (151 ms)"


def test_mcp_initialize_within_300_ms() -> None:
    (row,) = uw.rows_mcp_start([mcp_start(692.7)])
    assert (row.measured, row.goal_text(), row.met_text()) == ("693 ms", "<= 300 ms", "no")
    assert "SDK import 596 ms" in row.floor
    assert uw.rows_mcp_start([mcp_start(299.0)])[0].met is True


def test_ingest_scale_judges_the_cpu_ratio_one_row_per_size() -> None:
    rows = uw.rows_ingest_scale([ingest_scale(20_000, 0.124), ingest_scale(1_000_000, 0.7)])
    assert ["20,000 records" in rows[0].figure, "1,000,000 records" in rows[1].figure] == [True, True]
    assert [(r.value, r.goal_text(), r.met) for r in rows] == [(0.124, ">= 0.7", False), (0.7, ">= 0.7", True)]
    assert "wall 0.118" in rows[0].measured


def test_ingest_throughput_and_embedding() -> None:
    (row,) = uw.rows_ingest_throughput([{"n": 64, "bare_per_s": 12.1, "memo_per_s": 20.9, "ratio": 0.79}])
    assert (row.goal_text(), row.met) == (">= 0.8", False)
    rows = uw.rows_embed_throughput([embed("scifact", 1.749), embed("code", 0.89)])
    assert [(r.figure.split(",")[1].split()[0], r.value, r.met) for r in rows] == [
        ("scifact", 1.749, True), ("code", 0.89, False)]
    assert rows[0].floor == "bare onnxruntime 7.04 passages/CPU-s"


def test_scale_hybrid_goal_and_reported_rows() -> None:
    rows = by_figure(uw.rows_scale([scale(1.355)]))
    hybrid = rows["31.5 warm hybrid p50 / sum of floors"]
    assert (hybrid.value, hybrid.goal_text(), hybrid.met_text()) == (1.355, "<= 1.5x", "yes")
    assert hybrid.floor == "FTS5 OR + numpy matvec 1.36 ms"
    assert rows["31.5 warm keyword p50 / floor"].met is None          # reported, no goal
    assert rows["31.5 warm keyword p50 / floor"].met_text() == ""
    assert rows["31.5 cold keyword p50 / import sqlite3"].met is True
    assert rows["31.5 cold hybrid p50 / import sqlite3"].met is False
    assert rows["31.5 database size"].measured == "23.7 MB (11,850 bytes/passage)"
    assert rows["31.5 RSS, warm process"].value == 238.2
    assert "keyword_fts5" not in " ".join(rows)
    assert uw.rows_scale([scale(1.51)])[1].met is False
    no_cli = by_figure(uw.rows_scale([scale(1.0, cli=False)]))
    assert not any("cold" in f for f in no_cli)


def test_scale_build_built_or_cached() -> None:
    (row,) = uw.rows_scale_build([{"path": "x", "passages": 2000, "built": True, "build_s": 2.9, "db_mb": 23.7}])
    assert row.measured == "2.9 s (690 passages/s)" and row.met is None
    (row,) = uw.rows_scale_build([{"path": "x", "passages": 2000, "built": False, "build_s": None, "db_mb": 23.7}])
    assert row.measured.startswith("cached") and row.value is None


def test_a_parser_missing_its_key_raises() -> None:
    with pytest.raises(KeyError):
        uw.rows_keyword_live([{"source": "x", "inmemory": {}}])


# --- the table ---------------------------------------------------------------------------------

def test_table_lines_show_goal_met_and_failed_rows() -> None:
    rows = [*uw.rows_keyword_live([keyword_live(0.097, 0.6)]), uw.failed_row("31.3 ingest_scale.py", "x\nboom: it broke"),
            *uw.rows_scale_build([{"path": "x", "passages": 2000, "built": False, "build_s": None, "db_mb": 1.0}])]
    lines = uw.table_lines(rows)
    assert lines[0].split()[:2] == ["figure", "measured"] and set(lines[1]) <= {"-", " "}
    assert lines[2].endswith("<= 0.1  yes") and lines[3].endswith("<= 0.5  no")
    assert "failed: boom: it broke" in lines[4] and lines[4].endswith("no")
    assert lines[5].startswith("31.5 build") and not lines[5].endswith(("yes", "no"))
    d = uw.row_dict(rows[2])
    assert d["failed"] is True and d["met"] is False and d["measured"] == "failed: boom: it broke"
    assert uw.row_dict(rows[0])["goal"] == "<= 0.1" and uw.row_dict(rows[0])["met"] is True
    assert uw.row_dict(rows[3])["met"] is None and uw.row_dict(rows[3])["goal"] is None


def test_parse_only() -> None:
    assert uw.parse_only(None) == set(uw.FIGURES)
    assert uw.parse_only("31.1, 31.3") == {"31.1", "31.3"}
    with pytest.raises(SystemExit):
        uw.parse_only("31.1,31.9")


# --- running steps: failures become rows, the run goes on -----------------------------------------

def _script(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / name).write_text(body)
    return name


@pytest.fixture
def fake_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(uw, "BENCH", tmp_path)
    return tmp_path


def test_run_step_failures_become_one_line_rows(fake_bench: Path) -> None:
    cfg = uw.Config(passages=100, quick=True)
    say = uw.Progress()
    crash = _script(fake_bench, "crash.py", "import sys\nprint('partial')\nraise SystemExit('writer failed (1)')\n")
    rows, outcome = uw.run_step(uw.Step("31.1", crash, lambda c: [], uw.rows_keyword_live), cfg, say)
    assert [r.measured for r in rows] == ["failed: exit 1: writer failed (1)"] and rows[0].failed
    assert rows[0].figure == "31.1 crash.py" and outcome.returncode == 1
    noise = _script(fake_bench, "noise.py", "print('/tmp/some.db')\n")
    rows, outcome = uw.run_step(uw.Step("31.4", noise, lambda c: [], uw.rows_embed_throughput), cfg, say)
    assert rows[0].measured.startswith("failed: cannot read its output: JSONDecodeError")
    wrong = _script(fake_bench, "wrong.py", "import json\nprint(json.dumps({'corpus': 'code'}))\n")
    rows, outcome = uw.run_step(uw.Step("31.4", wrong, lambda c: [], uw.rows_embed_throughput), cfg, say)
    assert rows[0].measured == "failed: cannot read its output: KeyError: 'cpu_ratio'"
    assert outcome.output == [{"corpus": "code"}]


def test_run_step_passes_its_arguments_and_reads_json(fake_bench: Path) -> None:
    echo = _script(fake_bench, "echo.py", "import json, sys\nprint(json.dumps({'n': 64, 'bare_per_s': 1, "
                   "'memo_per_s': 2, 'ratio': float(sys.argv[2])}))\n")
    cfg = uw.Config(passages=100, quick=True)
    rows, outcome = uw.run_step(uw.Step("31.3", echo, lambda c: ["--ratio", "0.81"], uw.rows_ingest_throughput),
                                cfg, uw.Progress())
    assert rows[0].value == 0.81 and rows[0].met is True and outcome.error is None


def test_a_failed_build_fails_the_cold_cli_step_without_running_it(fake_bench: Path) -> None:
    cfg = uw.Config(passages=100, quick=True)
    build, cold = [s for s in uw.steps(cfg) if s.script in ("scale_build.py", "cold_cli.py")]
    _script(fake_bench, "scale_build.py", "raise SystemExit('disk full')\n")
    rows, _ = uw.run_step(build, cfg, uw.Progress())
    assert rows[0].measured == "failed: exit 1: disk full"
    rows, outcome = uw.run_step(cold, cfg, uw.Progress())
    assert rows[0].failed and "the build failed (exit 1: disk full)" in rows[0].measured and outcome.cmd == []


def test_main_goes_on_after_a_failure_and_exits_1(fake_bench: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ok = _script(fake_bench, "ok.py", "import json\nprint(json.dumps(" + repr(keyword_live(0.09, 0.2)) + "))\n")
    bad = _script(fake_bench, "bad.py", "raise RuntimeError('no model')\n")
    emb = _script(fake_bench, "emb.py", "import json\nprint(json.dumps(" + repr(embed("code", 0.95)) + "))\n")
    monkeypatch.setattr(uw, "steps", lambda cfg: [uw.Step("31.1", ok, lambda c: [], uw.rows_keyword_live),
                                                  uw.Step("31.3", bad, lambda c: [], uw.rows_ingest_scale),
                                                  uw.Step("31.4", emb, lambda c: [], uw.rows_embed_throughput)])
    assert uw.main(["--quick"]) == 1
    out = capsys.readouterr().out
    assert "failed: exit 1: RuntimeError: no model" in out and "failed steps: 31.3 bad.py" in out
    assert out.count(" yes") == 3                      # both 31.1 rows and the 31.4 row after the failure
    assert uw.main(["--quick", "--only", "31.1,31.4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passages"] == uw.QUICK_PASSAGES and doc["failed"] == []
    assert [r["figure"].split()[0] for r in doc["rows"]] == ["31.1", "31.1", "31.4"]
    assert [r["met"] for r in doc["rows"]] == [True, True, True]
    assert uw.main(["--only", "31.4", "--passages", "500"]) == 0
    assert "at 500 passages" in capsys.readouterr().out
