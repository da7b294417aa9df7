"""A record superseded with changed text names the facts that now cite nothing current
(they cited only what changed): the agent was not told, and memory_fact_supersede then
copied the dead evidence silently."""

from __future__ import annotations

from memo import ops
from memo.ops import facts as fops
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft

BODY = "Melanie works at the bank downtown.\n\nCaroline adopted a beagle named Oscar."


def test_the_facts_left_without_evidence_are_named(tmp_path):
    conn = open_db(tmp_path / "m.db")
    rid = ops.add_record(conn, RecordDraft(body=BODY)).record_id
    passages = [p.id for p in ops.get(conn, rid).passages]
    assert len(passages) == 2
    job = fops.add_fact(conn, FactDraft(text="Melanie works at a bank", evidence=(passages[0],)), embed=False).fact_id
    dog = fops.add_fact(conn, FactDraft(text="Caroline has a beagle", evidence=(passages[1],)), embed=False).fact_id
    both = fops.add_fact(conn, FactDraft(text="Both have news", evidence=tuple(passages)), embed=False).fact_id

    rep = ops.supersede(conn, rid, BODY.replace("works at the bank downtown", "teaches pottery now"))
    assert rep.facts_without_evidence == (job,)          # dog: its passage is unchanged (carried); both: one is
    assert dog != job and both != job
    again = ops.supersede(conn, rep.new_id, BODY.replace("works at the bank downtown", "teaches pottery now")
                          .replace("a beagle named Oscar", "a cat"))
    assert again.facts_without_evidence == tuple(sorted((dog, both)))   # job was named by the first
    conn.close()


def test_a_fact_superseded_without_evidence_says_its_carried_evidence_is_stale(tmp_path):
    conn = open_db(tmp_path / "m.db")
    rid = ops.add_record(conn, RecordDraft(body=BODY)).record_id
    first = ops.get(conn, rid).passages[0].id
    job = fops.add_fact(conn, FactDraft(text="Melanie works at a bank", evidence=(first,)), embed=False).fact_id
    new_rid = ops.supersede(conn, rid, BODY.replace("works at the bank downtown", "teaches pottery now")).new_id
    rep = fops.supersede_fact(conn, job, "Melanie works as a pottery teacher")
    assert rep.evidence == (first,) and rep.stale_evidence == (first,)     # carried, and said so
    fresh = ops.get(conn, new_rid).passages[0].id
    rep = fops.supersede_fact(conn, rep.new_id, "Melanie teaches pottery", evidence=(fresh,))
    assert rep.stale_evidence == ()
    conn.close()
