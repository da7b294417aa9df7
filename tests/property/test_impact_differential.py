"""Differential: the keyword arm ranks the same with the derived impact index as with
FTS5's own bm25 query (issue 16.2): same scores (bit for bit), same top-k up to the order
of equal scores, over random corpora and queries, under random scopes (namespaces, kinds,
forgotten and superseded records, as_of), under a random section-column weight
(``retrieve.keyword_section_weight``: FTS5's ``bm25(passages_fts, 1.0, w)``), and again
after writes (the index is stale until rebuilt, and FTS5 answers meanwhile)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.profile import load_profile
from memo.retrieve import impact
from memo.retrieve import scope as scope_module
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.route import scoped_word_df
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import read_tx, write_tx
from memo.store.db import open_db
from memo.store.derived import unindex_passages
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.types import Scope
from tests.fast_examples import examples

# Stems that collide (cell / cells, run / running / runs), capitals, diacritics, numbers,
# a stop word: the cases where query words and index tokens could part ways.
WORDS = ("cell", "cells", "cellular", "run", "running", "runs", "protein", "Protein", "café", "cafe", "naïve",
         "p53", "2024", "dna", "gene", "genes", "the", "binding", "bind", "x", "tumour", "tumor", "mouse", "mice")
NS = ("a", "b")
KINDS = ("note", "doc")

doc_st = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=25),   # text
                   st.lists(st.sampled_from(WORDS), max_size=4),                  # section
                   st.sampled_from(NS), st.sampled_from(KINDS),
                   st.sampled_from(("live", "live", "live", "forgotten", "superseded")))
query_st = st.lists(st.sampled_from((*WORDS, "absent")), min_size=1, max_size=8)
scope_st = st.tuples(st.lists(st.sampled_from(NS), max_size=1), st.lists(st.sampled_from(KINDS), max_size=1),
                     st.booleans())


# 1.0 = unweighted; the others make a section occurrence count more or less than a text one,
# and 0.1 / 1.3 are not exact sums (1.0 + 0.1 + 0.1 != 1.0 + 2 * 0.1): the order of the adds matters.
weight_st = st.sampled_from((1.0, 1.0, 2.0, 0.1, 1.3, 3.7))


def _profile(keyword_index: str, weight: float):
    return load_profile("rrf").with_overrides({"index.keyword": keyword_index,
                                               "index.impact_min_passages": 0,
                                               "retrieve.keyword_section_weight": weight})


def _hits(conn: sqlite3.Connection, query: str, scope: Scope, keyword_index: str, depth: int, weight: float):
    with read_tx(conn):
        ctx = ArmContext(conn=conn, query=query, mode="keyword", scope_sql=build_scope_sql(scope),
                         fetch_depth=depth, profile=_profile(keyword_index, weight))
        return [(h.pk, h.raw) for h in KeywordArm().run(ctx)]


def _insert(conn: sqlite3.Connection, docs, start: int) -> None:
    with write_tx(conn):
        for i, (text, section, ns, kind, state) in enumerate(docs, start):
            rid = insert_record(conn, RecordDraft(body=f"{i} " + " ".join(text), namespace=ns, kind=kind, id=f"r{i}"),
                                (PassageDraft(text=" ".join(text), section=" ".join(section)),),
                                recorded_at=f"2025-01-{1 + i % 28:02d}T00:00:00.000000Z")
            if state == "forgotten":
                conn.execute("UPDATE records SET forgotten_at = '2025-02-01T00:00:00.000000Z' WHERE id = ?", (rid,))
            elif state == "superseded":
                conn.execute("UPDATE records SET superseded_at = '2025-01-15T00:00:00.000000Z' WHERE id = ?", (rid,))


def _same(fast, slow, every) -> None:
    """Same scores in the same order; the same pks above the last score; at the last score
    (a tie cut by the limit) each side picks rows that really have that score."""
    assert [s for _, s in fast] == [s for _, s in slow]
    if not fast:
        return
    last = fast[-1][1]
    assert {p for p, s in fast if s != last} == {p for p, s in slow if s != last}
    tied = {p for p, s in every if s == last}
    assert {p for p, s in fast if s == last} <= tied and {p for p, s in slow if s == last} <= tied


def _check(conn, query_words, scope_bits, depth, weight) -> None:
    ns, kinds, as_of = scope_bits
    scope = Scope(namespaces=tuple(ns), kinds=tuple(kinds), as_of="2025-01-20" if as_of else None)
    query = " ".join(query_words)
    impact.ensure_index(conn)
    before = impact.STATS["impact"]
    fast = _hits(conn, query, scope, "impact", depth, weight)
    assert impact.STATS["impact"] == before + 1, "the impact index did not serve the search"
    slow = _hits(conn, query, scope, "fts5", depth, weight)
    every = _hits(conn, query, scope, "fts5", 10_000, weight)
    _same(fast, slow, every)
    # the entity router's word counts (route.scoped_word_df) agree too
    scope_sql = build_scope_sql(scope)
    with read_tx(conn):
        for word in dict.fromkeys(query_words):
            counted = impact.scoped_df(conn, scope_sql, word.lower())
            assert counted is not None
            impact.forget_indexes()
            assert counted == scoped_word_df(conn, word.lower(), scope_sql.where, scope_sql.params)
            impact.ensure_index(conn)
    # ties in pk order on the fast path
    for (p1, s1), (p2, s2) in zip(fast, fast[1:], strict=False):
        assert s1 > s2 or (s1 == s2 and p1 < p2)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc_st, min_size=1, max_size=40), more=st.lists(doc_st, min_size=1, max_size=8),
       queries=st.lists(st.tuples(query_st, scope_st), min_size=1, max_size=4), depth=st.integers(1, 12),
       drop=st.integers(0, 3), listed=st.booleans(), weight=weight_st)
def test_impact_index_ranks_as_fts5(docs, more, queries, depth, drop, listed, weight) -> None:
    # listed: the scope's few exclusions are listed (scope_stats.excluded); else the scope
    # is read as SQL, the plan of scopes that leave out more than EXCLUDED_MAX passages.
    saved = scope_module.EXCLUDED_MAX
    scope_module.EXCLUDED_MAX = saved if listed else -1
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "memo.db")
        try:
            impact.forget_indexes()
            _insert(conn, docs, 0)
            for words, scope_bits in queries:
                _check(conn, words, scope_bits, depth, weight)
            # Writes: the index no longer matches the snapshot, so FTS5 answers ...
            _insert(conn, more, len(docs))
            if drop:
                pks = [r[0] for r in conn.execute("SELECT pk FROM passages ORDER BY pk LIMIT ?", (drop,))]
                with write_tx(conn):
                    unindex_passages(conn, pks)
            words, scope_bits = queries[0]
            with read_tx(conn):
                assert impact.usable_index(conn, "passages_fts") is None
            # ... and once rebuilt the index agrees with FTS5 again.
            for words, scope_bits in queries:
                _check(conn, words, scope_bits, depth, weight)
        finally:
            scope_module.EXCLUDED_MAX = saved
            conn.close()
            impact.forget_indexes()
