"""Routing (0, 1 plain, 1 relational, 2+ entities), PageRank against hand-computed
values, the graph arm never reporting a passage every seed mentions, forget/supersede
removing passages from both arms at once."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from memo.graph.ppr import personalized_pagerank, push_walk, transitions
from memo.ops.add import add_record
from memo.ops.records import forget, supersede
from memo.profile import load_profile
from memo.retrieve import search
from memo.retrieve.route import (
    QueryEntity,
    coverage,
    decide,
    ignored_because,
    longest_matches,
    query_words,
    term_shaped,
)
from memo.retrieve.types import SearchRequest
from memo.stored import RecordDraft
from memo.types import Scope

CUES = ("with", "who", "between")


def qe(key: str, common: bool = False) -> QueryEntity:
    return QueryEntity(hash(key) % 1000, key, key.title(), key, 3, common)


@pytest.mark.parametrize(("ents", "cue", "fired", "rule"), [
    ((), None, False, None),
    ((qe("alice"),), None, False, None),
    ((qe("alice"),), "with", True, "1 entity + relational cue"),
    ((qe("alice"), qe("paris")), None, True, "2+ entities"),
    ((qe("alice"), qe("bob", common=True)), None, False, None),     # a common entity does not count
    ((qe("bob", common=True),), "with", False, None),
])
def test_routing_rule(ents, cue, fired, rule):
    r = decide(ents, cue)
    assert (r.fired, r.rule) == (fired, rule)
    assert r.reason.startswith("routed" if fired else "not routed")
    for e in ents:
        assert e.key in r.reason


def test_entities_that_do_not_count():
    # a name the corpus also writes in lower case is a common word ("Patients" at a sentence start)
    assert ignored_because("name", "Patients", 40, 5000, 900, name_share=0.8, identifier_share=0.001) == "common word"
    assert ignored_because("name", "Caroline", 40, 5000, 41, name_share=0.8, identifier_share=0.001) is None
    assert ignored_because("name", "New York", 9, 5000, 10, name_share=0.8, identifier_share=0.001) is None
    # identifiers and term-shaped names count for routing only when rare
    assert ignored_because("identifier", "ERR_X", 60, 5000, None, name_share=0.8, identifier_share=0.001) \
        == "frequent identifier"
    assert ignored_because("identifier", "APOE4", 3, 5000, None, name_share=0.8, identifier_share=0.001) is None
    assert ignored_because("name", "DNA", 400, 5000, 400, name_share=0.8, identifier_share=0.001) \
        == "frequent identifier"
    assert [term_shaped(n) for n in ("DNA", "E4", "N-cadherin", "Caroline", "New York", "I")] == \
        [True, True, True, False, False, False]
    # speakers, explicit entities ... are only subject to the common rule
    assert ignored_because("speaker", "Mel", 400, 500, None, name_share=0.8, identifier_share=0.001) is None
    # counted entity words must cover min_query_share of the query's content words
    ents = (qe("alice"), qe("paris"))
    words = query_words("did alice and bob visit paris after the long winter of quiet work")
    share = coverage(words, ents)
    assert 0 < share < 0.34
    assert not decide(ents, None, share, 0.34).fired
    assert decide(ents, None, share, 0.2).fired
    assert "under 34%" in decide(ents, None, share, 0.34).reason


def test_longest_match_and_words():
    words = query_words("Did Alice visit New York City's #museum with @Bob?")
    assert words == ["did", "alice", "visit", "new", "york", "city", "museum", "with", "bob"]
    known = {"new york": [(1, "new york", "New York")], "new york city": [(2, "new york city", "NYC")],
             "alice": [(3, "alice", "Alice")], "with": [(4, "with", "With")]}
    got = [g for g, _ in longest_matches(words, known, 5)]
    assert got == ["alice", "new york city"]       # longest wins; a common word never matches


def graph(edges, n_p, n_e):
    rows, cols = zip(*edges, strict=True)
    W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_p, n_e))
    return W, W.T.tocsr()


def test_ppr_hand_computed_two_nodes():
    # Seed entity e mentioned by one passage p: x_e = (1-d) + d x_p, x_p = d x_e
    # => x_e = 1/(1+d), x_p = d/(1+d); d = 0.5 -> 2/3, 1/3.
    W, WT = graph([(0, 0)], 1, 1)
    w = personalized_pagerank(W, WT, [0], np.ones(1, bool), np.ones(1, bool), damping=0.5,
                              iterations=200, tolerance=1e-12)
    assert w.entities[0, 0] == pytest.approx(2 / 3, abs=1e-9)
    assert w.passages[0, 0] == pytest.approx(1 / 3, abs=1e-9)


def test_ppr_hand_computed_chain_and_mask():
    # e0 - p0 - e1 - p1 (p0 mentions e0, e1; p1 mentions e1).  Seed e0, d = 0.5:
    #   x_p0 = d (x_e0 + x_e1 / 2);  x_e1 = d (x_p0 / 2 + x_p1);  x_p1 = d x_e1 / 2
    #   x_e0 = (1 - d) + d x_p0 / 2          (no dangling node)
    # By hand: x_e1 = 2/7 x_p0, x_p0 = 7/13 x_e0, x_e0 = 26/45 -> (26, 4, 14, 1) / 45.
    W, WT = graph([(0, 0), (0, 1), (1, 1)], 2, 2)
    d = 0.5
    w = personalized_pagerank(W, WT, [0], np.ones(2, bool), np.ones(2, bool), damping=d,
                              iterations=500, tolerance=1e-14)
    # nodes: e0, e1, p0, p1; column-stochastic T
    T = np.array([[0, 0, .5, 0], [0, 0, .5, 1], [1, .5, 0, 0], [0, .5, 0, 0]])
    x = np.linalg.solve(np.eye(4) - d * T, (1 - d) * np.array([1, 0, 0, 0]))
    got = [w.entities[0, 0], w.entities[1, 0], w.passages[0, 0], w.passages[1, 0]]
    assert np.allclose(got, np.array([26, 4, 14, 1]) / 45, atol=1e-10)
    assert np.allclose(got, x, atol=1e-10)
    assert sum(x) == pytest.approx(1.0)
    # mask p1 out: the walk never enters it, e1 becomes a dead end (mass goes back to the seed)
    w2 = personalized_pagerank(W, WT, [0], np.array([True, False]), np.ones(2, bool), damping=d,
                               iterations=500, tolerance=1e-14)
    assert w2.passages[1, 0] == 0.0
    assert w2.passages.sum() + w2.entities.sum() == pytest.approx(1.0)


def test_push_matches_exact_within_its_bound():
    # the hand-computed chain: every estimate below the exact mass by less than eps * degree
    W, WT = graph([(0, 0), (0, 1), (1, 1)], 2, 2)
    t = transitions(W, WT, np.ones(2, bool), np.ones(2, bool))
    exact = np.array([26, 4, 14, 1]) / 45
    for eps in (1e-3, 1e-6, 1e-9):
        w = push_walk(t, [0], damping=0.5, epsilon=eps)
        got = np.array([w.entities[0, 0], w.entities[1, 0], w.passages[0, 0], w.passages[1, 0]])
        degree = np.array([1, 2, 2, 1])
        assert np.all(got <= exact + 1e-15) and np.all(exact - got < eps * degree)
    # a random bipartite graph with masks and two seeds: same top-10 passages as the exact walk
    rng = np.random.default_rng(3)
    n_p, n_e = 300, 80
    edges = sorted({(int(p), int(e)) for p in range(n_p) for e in rng.choice(n_e, size=3, replace=False)})
    W, WT = graph(edges, n_p, n_e)
    p_mask = rng.random(n_p) > 0.2
    e_mask = np.ones(n_e, bool)
    e_mask[[5, 6]] = False
    t = transitions(W, WT, p_mask, e_mask)
    exact = personalized_pagerank(W, WT, [1, 2], p_mask, e_mask, damping=0.5, iterations=1000, tolerance=1e-14)
    approx = push_walk(t, [1, 2], damping=0.5, epsilon=1e-7)
    assert not approx.passages[~p_mask].any()
    for j in range(2):
        assert list(np.argsort(-exact.passages[:, j], kind="stable")[:10]) == \
            list(np.argsort(-approx.passages[:, j], kind="stable")[:10])
        assert np.abs(exact.passages[:, j] - approx.passages[:, j]).max() < 1e-7 * 10


BODIES = ["Alice works at Initech with Bob.", "Bob lives in Paris.", "Paris has the Louvre.",
          "Carol met Alice in Berlin.", "Alice and Bob went to Paris together.", "Nothing here."]


def arm_pks(conn, query, arm, scope=Scope(), profile="rrf"):
    r = search(conn, SearchRequest(query, scope=scope, response_format="explain", limit=100), profile)
    return {x.passage_id.split(":")[0] for x in r.results if arm in x.why.arms}, r


def test_graph_never_reports_a_passage_every_seed_mentions(fresh_db):
    ids = [add_record(fresh_db, RecordDraft(body=b)).record_id for b in BODIES]
    got, r = arm_pks(fresh_db, "Alice and Paris", "graph")
    trace = {a.name: a for a in r.trace.arms}
    assert trace["graph"].ran and trace["entity"].ran
    assert ids[4] not in got                   # mentions both seeds
    assert ids[1] in got and ids[0] in got     # each mentions one seed
    for res in r.results:
        g = res.why.arms.get("graph")
        if g is not None:
            total = 0.0
            for v in g.votes:
                total += v.mass
            assert total == g.raw              # the walks' contributions reproduce raw exactly


def test_entity_arm_needs_co_mention_and_ranks_by_idf(fresh_db):
    ids = [add_record(fresh_db, RecordDraft(body=b)).record_id for b in BODIES]
    two = load_profile("rrf").with_overrides({"entities.min_shared": 2})    # the extra min_shared
    got, r = arm_pks(fresh_db, "Alice and Paris", "entity", profile=two)
    assert got == {ids[4]}                     # min_shared 2: only the passage naming both
    one = load_profile("rrf").with_overrides({"entities.min_shared": 1})
    got, r = arm_pks(fresh_db, "Alice and Paris", "entity", profile=one)
    hits = sorted((x.why.arms["entity"].rank, x.passage_id.split(":")[0], x.why.arms["entity"].raw)
                  for x in r.results if "entity" in x.why.arms)
    assert hits[0][1] == ids[4]                # both entities: the largest idf sum
    assert [h[2] for h in hits] == sorted((h[2] for h in hits), reverse=True)


def test_forget_and_supersede_leave_both_arms_at_once(fresh_db):
    ids = [add_record(fresh_db, RecordDraft(body=b)).record_id for b in BODIES]
    one = load_profile("rrf").with_overrides({"entities.min_shared": 1})
    ent, _ = arm_pks(fresh_db, "Alice and Paris", "entity", profile=one)
    gr, _ = arm_pks(fresh_db, "Alice and Paris", "graph")
    assert ids[1] in ent and ids[1] in gr and ids[3] in ent
    forget(fresh_db, [ids[1]])
    new = supersede(fresh_db, ids[3], "Carol met Dave in Berlin.").new_id
    ent, _ = arm_pks(fresh_db, "Alice and Paris", "entity", profile=one)
    gr, _ = arm_pks(fresh_db, "Alice and Paris", "graph")
    for gone in (ids[1], ids[3]):
        assert gone not in ent and gone not in gr
    assert new not in ent
    # as_of before the supersede still sees the old version (its mentions are kept)
    old, _ = arm_pks(fresh_db, "Alice and Paris", "entity", Scope(as_of="2999-01-01"), profile=one)
    assert ids[3] not in old                   # superseded before 2999: hidden as_of then too


def test_entity_df_from_the_mentions_index_equals_the_joined_count(db_path):
    """Differential: the fast count (mentions index minus the scope's excluded passages)
    and the join through passages and records agree, scoped, forgotten and superseded."""
    from memo import ops
    from memo.retrieve.route import entity_df
    from memo.retrieve.scope import build_scope_sql
    from memo.store.db import open_db
    from memo.store.mentions import scoped_df
    from memo.stored import RecordDraft
    from memo.types import Scope

    conn = open_db(db_path, write=True)
    ids = [ops.add_record(conn, RecordDraft(body=f"Alice met Bob in Paris, note {i}", namespace=ns)).record_id
           for i, ns in enumerate(["a", "a", "b", "b", "b"])]
    ops.add_record(conn, RecordDraft(body="Bob alone in Rome", namespace="a"))
    ops.forget(conn, [ids[0]])
    ops.supersede(conn, ids[2], "Carol met Bob in Paris")
    pks = [r[0] for r in conn.execute("SELECT pk FROM entities")]
    for scope in (Scope(), Scope(namespaces=("a",)), Scope(namespaces=("b",))):
        sql = build_scope_sql(scope)
        assert entity_df(conn, pks, sql.where, sql.params) == scoped_df(conn, pks, sql.where, sql.params)
    # no scope at all (a condition that is true on both backends: PostgreSQL's WHERE takes no integer)
    assert entity_df(conn, pks, "1 = 1", ()) == scoped_df(conn, pks, "1 = 1", ())


def test_scoped_mentions_counted_first_equal_the_filtered_join(db_path):
    """Differential: with ``min_entities`` the passages are counted on the mentions index
    before the scope's join; the pairs are those of the plain join less the passages naming
    fewer of the entities, scoped, forgotten and superseded, on both backends."""
    from memo import ops
    from memo.retrieve.scope import build_scope_sql
    from memo.store.db import open_db
    from memo.store.mentions import scoped_mentions

    conn = open_db(db_path, write=True)
    bodies = ["Alice met Bob in Paris.", "Alice and Bob.", "Bob in Paris.", "Alice alone.",
              "Carol met Alice and Bob in Rome.", "Paris, Rome and Berlin with Carol."]
    ids = [ops.add_record(conn, RecordDraft(body=b, namespace=("a", "b")[i % 2])).record_id
           for i, b in enumerate(bodies * 2)]
    ops.forget(conn, [ids[0]])
    ops.supersede(conn, ids[7], "Bob met Carol in Berlin.")
    pks = [r[0] for r in conn.execute("SELECT pk FROM entities ORDER BY pk")]
    assert len(pks) >= 5
    seen = set()
    for scope in (Scope(), Scope(namespaces=("a",)), Scope(namespaces=("b",))):
        sql = build_scope_sql(scope)
        for ents in (pks, pks[:2], pks[1:4], pks[::2]):
            plain = scoped_mentions(conn, ents, sql.where, sql.params)
            for k in (2, 3, 4):
                per: dict[int, set[int]] = {}
                for ppk, epk in plain:
                    per.setdefault(ppk, set()).add(epk)
                want = sorted(pair for pair in plain if len(per[pair[0]]) >= k)
                got = sorted(scoped_mentions(conn, ents, sql.where, sql.params, min_entities=k))
                assert got == want, (scope, ents, k)
                seen.add(bool(want))
    assert seen == {True, False}               # some choices keep passages, some keep none


def test_a_seed_the_walk_masks_out_starts_no_walk_and_breaks_nothing(fresh_db, monkeypatch):
    """A routed entity the graph's transitions mask out (no allowed passage, or common by
    the graph's own count) used to shift the walks' columns against the seeds: the arm's
    vote for the second seed read column 1 of a one-column mass (IndexError in the suite's
    LoCoMo replay under the seed's profile).  Now such a seed starts no walk."""
    import memo.graph.ppr as ppr

    for b in BODIES:
        add_record(fresh_db, RecordDraft(body=b))
    real = ppr.transitions

    def mask_first_routed(W, WT, p_mask, e_mask):
        t = real(W, WT, p_mask, e_mask)
        alice = next(i for i, ok in enumerate(t.entity_mask) if ok)     # mask out one walkable entity
        t.entity_mask[alice] = False
        return t

    monkeypatch.setattr(ppr, "transitions", mask_first_routed)
    got, r = arm_pks(fresh_db, "Alice and Paris", "graph")      # must not raise
    for res in r.results:
        g = res.why.arms.get("graph")
        if g is not None:
            assert all(v.mass >= 0 for v in g.votes)
