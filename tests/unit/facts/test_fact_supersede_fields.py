"""A new version of a fact does not carry a value its text contradicts.

``fact supersede`` copied the old version's object and event date: "Bruno works as a data
engineer at Farfetch" kept ``object "chemistry teacher"`` and the old job's date, linked
the entity "chemistry teacher" to the new job's passage and filtered by the old date; the
CLI and MCP had no way to give new ones (a tester of memo as an assistant's memory)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.ops import facts as fops
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft


@pytest.fixture
def conn(backend_db):
    c = open_db(backend_db)
    yield c
    c.close()


def _fact(conn) -> str:
    ps = (PassageDraft(text="Bruno teaches chemistry at the lycée since February."),
          PassageDraft(text="Bruno joined Farfetch as a data engineer in August."))
    with write_tx(conn):
        rid = insert_record(conn, RecordDraft(body="\n".join(p.text for p in ps), kind="note", passages=ps), ps)
    return fops.add_fact(conn, FactDraft("Bruno works as a chemistry teacher", (f"{rid}:0",), subject="Bruno",
                                         predicate="job", object="chemistry teacher", event_at="2025-02-10"),
                         embed=False).fact_id


def test_a_new_text_that_no_longer_names_the_object_drops_object_and_date(conn):
    old = _fact(conn)
    rep = fops.supersede_fact(conn, old, "Bruno works as a data engineer at Farfetch")
    new = fops.get_fact(conn, rep.new_id)
    assert (new.subject, new.predicate, new.object, new.event_at) == ("Bruno", "job", None, None)
    assert rep.dropped == ("object", "event_at")


def test_a_reworded_text_that_still_names_it_keeps_both(conn):
    old = _fact(conn)
    rep = fops.supersede_fact(conn, old, "Bruno works as a Chemistry Teacher (full time)")
    new = fops.get_fact(conn, rep.new_id)
    assert (new.object, new.event_at) == ("chemistry teacher", "2025-02-10") and rep.dropped == ()


def test_given_fields_replace_the_old_ones(conn):
    old = _fact(conn)
    rep = fops.supersede_fact(conn, old, "Bruno works as a data engineer at Farfetch", object="data engineer",
                              event_at="2025-08-01", predicate="works as")
    new = fops.get_fact(conn, rep.new_id)
    assert (new.subject, new.predicate, new.object, new.event_at) == ("Bruno", "works as", "data engineer",
                                                                      "2025-08-01")
    assert rep.dropped == ()


def test_the_cli_takes_the_fields_and_says_what_it_dropped(tmp_path):
    db = tmp_path / "m.db"
    conn = open_db(db)
    old = _fact(conn)
    conn.close()
    run = CliRunner().invoke(app, ["fact", "supersede", old, "Bruno works as a data engineer at Farfetch",
                                   "--db", str(db)])
    assert run.exit_code == 0 and "--object, --event-date" in run.stderr
    new_id = run.stdout.split()[-1]
    run = CliRunner().invoke(app, ["fact", "supersede", new_id, "Bruno is a senior data engineer at Farfetch",
                                   "--object", "senior data engineer", "--event-date", "2026-01-05",
                                   "--db", str(db), "--json"])
    assert run.exit_code == 0, run.output
    doc = json.loads(run.stdout)
    assert doc["dropped"] == []
    got = fops.get_fact(open_db(db), doc["new_id"])
    assert (got.object, got.event_at) == ("senior data engineer", "2026-01-05")
