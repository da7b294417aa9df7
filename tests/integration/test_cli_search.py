"""`memo search` and `memo profiles` through typer's CliRunner (in process)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

runner = CliRunner()


def run(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result


def js(*args: str, code: int = 0):
    return json.loads(run(*args, "--json", code=code).stdout)


@pytest.fixture
def db(backend_db: str) -> str:
    """A SQLite file or a fresh PostgreSQL database: the CLI suite runs on both (issue 17.3)."""
    path = backend_db
    conn = open_db(path)
    rows = [
        RecordDraft(body="Rotate the deploy key every week", id="key-doc", kind="doc", namespace="ops",
                    source="wiki", library="vault", version="1.15", tags=("security", "ops"), trust=0.9,
                    event_at="2024-05-01"),
        RecordDraft(body="The deploy failed with ERR_CONN_RESET twice", id="err-note", kind="note",
                    namespace="ops", source="slack", tags=("ops",), trust=0.5, event_at="2024-06-01"),
        RecordDraft(body="Banana bread needs ripe bananas", id="bread", kind="note", namespace="kitchen"),
    ]
    with write_tx(conn):
        for draft in rows:
            insert_record(conn, draft, (PassageDraft(text=draft.body),),
                          recorded_at="2024-06-02T00:00:00.000000Z")
    conn.close()
    return str(path)


def test_search_json_document(db):
    doc = js("search", "deploy key", "--db", db, "--mode", "keyword")
    assert [r["record_id"] for r in doc["results"]][0] == "key-doc"
    assert set(doc) == {"query", "results", "abstained", "cause", "reason", "hint", "truncated", "narrow_hint",
                        "trace"}
    tr = doc["trace"]
    assert {"arms", "filter", "candidates", "cutoff_kind", "budget", "degraded", "drops", "latency_ms"} <= set(tr)
    assert tr["filter"] == {"in_scope": 3, "total": 3, "out_of_scope": 0}
    assert doc["results"][0]["why"] is None


def test_every_scope_option_and_explain(db):
    doc = js("search", "deploy", "--db", db, "--namespace", "ops", "--namespace", "other", "--kind", "doc",
             "--kind", "note", "--source", "wiki", "--library", "vault", "--version", "1.15", "--tag", "security",
             "--tag", "ops", "--from", "2024-01-01", "--to", "2024-12-31", "--min-trust", "0.8",
             "--as-of", "2025-01-01", "--mode", "keyword", "--profile", "minmax", "--limit", "5",
             "--max-tokens", "100", "--explain")
    assert [r["record_id"] for r in doc["results"]] == ["key-doc"]
    why = doc["results"][0]["why"]
    assert why["arms"]["keyword"]["rank"] == 1 and why["final"] == doc["results"][0]["score"]
    assert why["provenance"]["source"] == "wiki" and why["freshness"]["event_at"] == "2024-05-01"
    assert doc["trace"]["profile"] == "minmax" and doc["trace"]["budget"]["max"] == 100
    assert doc["trace"]["filter"]["in_scope"] == 1


def test_text_output_explain_and_not_found(db):
    out = run("search", "ERR_CONN_RESET", "--db", db, "--explain").stdout
    assert "err-note:0" in out and "why:" in out and "exact #1" in out
    out = run("search", "zeppelin", "--db", db, "--mode", "keyword").stdout
    assert "No results: no passage matched the query" in out and "hint: rephrase" in out


def test_text_explain_shows_the_heading_factor(db):
    conn = open_db(db)
    with write_tx(conn):
        for section, text in (("Pool API > pool.query(text)", "Runs one statement on an idle client."),
                              ("Pool API > pool.end()", "After pool.end, pool.query throws; pool.query never retries")):
            insert_record(conn, RecordDraft(body=text, kind="doc", namespace="api"),
                          (PassageDraft(text=text, section=section),))
    conn.close()
    out = run("search", "pool.query", "--db", db, "--mode", "keyword", "--namespace", "api", "--explain",
              "--profile", "zscore").stdout
    lines = out.splitlines()
    headed = [i for i, line in enumerate(lines) if "x heading (pool.query) 1.5 =" in line]
    assert len(headed) == 1 and "pool.query(text)" in "\n".join(lines[max(0, headed[0] - 3):headed[0]])


@pytest.mark.parametrize("args", [["--limit", "101"], ["--limit", "0"], ["--mode", "fuzzy"],
                                  ["--profile", "nope"], ["--from", "yesterday"], ["--kind", "blog"]])
def test_bad_options_exit_2_with_a_json_error(db, args):
    doc = js("search", "deploy", "--db", db, *args, code=2)
    assert doc["exit_code"] == 2 and doc["error"] in ("ValidationError", "ProfileError", "QuerySyntaxError")


def test_wordless_keyword_query_is_a_query_syntax_error(db):
    doc = js("search", "?!*", "--db", db, "--mode", "keyword", code=2)
    assert doc["error"] == "QuerySyntaxError"


def test_profiles_show_and_diff():
    listed = js("profiles", "show")
    assert {"rrf", "minmax"} <= {p["name"] for p in listed["profiles"]}
    shown = js("profiles", "show", "rrf")
    assert shown["constants"]["fusion.k"] == 60 and shown["constants"]["weights.exact"] == 0.3
    assert "fusion.k = 60" in run("profiles", "show", "rrf").stdout
    diff = js("profiles", "diff", "rrf", "minmax")
    # the seed's two profiles differ in their fusion only (both are base.toml + a method)
    assert diff["differences"] == [{"key": "fusion.method", "a": "rrf", "b": "minmax"}]
    assert "fusion.method: 'rrf' -> 'minmax'" in run("profiles", "diff", "rrf", "minmax").stdout
    assert js("profiles", "show", "nope", code=2)["error"] == "ProfileError"


def test_text_output_says_what_json_says(tmp_path):
    """Issue 32: a cut query and the CJK bigram lookup are said in text output too (stderr),
    and the narrow hint names what it would leave out."""
    db = str(tmp_path / "m.db")
    conn = open_db(db)
    with write_tx(conn):
        for i in range(6):
            insert_record(conn, RecordDraft(body=f"deploy note {i}", namespace="ops" if i < 4 else "home"),
                          (PassageDraft(text=f"deploy note {i}"),))
    conn.close()
    long = run("search", "deploy " * 3000, "--db", db, "--mode", "keyword")
    assert "note: query cut from 21,000 to" in long.stderr
    cjk = run("search", "数据库备份", "--db", db, "--mode", "keyword", code=0)
    assert "note: Chinese/Japanese/Korean text is searched by keyword as character bigrams: 数据 据库 库备 备份" \
        in cjk.stderr
    narrow = run("search", "deploy", "--db", db, "--mode", "keyword", "--limit", "2")
    assert "4 more ranked results did not fit (limit/budget)" in narrow.stdout
    assert re.search(r"to narrow: --namespace (ops|home) would leave out the [24] ranked results from elsewhere",
                     narrow.stdout), narrow.stdout


def test_an_unknown_namespace_names_the_ones_that_exist(db):
    doc = js("search", "deploy", "--namespace", "nosuch", "--db", db)
    assert doc["cause"] == "no_scope" and not doc["abstained"]
    assert doc["reason"] == "no memory is in namespace 'nosuch'; the namespaces are ops, kitchen"


def test_an_empty_database_says_so_and_is_not_degraded(tmp_path):
    db = str(tmp_path / "m.db")
    rid = js("add", "a note to purge", "--db", db)["record_id"]
    run("forget", rid, "--yes", "--db", db)
    run("purge", "--yes", "--db", db)
    for mode in ("auto", "semantic", "keyword"):
        result = run("search", "note", "--db", db, "--mode", mode)
        assert "degraded" not in result.stderr, (mode, result.stderr)
        assert result.stdout.startswith("No results: the database holds no memories yet."), result.stdout


def test_a_result_says_which_file_it_came_from(tmp_path):
    """Issue 32: text output did not say which file a result came from."""
    db = str(tmp_path / "m.db")
    doc = tmp_path / "runbook.md"
    doc.write_text("# Keys\n\nRotate the staging deploy key every 30 days.\n")
    run("import", str(doc), "--db", db, "--no-embed")
    out = run("search", "rotate deploy key", "--db", db, "--mode", "keyword").stdout
    assert f"from {doc}" in out, out
    assert js("search", "rotate deploy key", "--db", db, "--mode", "keyword")["results"][0]["origin"] == str(doc)
