"""The impact index where a process already holds one (issue 34.1): below
``index.impact_min_passages`` a search never *builds* the index, but one that a process
built (the eval's workers do, at start) answers the keyword arm, and it scores the entity
arm's tiebreak (``keyword_scores``), with the same doubles as FTS5's bm25 over the OR query.
Without an index, FTS5 answers and nothing is built."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.retrieve import impact
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.backend_sqlite import SqliteSearch
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import read_tx
from memo.store.db import open_db
from memo.text.fts_query import keyword_match, query_words
from memo.types import Scope
from tests.fast_examples import examples
from tests.property.test_impact_differential import WORDS, _hits, _insert, _profile, doc_st, query_st


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc_st, min_size=1, max_size=40), queries=st.lists(query_st, min_size=1, max_size=4),
       picked=st.lists(st.integers(1, 45), max_size=30))
def test_keyword_scores_from_the_index_are_fts5s(docs, queries, picked) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "m.db")
        try:
            impact.forget_indexes()
            _insert(conn, docs, 0)
            impact.ensure_index(conn)
            backend = SqliteSearch()
            for words in queries:
                query = " ".join(words)
                with read_tx(conn):
                    ctx = ArmContext(conn=conn, query=query, mode="keyword", scope_sql=build_scope_sql(Scope()),
                                     fetch_depth=10, profile=_profile("impact", 1.0))
                    match, qw = keyword_match(query), query_words(query)
                    fast = backend.keyword_scores(ctx, match, picked, qw)
                    slow = backend.keyword_scores(ctx, match, picked)        # FTS5: no words given
                    assert impact.scores_of(conn, "passages_fts", tuple(qw), set(picked)) is not None
                assert fast == slow           # same pks, same doubles
        finally:
            conn.close()
            impact.forget_indexes()


def test_a_current_index_serves_below_the_threshold_and_none_is_built_for_one() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "m.db")
        try:
            impact.forget_indexes()
            _insert(conn, [((w, "cell", "gene"), (), "a", "note", "live") for w in WORDS], 0)
            profile = _profile("impact", 1.0).with_overrides({"index.impact_min_passages": 1_000_000})

            def served_by_index(query: str) -> tuple[bool, list]:
                before = impact.STATS["impact"]
                with read_tx(conn):
                    ctx = ArmContext(conn=conn, query=query, mode="keyword", scope_sql=build_scope_sql(Scope()),
                                     fetch_depth=10, profile=profile)
                    hits = [(h.pk, h.raw) for h in KeywordArm().run(ctx)]
                return impact.STATS["impact"] == before + 1, hits

            used, fts5_hits = served_by_index("cell protein")
            assert not used                                   # no index: FTS5, and no build scheduled
            assert impact.current_index(conn) is None
            impact.ensure_index(conn)
            used, fast_hits = served_by_index("cell protein")
            assert used
            assert fast_hits == fts5_hits == _hits(conn, "cell protein", Scope(), "fts5", 10, 1.0)
        finally:
            conn.close()
            impact.forget_indexes()
