"""Entity extraction (pure) and the mention tables (migration 3): written in the add's
transaction, rebuilt by reindex, removed on forget / fact forget / supersede."""

from __future__ import annotations

from memo.ops.add import add_record
from memo.ops.facts import add_fact, forget_facts, supersede_fact
from memo.ops.maintenance import reindex
from memo.ops.records import forget, purge
from memo.text.entities import entity_key, extract
from memo.types import FactDraft, RecordDraft


def keys(text: str, **kw) -> dict[str, str]:
    return {m.key: m.kind for m in extract(text, **kw)}


def test_names_and_function_words():
    got = keys("Caroline: I went to the LGBTQ support group with Melanie. Yesterday it was great! "
               "What did John Smith's dog do? We saw the Lord of the Rings in New York in May.")
    assert got == {"caroline": "name", "lgbtq": "name", "melanie": "name", "john smith": "name",
                   "lord of the rings": "name", "new york": "name"}


def test_markers_identifiers_speaker_explicit():
    got = keys("ping @bob_smith about #python and [[Project X|px]]; ERR_CONN_RESET in net/http, "
               "not well-being nor e.g. this", speaker="Ann", explicit=["Acme Corp"])
    assert got == {"ann": "speaker", "acme corp": "explicit", "project x": "wiki", "bob_smith": "handle",
                   "python": "tag", "err_conn_reset": "identifier", "net/http": "identifier"}


def test_counts_and_keys():
    (m,) = extract("Paris and Paris and PARIS")
    assert (m.key, m.count) == ("paris", 3)
    assert entity_key("  New\u00a0 York. ") == "new york"


def mentions(conn) -> set[tuple[str, str]]:
    return {(r[0], r[1]) for r in conn.execute(
        "SELECT p.id, e.key FROM mentions m JOIN passages p ON p.pk = m.passage_pk "
        "JOIN entities e ON e.pk = m.entity_pk")}


def test_mentions_written_rebuilt_and_removed(fresh_db):
    conn = fresh_db
    a = add_record(conn, RecordDraft(body="Alice met Bob in Paris.", meta={"entities": ["Project Z"]})).record_id
    b = add_record(conn, RecordDraft(body="Bob moved to Berlin.")).record_id
    before = mentions(conn)
    assert {(f"{a}:0", "alice"), (f"{a}:0", "bob"), (f"{a}:0", "paris"), (f"{a}:0", "project z"),
            (f"{b}:0", "bob"), (f"{b}:0", "berlin")} == before
    assert {r[0] for r in conn.execute("SELECT alias FROM entity_aliases")} >= {"alice", "project z"}
    # a fact adds its subject/object/names to its evidence passages
    fid = add_fact(conn, FactDraft(text="Bob works for Initech", evidence=(f"{b}:0",), subject="Bob",
                                   object="Initech"), embed=False).fact_id
    assert (f"{b}:0", "initech") in mentions(conn)
    # reindex rebuilds the same rows
    reindex(conn)
    assert mentions(conn) == before | {(f"{b}:0", "initech")}
    # superseding the fact drops its mentions (the new version brings its own)
    new = supersede_fact(conn, fid, "Bob works for Globex", object="Globex").new_id
    got = mentions(conn)
    assert (f"{b}:0", "globex") in got and (f"{b}:0", "initech") not in got
    forget_facts(conn, [new])
    assert (f"{b}:0", "globex") not in mentions(conn)
    # forgetting a record drops its mentions; reindex does not bring them back; purge is clean
    epoch = conn.execute("SELECT value FROM memo_meta WHERE key = 'mentions_epoch'").fetchone()[0]
    forget(conn, [a])
    assert not any(pid.startswith(a) for pid, _ in mentions(conn))
    assert conn.execute("SELECT value FROM memo_meta WHERE key = 'mentions_epoch'").fetchone()[0] != epoch
    reindex(conn)
    assert not any(pid.startswith(a) for pid, _ in mentions(conn))
    purge(conn)
    assert mentions(conn) == {(f"{b}:0", "bob"), (f"{b}:0", "berlin")}
