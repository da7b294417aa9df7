"""Entity extraction (pure) and the mention tables (migration 3): written in the add's
transaction, rebuilt by reindex, removed on forget / fact forget / supersede."""

from __future__ import annotations

from memo.ops.add import add_record
from memo.ops.facts import add_fact, forget_facts, supersede_fact
from memo.ops.maintenance import reindex
from memo.ops.records import forget, purge
from memo.stored import FactDraft, RecordDraft
from memo.text.entities import entity_key, extract, extract_record


def keys(text: str, **kw) -> dict[str, str]:
    return {m.key: m.kind for m in extract(text, **kw)}


def test_names_and_function_words():
    got = keys("Caroline: I went to the LGBTQ support group with Melanie. Yesterday it was great! "
               "What did John Smith's dog do? We saw the Lord of the Rings in New York in May.")
    # "Caroline" only starts a sentence here: kind "initial" (a name once the store sees it as one)
    assert got == {"caroline": "initial", "lgbtq": "name", "melanie": "name", "john smith": "name",
                   "lord of the rings": "name", "new york": "name"}
    assert keys("Caroline met Melanie. Then Caroline left.", speaker="Caroline")["caroline"] == "speaker"


def test_sentence_initial_words_need_the_record_or_the_store():
    """Issue 29.1: a capitalised word that only starts sentences is not a name ("Unrelated
    note ..."); one the record also writes inside a sentence, its title or a speaker is;
    a sentence-initial common word is not part of a multi-word name."""
    assert keys("Unrelated note number 3: the weather was mild.") == {"unrelated": "initial"}
    assert keys("Paris is large. We went to Paris.") == {"paris": "name"}
    assert keys("When Alice Moreau arrived, everyone cheered.") == {"alice moreau": "name"}
    (first, second) = extract_record(["Gallu is a demon.", "Lilu is another. Gallu and Lilu met."], title="Gallu")
    assert {m.key: m.kind for m in first} == {"gallu": "name"}
    assert {m.key: m.kind for m in second} == {"gallu": "name", "lilu": "name"}


def test_title_heading_and_surname_aliases():
    (p,) = extract_record(["Moreau wrote the release notes. Alice Moreau's team shipped it."],
                          title="Kestrel DB", headings=["Storage Engines > net/http"])
    got = {m.key: m.count for m in p}
    assert got["kestrel db"] == 1 and got["alice moreau"] == 2      # the surname alone is her
    assert "moreau" not in got and got["storage engines"] == 1 and got["net/http"] == 1   # the heading path
    # two names share the surname in the record: "Smith" alone stays ambiguous (linked to neither)
    (q,) = extract_record(["Smith arrived. John Smith and Jane Smith left."])
    assert {m.key: m.kind for m in q}["smith"] == "name"          # its own entity, not either full name


def test_initial_entities_are_confirmed_by_a_later_mention(fresh_db):
    add_record(fresh_db, RecordDraft(body="Bob lives in Paris with Carol."))
    kind = dict(fresh_db.execute("SELECT key, kind FROM entities").fetchall())
    assert kind["bob"] == "initial"
    add_record(fresh_db, RecordDraft(body="Alice met Bob in Paris."))
    kind = dict(fresh_db.execute("SELECT key, kind FROM entities").fetchall())
    assert kind["bob"] == "name"


def test_markers_identifiers_speaker_explicit():
    got = keys("ping @bob_smith about #python and [[Project X|px]]; ERR_CONN_RESET in net/http, "
               "not well-being nor e.g. this", speaker="Ann", explicit=["Acme Corp"])
    assert got == {"ann": "speaker", "acme corp": "explicit", "project x": "wiki", "bob_smith": "handle",
                   "python": "tag", "err_conn_reset": "identifier", "net/http": "identifier"}


def test_dotted_words_are_identifiers_unless_abbreviations_or_run_on_sentences():
    """Names of code and of the web are dotted lowercase words (issue 29.1, a code-docs
    sample in bench/entity_extraction): they link the sections that name them."""
    got = keys("see stream.Readable and os.path.join, clinicaltrials.gov and Node.js; "
               "the airport.The end, e.g. this, i.e. that, well-being.")
    assert got == {"stream.readable": "identifier", "os.path.join": "identifier",
                   "clinicaltrials.gov": "identifier", "node.js": "identifier"}


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


def test_reindex_gives_a_forgotten_records_passages_no_fact_mentions(fresh_db):
    """A live fact citing a record forgotten since: ``forget`` dropped the fact's mentions on
    that record's passages, and ``memo reindex`` wrote them back (a forgotten text named in
    the entity graph again), as did an import of an export holding both."""
    conn = fresh_db
    a = add_record(conn, RecordDraft(body="Bob moved to Berlin.")).record_id
    b = add_record(conn, RecordDraft(body="Bob works in an office near the river.")).record_id
    add_fact(conn, FactDraft(text="Bob works for Initech", evidence=(f"{a}:0", f"{b}:0"), subject="Bob",
                             object="Initech"), embed=False)
    forget(conn, [a])
    after_forget = mentions(conn)
    assert not any(pid.startswith(a) for pid, _ in after_forget) and (f"{b}:0", "initech") in after_forget
    reindex(conn)
    assert mentions(conn) == after_forget
