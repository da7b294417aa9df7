"""Namespaces that cannot be read back are refused on every write (``memo.text.namespaces``),
through typer's CliRunner: ``memo add -n $'a\\x1bb'`` was stored, and ``memo stats`` then
printed a terminal escape (or, for ``x\\u202ey``, a reversed name) that no one could type
again.  Now: exit 2 with one line naming the character as an escape.  A database that
already holds such a namespace keeps working for reads (list, get, search, stats, forget)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo import ops
from memo.cli import app
from memo.errors import ValidationError
from memo.ops.facts import add_fact, supersede_fact
from memo.ops.importer import ImportOptions
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft

runner = CliRunner()
HOSTILE = ["a\x1bb", "x\u202ey", "\u2066ops\u2069", "ops\n", " ops", "o\u200bps"]


class _NoEmbed:
    """A server's background embedder that takes everything and does nothing (no model)."""

    model_id = None

    def submit(self, record_ids=(), fact_pks=()) -> bool:  # noqa: ANN001
        return True


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memo.db")


@pytest.mark.parametrize("namespace", HOSTILE)
def test_add_refuses_the_namespace_with_exit_2_and_one_line(db: str, namespace: str) -> None:
    code, out = _run("add", "the deploy key rotates monthly", "--namespace", namespace, "--db", db)
    assert code == 2, out
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: namespace {namespace!r} "), out
    assert lines[0].isprintable() and "letters, digits" in lines[0], out
    code, out = _run("add", "the deploy key rotates monthly", "--namespace", namespace, "--db", db, "--json")
    doc = json.loads(out)
    assert code == 2 and doc["error"] == "ValidationError" and doc["message"].startswith("namespace "), doc


def test_add_names_the_character(db: str) -> None:
    code, out = _run("add", "hello", "-n", "a\x1bb", "--db", db)
    assert out == (r"error: namespace 'a\x1bb' holds a control character U+001B at character 1 (use a name "
                   "that prints as itself and can be typed again: letters, digits, spaces between words, "
                   "'-', '_', '.', '/')\n")
    code, out = _run("add", "hello", "-n", "x\u202ey", "--db", db)
    assert r"namespace 'x\u202ey' holds a bidi control U+202E (RIGHT-TO-LEFT OVERRIDE) at character 1" in out


def test_import_and_fact_add_refuse_it(db: str, tmp_path: Path) -> None:
    src = tmp_path / "notes.jsonl"
    src.write_text(json.dumps({"text": "first note about okapis"}) + "\n"
                   + json.dumps({"text": "second note about quolls", "namespace": "q\x07"}) + "\n")
    # --namespace: the whole import is refused before anything is read (not 1 rejection a record)
    code, out = _run("import", str(src), "--namespace", "x\u202ey", "--no-embed", "--no-progress", "--db", db)
    assert code == 2 and r"namespace 'x\u202ey' holds a bidi control U+202E" in out, out
    # a line's own namespace: that line is rejected, the rest imported (exit 5)
    code, out = _run("import", str(src), "--no-embed", "--no-progress", "--db", db, "--json")
    doc = json.loads(out)
    assert code == 5 and doc["added"] == 1, out
    assert [r["path"] for r in doc["rejected"]] == ["notes.jsonl:2"], doc["rejected"]
    assert r"namespace 'q\x07' holds a control character U+0007" in doc["rejected"][0]["reason"], doc
    rid = doc["record_ids"][0]
    code, out = _run("fact", "add", "okapis are noted", "--evidence", rid, "--namespace", "f\u2067x", "--db", db)
    assert code == 2 and r"namespace 'f\u2067x' holds a bidi control U+2067" in out, out


def test_the_library_refuses_it_on_every_write(db: str, tmp_path: Path) -> None:
    conn = open_db(db)
    try:
        rid = ops.add_record(conn, RecordDraft(body="numbats eat termites", namespace="zoo"),
                             background=_NoEmbed()).record_id
        with pytest.raises(ValidationError, match="control character U\\+001B"):
            ops.add_record(conn, RecordDraft(body="a note", namespace="a\x1bb"), background=_NoEmbed())
        with pytest.raises(ValidationError, match="bidi control U\\+202E"):
            ops.supersede(conn, rid, "numbats eat ants", namespace="x\u202ey")
        with pytest.raises(ValidationError, match="starts with whitespace"):
            ops.import_path(conn, tmp_path, ImportOptions(namespace=" zoo"))
        with pytest.raises(ValidationError, match="bidi control U\\+2066"):
            add_fact(conn, FactDraft("numbats like termites", (rid,), namespace="\u2066zoo"), embed=False)
        fid = add_fact(conn, FactDraft("numbats like termites", (rid,), namespace="zoo"), embed=False).fact_id
        with pytest.raises(ValidationError, match="line break U\\+2029"):
            supersede_fact(conn, fid, "numbats love termites", namespace="zoo\u2029")
    finally:
        conn.close()


def test_a_database_holding_such_a_namespace_still_reads(db: str) -> None:
    """An older memo stored it: every read works, filters match it exactly, text output
    shows it escaped; a new version is refused like any write under that name."""
    code, out = _run("add", "the wombat burrow is under the shed", "-n", "legacy", "--db", db, "--json")
    assert code == 0, out
    rid = json.loads(out)["record_id"]
    with closing(sqlite3.connect(db)) as raw, raw:      # what an older memo wrote
        raw.execute("UPDATE records SET namespace = ? WHERE id = ?", ("a\x1bb\u202ec", rid))
    listed = json.loads(_run("list", "-n", "a\x1bb\u202ec", "--db", db, "--json")[1])
    assert [r["id"] for r in listed["records"]] == [rid]
    assert json.loads(_run("list", "-n", "legacy", "--db", db, "--json")[1])["records"] == []
    code, out = _run("search", "wombat burrow", "-n", "a\x1bb\u202ec", "--mode", "keyword", "--db", db, "--json")
    assert code == 0 and [r["record_id"] for r in json.loads(out)["results"]] == [rid], out
    code, out = _run("stats", "--db", db, "--json")
    assert code == 0 and json.loads(out)["by_namespace"] == {"a\x1bb\u202ec": 1}, out
    code, out = _run("list", "--db", db)
    assert code == 0 and "a\\x1bb" in out and "\x1b" not in out, out
    code, out = _run("get", rid, "--db", db, "--json")
    assert code == 0 and json.loads(out)["namespace"] == "a\x1bb\u202ec", out
    code, out = _run("supersede", rid, "the wombat moved", "--db", db)
    assert code == 2 and r"holds a control character U+001B" in out, out
    code, out = _run("forget", rid, "--db", db)
    assert code == 0, out
