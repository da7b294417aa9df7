"""Near-identical facts at write time (issue 32; memo.ops.near_dup.find_near_fact): the same
fact added twice by an agent with small edits is linked (default) or skipped and reported,
on add and on import (against live facts and earlier facts of the same import); never
across namespaces; exact duplicates still skipped by the dedup index.  Both backends."""

from __future__ import annotations

import json

import pytest

from memo.ops import add_record
from memo.ops.facts import add_fact, import_facts
from memo.profile import load_profile
from memo.stored import FactDraft, RecordDraft

FACT = "Alice moved from Boston to Denver in March 2023 to join the robotics team."
EDITED = "Alice moved from Boston to Denver in March 2023 to join the robotics group."
OTHER = "Bob adopted a grey cat called Miso after visiting the shelter twice."
SKIP = {"index.near_duplicates": "skip"}


@pytest.fixture
def ev(fresh_db) -> tuple[str, str]:
    a = add_record(fresh_db, RecordDraft(body="Alice: I'm moving to Denver next month for the robotics job."))
    b = add_record(fresh_db, RecordDraft(body="Bob: we finally adopted Miso, the grey cat from the shelter."))
    return a.record_id, b.record_id


def _prof(**over: str):
    return load_profile("zscore").with_overrides(over, name="t") if over else None


def _live(conn) -> int:
    return conn.execute("SELECT count(*) FROM facts WHERE forgotten_at IS NULL AND superseded_at IS NULL"
                        ).fetchone()[0]


def test_a_near_identical_fact_is_stored_and_linked(fresh_db, ev) -> None:
    first = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    second = add_fact(fresh_db, FactDraft(text=EDITED, evidence=(ev[0],)), embed=False)
    assert second.status == "added" and second.near_duplicate_of == first.fact_id
    assert second.near_similarity >= load_profile("zscore").index.near_min and "near-identical" in second.note
    meta = json.loads(fresh_db.execute("SELECT meta FROM facts WHERE id = ?", (second.fact_id,)).fetchone()[0])
    assert meta["near_duplicate_of"] == first.fact_id
    assert _live(fresh_db) == 2                                  # nothing lost
    third = add_fact(fresh_db, FactDraft(text=OTHER, evidence=(ev[1],)), embed=False)
    assert third.near_duplicate_of is None and third.note is None


def test_skip_reports_and_stores_nothing(fresh_db, ev) -> None:
    first = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    second = add_fact(fresh_db, FactDraft(text=EDITED, evidence=(ev[1],)), embed=False, profile=_prof(**SKIP))
    assert second.status == "skipped" and second.fact_id == first.fact_id
    assert second.near_duplicate_of == first.fact_id and "memo fact supersede" in second.note
    assert _live(fresh_db) == 1


def test_same_text_other_evidence_is_linked_and_exact_duplicates_skip(fresh_db, ev) -> None:
    first = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    again = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    assert again.status == "skipped" and again.fact_id == first.fact_id and again.near_duplicate_of is None
    other = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[1],)), embed=False)
    assert other.status == "added" and other.near_duplicate_of == first.fact_id and other.near_similarity == 1.0


def test_off_and_other_namespaces_do_not_link(fresh_db, ev) -> None:
    add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    off = add_fact(fresh_db, FactDraft(text=EDITED, evidence=(ev[0],)), embed=False,
                   profile=_prof(**{"index.near_duplicates": "off"}))
    assert off.status == "added" and off.near_duplicate_of is None
    rid = add_record(fresh_db, RecordDraft(body="Alice moved to Denver.", namespace="work")).record_id
    there = add_fact(fresh_db, FactDraft(text=FACT + " Again.", evidence=(rid,), namespace="work"), embed=False)
    assert there.near_duplicate_of is None


def test_import_links_or_skips_against_live_facts_and_its_own_earlier_lines(fresh_db, ev) -> None:
    live = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    items = [("line 1", FactDraft(text=EDITED, evidence=(ev[0],))),                 # near the live fact
             ("line 2", FactDraft(text=OTHER, evidence=(ev[1],))),
             ("line 3", FactDraft(text=OTHER.replace("twice", "two times"), evidence=(ev[1],)))]  # near line 2
    rep = import_facts(fresh_db, items, embed=False)
    assert rep.added == 3 and rep.skipped == 0
    near = {n.where: n for n in rep.near_duplicates}
    assert set(near) == {"line 1", "line 3"}
    assert near["line 1"].near_duplicate_of == live.fact_id and near["line 1"].fact_id == rep.fact_ids[0]
    assert near["line 3"].near_duplicate_of == rep.fact_ids[1]


def test_import_under_skip_stores_none_of_them_and_lists_them(fresh_db, ev) -> None:
    live = add_fact(fresh_db, FactDraft(text=FACT, evidence=(ev[0],)), embed=False)
    items = [("line 1", FactDraft(text=EDITED, evidence=(ev[0],))),
             ("line 2", FactDraft(text=OTHER, evidence=(ev[1],))),
             ("line 3", FactDraft(text=OTHER + " Yes.", evidence=(ev[1],)))]
    rep = import_facts(fresh_db, items, embed=False, profile=_prof(**SKIP))
    assert rep.added == 1 and rep.skipped == 2 and _live(fresh_db) == 2
    assert [(n.where, n.fact_id, n.near_duplicate_of) for n in rep.near_duplicates] == [
        ("line 1", None, live.fact_id), ("line 3", None, rep.fact_ids[0])]
