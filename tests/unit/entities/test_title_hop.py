"""Issue 29.3: the title hop.  A bridge question's second passage is the article about a
thing the first passage mentions, and shares no word with the question: the keyword arm
finds Haymo's article, which names Henry III; Henry III's article is the record titled so.
With graph.title_hits the graph arm reports it although no other arm found it (real
pipeline, SQLite; no embedding model in the unit tests, so the keyword arm's hits seed it)."""

from __future__ import annotations

from memo.graph.titles import seed_weights
from memo.ops.add import add_record
from memo.profile import load_profile
from memo.retrieve import search
from memo.retrieve.arms.graph import merge_title_hops, title_seed_lists
from memo.retrieve.arms.semantic import TypedVote
from memo.retrieve.types import ArmHit, SearchRequest
from memo.stored import RecordDraft
from memo.text.entities import title_key

ARTICLES = [
    ("Haymo of Faversham", "Haymo of Faversham was an English Franciscan friar and scholar who lectured at Paris "
                           "during the reign of Henry III of England and wrote on the liturgy."),
    ("Henry III of England", "Henry III of England ruled from 1216 to 1272; Latin and French were the written "
                             "tongues of his court and chancery."),
    ("Lester Smith", "Lester Smith designed the collectible dice game Dragon Dice for a publisher in Wisconsin."),
    ("Dragon Dice", "Dragon Dice is a collectible dice game first sold in 1995."),
]
OTHER = [f"Unrelated note number {i}: the weather was mild and the garden needed water." for i in range(8)]
QUERY = "What was the scholar friar Haymo of Faversham writing about?"


def _store(db):
    ids = [add_record(db, RecordDraft(body=text, title=title)).record_id for title, text in ARTICLES]
    for b in OTHER:
        add_record(db, RecordDraft(body=b))
    return ids


def test_the_article_a_hit_names_is_reached(fresh_db):
    ids = _store(fresh_db)
    hop = load_profile("zscore").with_overrides({"graph.title_hits": 3})
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=5), hop)
    top = [x.passage_id.split(":")[0] for x in r.results]
    assert set(top[:2]) == {ids[0], ids[1]}               # Haymo's, and Henry III's: no word of the query
    henry = next(x for x in r.results if x.passage_id.startswith(ids[1]))
    assert set(henry.why.arms) == {"graph"}               # a new candidate, not a re-rank
    assert [v.name for v in henry.why.arms["graph"].votes] == ["Henry III of England"]


def test_without_the_hop_the_article_is_not_found(fresh_db):
    ids = _store(fresh_db)
    off = load_profile("zscore").with_overrides({"graph.title_hits": 0})
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=10), off)
    assert all(not x.passage_id.startswith(ids[1]) for x in r.results)


def test_seed_weights_sum_reciprocal_ranks_over_the_lists():
    assert seed_weights([[7, 8, 9], [8, 7]], 2) == {7: 1.5, 8: 1.5}
    assert seed_weights([[7, 8, 9], []], 1) == {7: 1.0}
    assert seed_weights([], 3) == {}


def test_title_key_is_the_title_shaped_like_a_name():
    assert title_key("Carry On (franchise)") == "carry on"
    assert title_key("Extracellular vesicles for drug delivery.") is None
    assert title_key(None) is None


def test_weak_semantic_hits_seed_no_hop():
    """A semantic hit abstention rule 1 would drop (every cosine below the floor) seeds nothing."""
    sem = (ArmHit(pk=1, rank=1, raw=0.2, votes=(TypedVote(0.4),)), ArmHit(pk=2, rank=2, raw=0.25),
           ArmHit(pk=3, rank=3, raw=0.5))
    kw = (ArmHit(pk=9, rank=1, raw=3.0),)
    assert title_seed_lists({"semantic": sem, "keyword": kw}, 0.3) == [[9], [1, 3]]
    assert title_seed_lists({"semantic": sem}, None) == [[], [1, 2, 3]]


def test_hops_join_the_walk_on_its_scale():
    walked = [(0.4, 10, ("w",)), (0.1, 11, ("w",))]
    hops = [(2.0, 11, ("h",)), (1.0, 12, ("h",))]
    got = {pk: (round(raw, 6), votes) for raw, pk, votes in merge_title_hops(walked, hops)}
    assert got == {10: (0.4, ("w",)), 11: (0.5, ("w", "h")), 12: (0.2, ("h",))}
    assert merge_title_hops([], hops)[0][0] == 1.0


def test_a_long_article_is_reached_through_its_lead_only(fresh_db):
    """A document of many sections is one article: the hop reports its first passage, not
    every section (which flooded the fused list of every docs question)."""
    from memo.store.connect import write_tx
    from memo.store.records import insert_record
    from memo.stored import PassageDraft

    ids = _store(fresh_db)
    sections = ["Henry III of England was king of England from 1216 until his death in 1272.",
                "His campaigns in Poitou failed in 1242.", "Westminster Abbey was rebuilt at his cost.",
                "He married Eleanor of Provence in 1236."]
    with write_tx(fresh_db):
        long_id = insert_record(fresh_db, RecordDraft(body=" ".join(sections), title="Henry III of England",
                                                      kind="doc", namespace="default", id="henry-long"),
                                tuple(PassageDraft(text=t, section="Henry III of England") for t in sections))
    hop = load_profile("zscore").with_overrides({"graph.title_hits": 3})
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=20), hop)
    hopped = [x.passage_id for x in r.results if "graph" in x.why.arms
              and [v.name for v in x.why.arms["graph"].votes] == ["Henry III of England"]]
    assert f"{ids[1]}:0" in hopped                                  # the short article, as before
    assert [p for p in hopped if p.startswith("henry-long")] == ["henry-long:0"]   # the long one's lead only
    assert long_id is not None
