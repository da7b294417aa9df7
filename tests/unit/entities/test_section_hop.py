"""The section hop (extra graph_sections): a docs question names one API; its section
mentions a method of the object it returns, and the answer is that method's own section,
which shares no word with the question.  With graph.section_hits the graph arm reports it
although no other arm found it (real pipeline, SQLite; no embedding model in the unit tests,
so the keyword arm's hits seed it)."""

from __future__ import annotations

import numpy as np
import pytest

from memo.graph import titles
from memo.graph.cache import mention_graph
from memo.graph.sections import SECTIONS, section_index, section_subject
from memo.profile import load_profile
from memo.retrieve import search
from memo.retrieve.types import SearchRequest
from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

CRYPTO = [
    ("Crypto > crypto.createHmac(algorithm, key[, options])",
     "crypto.createHmac creates and returns an Hmac object for the given algorithm and key. "
     "Call hmac.update() with the data, then hmac.digest() for the code."),
    ("Crypto > Class: Hmac", "Instances of the Hmac class are created with crypto.createHmac."),
    ("Crypto > Class: Hmac > hmac.update(data[, inputEncoding])",
     "Updates the content with the given data; it can be called many times with new data as it is streamed."),
    ("Crypto > Class: Hmac > hmac.update(data[, inputEncoding])", "- inputEncoding {string} The encoding of data."),
    ("Crypto > Class: Hmac > hmac.digest([encoding])", "Calculates the digest of all of the data passed."),
]
OTHER = [f"Unrelated note number {i}: the weather was mild and the garden needed water." for i in range(8)]
QUERY = "createHmac algorithm key"


def _store(db) -> str:
    with write_tx(db):
        rid = insert_record(db, RecordDraft(body=" ".join(t for _, t in CRYPTO), title="Crypto", kind="doc",
                                            namespace="default", id="crypto-doc"),
                            tuple(PassageDraft(text=t, section=s) for s, t in CRYPTO))
        for i, b in enumerate(OTHER):
            insert_record(db, RecordDraft(body=b, kind="note", namespace="default", id=f"n{i}"),
                          (PassageDraft(text=b),))
    return rid


@pytest.mark.parametrize(("heading", "subject"), [
    ("Crypto > Class: Hmac > hmac.update(data[, inputEncoding])", "hmac.update"),
    ("Stream > Class: stream.Readable", "stream.readable"),
    ("Buffer > Static method: Buffer.from(array)", "buffer.from"),
    ("Net > new net.Server([options][, connectionListener])", "net.server"),
    ("posixpath.abspath", "posixpath.abspath"),
    ("Stream > Class: stream.Readable > Event: 'end'", None),      # an event names no entity
    ("GIT v1.5.0.1 Release Notes > Fixes since v1.5.0", None),      # the version is not the subject
    ("The Dukes of Hazzard II: Daisy Dukes It Out", None),           # a title's colon is not a label
    ("Microstructural development of human newborn cerebral white matter.", None),
    ("install > using the cli", None),
    ("", None),
])
def test_the_subject_is_what_the_last_heading_starts_with(heading, subject):
    assert section_subject(heading) == subject


def test_the_method_a_hit_names_is_reached_through_its_own_section(fresh_db):
    _store(fresh_db)
    hop = load_profile("zscore").with_overrides({"graph.section_hits": 3})
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=10), hop)
    got = {x.passage_id: x for x in r.results}
    update = got.get("crypto-doc:2")
    assert update is not None                                   # hmac.update's section, its lead
    assert set(update.why.arms) == {"graph"}                    # a new candidate, not a re-rank
    assert [v.name for v in update.why.arms["graph"].votes] == ["hmac.update"]
    assert "crypto-doc:3" not in got                            # the section's lead only
    off = load_profile("zscore").with_overrides({"graph.section_hits": 0})
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=10), off)
    assert "crypto-doc:2" not in {x.passage_id for x in r.results}


def test_the_section_index_kept_up_to_date_equals_one_computed_afresh(fresh_db):
    """After a write the index is brought up to date with the new passages only; it must
    equal the one computed over the whole graph (as the title index's test holds)."""
    _store(fresh_db)
    titles.forget_title_indexes()
    first = section_index(fresh_db, mention_graph(fresh_db))
    assert (first.of_passage >= 0).sum() == 4      # Class: Hmac, hmac.update x2, hmac.digest
    with write_tx(fresh_db):
        insert_record(fresh_db, RecordDraft(body="x", title="Zlib", kind="doc", namespace="default", id="zlib"),
                      (PassageDraft(text="Creates a Gzip object; see hmac.update for hashing.",
                                    section="Zlib > zlib.createGzip([options])"),
                       PassageDraft(text="Gzip compresses data.", section="Zlib > Class: zlib.Gzip")))
    graph = mention_graph(fresh_db)
    updated = section_index(fresh_db, graph)
    fresh, _ = titles._of_passage(fresh_db, graph, np.arange(len(graph.passage_pks)), SECTIONS)
    assert np.array_equal(updated.of_passage, fresh)
    assert (fresh >= 0).sum() == 6
    titles.forget_title_indexes()


def test_the_indexes_are_kept_in_sidecars_once_the_graph_has_enough_passages(tmp_path):
    """index.subject_sidecar_min: a graph of that many passages keeps its title and section
    indexes beside the database (a docs database of 12.6k passages spent ~75 ms of every new
    process's first search on its section index); a new process maps them, same hits."""
    from memo.graph.cache import forget_graphs
    from memo.graph.sidecar import subject_path
    from memo.store.db import open_db

    def fresh_process_search(path, sidecar_min):
        forget_graphs()
        titles.forget_title_indexes()
        conn = open_db(path, write=False)
        prof = load_profile("zscore").with_overrides({"graph.section_hits": 3,
                                                      "index.subject_sidecar_min": sidecar_min})
        try:
            return [x.passage_id for x in search(conn, SearchRequest(QUERY, limit=10), prof).results]
        finally:
            conn.close()

    small, kept = tmp_path / "small.db", tmp_path / "kept.db"
    for path in (small, kept):
        conn = open_db(path)
        _store(conn)
        conn.close()
    n = 5 + len(OTHER)
    computed = fresh_process_search(small, n + 1)               # one passage short: nothing written
    assert not subject_path(small, "sections").exists() and not subject_path(small, "titles").exists()
    assert fresh_process_search(kept, n) == computed            # computed, then written
    assert subject_path(kept, "sections").exists() and subject_path(kept, "titles").exists()
    assert fresh_process_search(kept, n) == computed            # mapped
    assert all(index.unresolved is None for index in titles._LAST.values())    # as mapped indexes are
    assert "crypto-doc:2" in computed
    titles.forget_title_indexes()
    forget_graphs()
