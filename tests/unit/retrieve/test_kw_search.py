"""The keyword arm over the persistent postings (memo.retrieve.kw_search, issue 31.1):
it ranks as FTS5 does on larger corpora with common and rare words; a fresh connection uses the postings from its
first search and right after a write; postings that disagree with FTS5's counts are not
used; a merge changes no score; the default scope's counts come without a scan.  Both
rankings (numpy's, and the Python one with MaxScore's pruning a cold process's first search
uses) give FTS5's scores and order."""

from __future__ import annotations

import random
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.profile import load_profile
from memo.retrieve import impact, kw_rank, kw_search
from memo.retrieve import scope as scope_module
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.arms.keyword import KeywordArm
from memo.retrieve.scope import build_scope_sql, scope_stats
from memo.store import kw_postings
from memo.store.connect import read_tx, write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.types import Scope
from tests.fast_examples import examples

pytestmark = pytest.mark.sqlite_only

COMMON = ("cells", "protein", "binding", "gene")     # not stop words: query_words keeps them
RARE = tuple(f"w{i}" for i in range(60))


def _text(rng: random.Random) -> str:
    words = [w for w in COMMON if rng.random() < 0.7] * rng.randint(1, 3)
    words += [w for w in RARE if rng.random() < 0.04]
    words += ["filler"] * rng.randint(0, 30)
    rng.shuffle(words)
    return " ".join(words) or "filler"


def _db(tmp_path, n: int, seed: int = 7):
    rng = random.Random(seed)
    conn = open_db(tmp_path / "memo.db")
    with write_tx(conn):
        for i in range(n):
            rid = insert_record(conn, RecordDraft(body=f"{i} body", id=f"r{i}", namespace=("a", "b")[i % 2]),
                                (PassageDraft(text=_text(rng), section=rng.choice(("", "gene cells", "w3"))),),
                                recorded_at=f"2025-01-{1 + i % 28:02d}T00:00:00.000000Z")
            if i % 17 == 0:
                conn.execute("UPDATE records SET forgotten_at = '2025-02-01T00:00:00.000000Z' WHERE id = ?", (rid,))
    return conn


def _hits(conn, query: str, keyword: str, depth: int, weight: float = 1.0, scope: Scope | None = None,
          ranker: str = "auto"):
    saved, kw_search.RANKER = kw_search.RANKER, ranker
    try:
        return _arm_hits(conn, query, keyword, depth, weight, scope)
    finally:
        kw_search.RANKER = saved


def _arm_hits(conn, query: str, keyword: str, depth: int, weight: float, scope: Scope | None):
    prof = load_profile("rrf").with_overrides({"index.keyword": keyword, "index.impact_min_passages": 0,
                                               "retrieve.keyword_section_weight": weight})
    with read_tx(conn):
        ctx = ArmContext(conn=conn, query=query, mode="keyword", scope_sql=build_scope_sql(scope or Scope()),
                         fetch_depth=depth, profile=prof)
        return [(h.pk, h.raw) for h in KeywordArm().run(ctx)]


def test_ranks_as_fts5_on_a_larger_corpus(tmp_path) -> None:
    conn = _db(tmp_path, 400)
    try:
        for query in ("gene w1 w2", "binding cells w5", "gene binding protein w7 w8 w9", "protein w11", "w13 gene"):
            for weight in (1.0, 2.0, 0.1):
                for scope in (Scope(), Scope(namespaces=("a",))):
                    for ranker in ("dense", "pruned", "python"):
                        before = impact.STATS["postings"]
                        fast = _hits(conn, query, "impact", 5, weight, scope, ranker)
                        assert impact.STATS["postings"] == before + 1, (query, weight, scope)
                        assert fast == _hits(conn, query, "fts5", 5, weight, scope), ranker
    finally:
        conn.close()


def test_a_fresh_connection_uses_the_postings_before_and_after_a_write(tmp_path) -> None:
    conn = _db(tmp_path, 50)
    conn.close()
    impact.forget_indexes()
    conn = open_db(tmp_path / "memo.db", write=False)
    writer = open_db(tmp_path / "memo.db")
    try:
        before, builds = impact.STATS["postings"], impact.STATS["builds"]
        assert _hits(conn, "w1 gene", "impact", 10) == _hits(conn, "w1 gene", "fts5", 10)
        with write_tx(writer):
            insert_record(writer, RecordDraft(body="new one", id="new"), (PassageDraft(text="w1 w1 gene"),))
        after = _hits(conn, "w1 gene", "impact", 10)
        assert after == _hits(conn, "w1 gene", "fts5", 10)
        assert impact.STATS["postings"] == before + 2 and impact.STATS["builds"] == builds
        assert kw_postings.read_meta(conn).delta > 0       # served from base + delta, nothing rebuilt
    finally:
        conn.close()
        writer.close()


def test_postings_that_disagree_with_fts5_are_not_used(tmp_path) -> None:
    conn = _db(tmp_path, 30)
    try:
        with write_tx(conn):   # a write to FTS5 behind the postings' back (not memo's write path)
            conn.execute("INSERT INTO passages_fts(rowid, text, section) VALUES (99999, 'w1 w1 w1', '')")
        with read_tx(conn):
            assert kw_search.usable(conn) is None
        before = impact.STATS["postings"]
        _hits(conn, "w1", "impact", 5)
        assert impact.STATS["postings"] == before
    finally:
        conn.close()


def test_a_merge_changes_no_score_and_empties_the_delta(tmp_path) -> None:
    conn = _db(tmp_path, 60)
    try:
        first = kw_postings.read_meta(conn)
        kw_postings.merge(conn)        # the delta (every row) outgrew the empty base: rebuilt
        built = kw_postings.read_meta(conn)
        assert built.delta == 0 and built.generation != first.generation
        with write_tx(conn):
            for i in range(5):
                insert_record(conn, RecordDraft(body=f"late {i}", id=f"late{i}"), (PassageDraft(text="w2 binding gene w4"),))
        queries = ("w2 gene", "w4 binding cells", "protein")
        want = [_hits(conn, q, "fts5", 20) for q in queries]
        meta = kw_postings.read_meta(conn)
        assert meta.delta > 0
        assert kw_postings.merge(conn) > 0
        after = kw_postings.read_meta(conn)
        assert after.delta == 0 and after.generation == meta.generation + 1 and after.seq == meta.seq
        assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
        assert [_hits(conn, q, "impact", 20) for q in queries] == want
    finally:
        conn.close()


@pytest.mark.parametrize("many", [False, True])
def test_default_scope_counts_come_without_a_scan(tmp_path, monkeypatch, many) -> None:
    conn = _db(tmp_path, 120)
    try:
        if many:
            monkeypatch.setattr(scope_module, "EXCLUDED_MAX", 3)
        sql = build_scope_sql(Scope())
        with read_tx(conn):
            fast = scope_stats(conn, sql)
        monkeypatch.setattr(scope_module, "_live_scope_stats", lambda *a: None)
        scope_module.conn_cache(conn).clear()
        with read_tx(conn):
            slow = scope_stats(conn, sql)
        assert fast == slow
        assert (fast.excluded is None) == many
        statements: list[str] = []
        monkeypatch.undo()
        if many:
            monkeypatch.setattr(scope_module, "EXCLUDED_MAX", 3)
        scope_module.conn_cache(conn).clear()
        conn.set_trace_callback(statements.append)
        with read_tx(conn):
            scope_stats(conn, sql)
        conn.set_trace_callback(None)
        assert not any("COUNT(*) FROM passages" in s.upper().replace("COUNT(*) FROM PASSAGES", "COUNT(*) FROM passages")
                       for s in statements), statements
    finally:
        conn.close()


doc_st = st.tuples(st.lists(st.sampled_from(COMMON + RARE[:12] + ("filler",)), min_size=1, max_size=30),
                   st.sampled_from(("", "gene cells", "w3")))


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(60, 250), more=st.lists(doc_st, max_size=6),
       query=st.lists(st.sampled_from(COMMON + RARE[:12]), min_size=1, max_size=5), depth=st.integers(1, 15),
       weight=st.sampled_from((1.0, 0.1, 1.3, 3.7)), ranker=st.sampled_from(("dense", "pruned", "python")))
def test_ranks_as_fts5_property(tmp_path_factory, seed, n, more, query, depth, weight, ranker) -> None:
    tmp = tmp_path_factory.mktemp("ms")
    conn = _db(tmp, n, seed)
    try:
        with write_tx(conn):
            for i, (text, section) in enumerate(more):
                insert_record(conn, RecordDraft(body=f"more {i}", id=f"m{i}"),
                              (PassageDraft(text=" ".join(text), section=section),))
        q = " ".join(query)
        fast = _hits(conn, q, "impact", depth, weight, ranker=ranker)
        slow = _hits(conn, q, "fts5", depth, weight)
        assert [s for _, s in fast] == [s for _, s in slow]
        last = fast[-1][1] if fast else None
        assert {p for p, s in fast if s != last} == {p for p, s in slow if s != last}
        for (p1, s1), (p2, s2) in zip(fast, fast[1:], strict=False):
            assert s1 > s2 or (s1 == s2 and p1 < p2)
    finally:
        conn.close()


def test_tables_absent_means_no_postings() -> None:
    conn = sqlite3.connect(":memory:")
    assert kw_postings.read_meta(conn) is None


def test_the_python_ranking_prunes_and_gives_numpys_scores(tmp_path) -> None:
    """Common words' postings are looked up for the rare words' candidates only, the scores
    the same doubles as numpy's (and FTS5's), ties in pk order, at every depth."""
    conn = _db(tmp_path, 400)
    try:
        with read_tx(conn):
            meta = kw_search.usable(conn)
            stems = kw_search.stems_of(conn, ("w1", "gene", "cells", "w2"))
            for m in (1, 3, 10, 40, 400):
                rank = kw_search._py_rank(conn, meta, stems, 1.0, None)
                order = rank.order(m)
                dense = kw_rank.NumpyRank(kw_search.scores(conn, meta, stems, 1.0))
                assert order == dense.order(m), m
                assert [rank.score(p) for p in order] == [dense.score(p) for p in order]
                if m <= 10:       # the common words' postings were not all visited
                    assert rank._visited < sum(len(kw_postings.term_postings(conn, s)) for s in stems), m
            capped = kw_search._py_rank(conn, meta, stems, 1.0, 5)
            assert capped.order(10) is None       # past its cap: numpy ranks instead
    finally:
        conn.close()


@pytest.mark.parametrize("with_numpy", [True, False])
def test_scores_of_chosen_rows_are_fts5s(tmp_path, monkeypatch, with_numpy) -> None:
    """The entity arm's tiebreak (``scores_for``): -bm25 of the OR query for the rows asked
    about, the same doubles as FTS5's, rows matching no word left out; from the postings with
    numpy loaded and without it, with a delta after the base and after a removal."""
    monkeypatch.setattr(kw_search, "_numpy_loaded", lambda: with_numpy)
    conn = _db(tmp_path, 300)
    try:
        rng = random.Random(3)
        for stage in ("delta", "merged", "removed"):
            if stage == "merged":
                kw_postings.merge(conn)
            if stage == "removed":
                from memo import ops
                ops.forget(conn, ["r5", "r6"], confirm=True)
                ops.purge(conn, confirm=True)
                with write_tx(conn):
                    insert_record(conn, RecordDraft(body="late", id="late"), (PassageDraft(text="gene w1 w1 cells"),))
            pks = [r[0] for r in conn.execute("SELECT pk FROM passages")]
            for words in (["gene", "w1"], ["w3", "binding", "protein", "w3"], ["cells"], ["nowhere"]):
                wanted = rng.sample(pks, 40)
                with read_tx(conn):
                    got = kw_search.scores_for(conn, words, wanted)
                    match = " OR ".join(f'"{w}"' for w in words)
                    fts = {r[0]: -r[1] for r in conn.execute(
                        "SELECT rowid, bm25(passages_fts) FROM passages_fts WHERE passages_fts MATCH ?", (match,))
                        if r[0] in set(wanted)}
                assert got == fts, (stage, words)
    finally:
        conn.close()


@pytest.mark.parametrize("limit", [0, 10**9])
def test_a_first_search_with_many_postings_ranks_with_numpy_from_the_start(tmp_path, monkeypatch, limit) -> None:
    """A process's first search (numpy not loaded) ranks in Python only when its phrases hold
    at most PY_MAX_PHRASE_POSTINGS base postings; past that the Python ranking would stop at its
    cap after visiting most of it, so numpy ranks from the start.  Same hits either way."""
    conn = _db(tmp_path, 200)
    try:
        with read_tx(conn):
            stems = kw_search.stems_of(conn, ("gene", "w1", "gene"))
            total = kw_search._phrase_postings(conn, stems)
            assert total == 2 * len(kw_postings.term_postings(conn, "gene")) + len(
                kw_postings.term_postings(conn, "w1")) > 0
        expected = _hits(conn, "gene w1 gene", "fts5", 10)
        used = []
        real = kw_search._py_rank
        monkeypatch.setattr(kw_search, "_py_rank", lambda *a: used.append(1) or real(*a))
        monkeypatch.setattr(kw_search, "_numpy_loaded", lambda: False)
        monkeypatch.setattr(kw_search, "_searched", False)
        monkeypatch.setattr(kw_search, "PY_MAX_PHRASE_POSTINGS", limit)
        assert _hits(conn, "gene w1 gene", "impact", 10) == expected
        assert used == ([1] if limit else [])
    finally:
        conn.close()


@pytest.mark.parametrize("scan_ratio", [0, 10**9])
@pytest.mark.parametrize("weight", [1.0, 2.5, 0.0])
def test_the_pruned_rankings_drop_candidates_phrase_by_phrase(tmp_path, monkeypatch, scan_ratio, weight) -> None:
    """After the rare words admit the candidates, each common word is looked up for the
    candidates still able to reach the m-th and drops those that no longer can: the Python
    ranking and numpy's pruned one give the dense sum's order and doubles, whether the
    Python one scores a common word whole or searches it per candidate (``kw_rank._SCAN_RATIO``),
    at every depth, a repeated word included, and visit fewer postings than all."""
    monkeypatch.setattr(kw_rank, "_SCAN_RATIO", scan_ratio)
    added: list[int] = []      # phrases summed before each add
    real_add = kw_rank._Partials.add
    monkeypatch.setattr(kw_rank._Partials, "add", lambda self, pks, contrib: added.append(self.phrases)
                        or real_add(self, pks, contrib))
    conn = _db(tmp_path, 600, seed=11)
    try:
        with read_tx(conn):
            meta = kw_search.usable(conn)
            for words in (("w1", "w2", "gene", "cells", "protein", "binding"), ("w7", "cells", "filler"),
                          ("gene", "w3", "w3", "binding", "w40", "w41", "w42"), ("filler", "cells", "w9", "cells")):
                stems = kw_search.stems_of(conn, words)
                every = sum(len(kw_postings.term_postings(conn, s)) for s in stems)
                for m in (1, 2, 5, 10, 30, 100, 700):
                    rank = kw_search._py_rank(conn, meta, stems, weight, None)
                    order = rank.order(m)
                    dense = kw_rank.NumpyRank(kw_search.scores(conn, meta, stems, weight))
                    assert order == dense.order(m), (words, m)
                    assert [rank.score(p) for p in order] == [dense.score(p) for p in order], (words, m)
                    kw_search._CACHE.clear()     # no phrase's terms cached: those it looks up computed alone
                    terms = kw_search._terms(conn, meta, stems)
                    pruned = kw_rank.NumpyPruned(terms, meta, weight)
                    added.clear()
                    assert pruned.order(m) == order, (words, m)
                    # each taken phrase summed densely once, in taken order, however often the m-th is checked
                    assert added == list(range(len(added))) and len(added) <= len(terms), (words, m, added)
                    assert [pruned.score(p) for p in order] == [dense.score(p) for p in order], (words, m)
                    matched = kw_rank.NumpyMatched(kw_search._terms(conn, meta, stems), meta, weight)
                    assert matched.order(m) == order, (words, m)
                    assert [matched.score(p) for p in order] == [dense.score(p) for p in order], (words, m)
                    assert not kw_rank._accumulator(1).any()     # left all 0.0 for the next search
                    if m <= 5 and weight:
                        assert rank._visited < every, (words, m)
    finally:
        conn.close()


def _fts5_df(conn, word: str, scope: Scope) -> int:
    s = build_scope_sql(scope)
    return conn.execute("SELECT count(*) FROM passages_fts f JOIN passages p ON p.pk = f.rowid JOIN records r "
                        "ON r.id = p.record_id WHERE passages_fts MATCH ? AND " + s.where,
                        (f'"{word}"', *s.params)).fetchone()[0]


def test_a_phrase_is_counted_for_routing_without_the_join(tmp_path, monkeypatch) -> None:
    """A phrase (several tokens: "T-cell") has no postings of its own: routing's count is
    FTS5's count of the match less the scope's listed exclusions among its rows, equal to
    the join's count; with nothing listed the join counts."""
    from memo.retrieve.backend_sqlite import SqliteSearch

    conn = _db(tmp_path, 300)
    try:
        with write_tx(conn):
            conn.execute("UPDATE records SET superseded_at = '2025-03-01T00:00:00.000000Z' WHERE id = 'r4'")
        for scope in (Scope(), Scope(namespaces=("a",))):
            s = build_scope_sql(scope)
            for phrase in ("gene cells", "binding w3", "cells gene", "absent absent", "gene"):
                with read_tx(conn):
                    assert scope_stats(conn, s).excluded            # exclusions listed, some match
                    got = SqliteSearch().word_df(conn, phrase, s.where, s.params)
                assert got == _fts5_df(conn, phrase, scope), (scope, phrase)
        monkeypatch.setattr(scope_module, "EXCLUDED_MAX", 0)
        with write_tx(conn):                                        # a new data state: listed again
            conn.execute("UPDATE records SET superseded_at = '2025-03-01T00:00:00.000000Z' WHERE id = 'r6'")
        ns_a = build_scope_sql(Scope(namespaces=("a",)))
        with read_tx(conn):
            assert scope_stats(conn, ns_a).excluded is None
            assert SqliteSearch().word_df(conn, "gene cells", ns_a.where, ns_a.params) == _fts5_df(
                conn, "gene cells", Scope(namespaces=("a",)))
    finally:
        conn.close()


def test_word_counts_for_routing_come_from_the_postings(tmp_path, monkeypatch) -> None:
    """Routing's count of in-scope passages holding a word (backend word_df): the term's
    postings less the listed exclusions give FTS5's count(*) of the join, after writes too
    (base + delta); a phrase, a scope that lists nothing or stale postings answer None."""
    conn = _db(tmp_path, 300)
    try:
        words = ("gene", "Cells", "binding", "w3", "w40", "absent", "filler")
        for word in words:
            with read_tx(conn):
                assert kw_search.scoped_df(conn, build_scope_sql(Scope()), word) == _fts5_df(conn, word, Scope())
        with write_tx(conn):
            insert_record(conn, RecordDraft(body="new", id="new"), (PassageDraft(text="w40 gene genes absent"),))
            conn.execute("UPDATE records SET superseded_at = '2025-03-01T00:00:00.000000Z' WHERE id = 'r5'")
        assert kw_postings.read_meta(conn).delta > 0
        for word in words:
            with read_tx(conn):
                got = kw_search.scoped_df(conn, build_scope_sql(Scope()), word)
                assert got == _fts5_df(conn, word, Scope()) and got is not None, word
        with read_tx(conn):
            assert kw_search.scoped_df(conn, build_scope_sql(Scope()), "gene cells") is None     # two tokens
        monkeypatch.setattr(scope_module, "EXCLUDED_MAX", 0)
        ns_a = build_scope_sql(Scope(namespaces=("a",)))
        with read_tx(conn):
            assert kw_search.scoped_df(conn, ns_a, "gene") is None          # nothing listed
    finally:
        conn.close()


def test_the_accumulator_is_all_zero_again_after_a_search_that_fails(tmp_path, monkeypatch) -> None:
    """A search interrupted while it sums (here: a phrase's terms raise) leaves the thread's
    reused accumulator all 0.0: the next search's sums start from 0.0, as FTS5's do."""
    conn = _db(tmp_path, 400)
    try:
        with read_tx(conn):
            meta = kw_search.usable(conn)
            stems = kw_search.stems_of(conn, ("gene", "cells", "w2"))
            terms = kw_search._terms(conn, meta, stems)
            want = kw_rank.NumpyRank(kw_search.scores(conn, meta, stems, 1.0))
            real, calls = kw_rank.all_contrib, []

            def second_fails(*a, **k):  # noqa: ANN002, ANN003, ANN202
                calls.append(1)
                if len(calls) == 2:
                    raise KeyboardInterrupt
                return real(*a, **k)

            monkeypatch.setattr(kw_rank, "all_contrib", second_fails)
            with pytest.raises(KeyboardInterrupt):
                kw_rank.NumpyMatched(terms, meta, 1.0)
            monkeypatch.setattr(kw_rank, "all_contrib", real)
            assert not kw_rank._accumulator(1).any()
            got = kw_rank.NumpyMatched(terms, meta, 1.0)
            order = want.order(50)
            assert got.order(50) == order
            assert [got.score(p) for p in order] == [want.score(p) for p in order]
            got.order(1)      # the scores outside the last order asked for: found, or 0.0 as NumpyRank's
            assert [got.score(p) for p in order] == [want.score(p) for p in order]
            assert got.score(10**9) == 0.0 and got.score(0) == want.score(0)
    finally:
        conn.close()
