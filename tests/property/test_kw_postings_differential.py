"""Differential: the persistent keyword postings (memo.store.kw_postings) stay FTS5's
through writes, and the keyword arm ranks from them exactly as FTS5's bm25 (issue 31.1).

Random corpora, then random sequences of writes (bulk inserts, single inserts, deletes,
in-place updates of a passage's text) interleaved with merges of the delta into the base
and with ``memo reindex``.  After every step: (a) every term's postings (pk, occurrences,
of them in the section, row length) equal what FTS5's own fts5vocab and docsize tables
say, and the maintained row and token counts equal FTS5's averages; (b) the keyword arm
served by the postings (no rebuild in between) returns the same scores, bit for bit, and
the same pks as FTS5's ``bm25(passages_fts, 1.0, w)`` under random scopes and weights."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.ops.maintenance import reindex
from memo.retrieve import impact, kw_search
from memo.retrieve import scope as scope_module
from memo.store import kw_postings
from memo.store.connect import read_tx, write_tx
from memo.store.db import open_db
from memo.store.derived import index_passages, unindex_passages
from memo.store.records import NewRecord, content_hash, derive_passages, insert_record, insert_records
from memo.stored import PassageDraft, RecordDraft
from memo.types import Scope
from tests.fast_examples import examples
from tests.property.test_impact_differential import WORDS, _hits, _same, doc_st, query_st, scope_st, weight_st

op_st = st.one_of(
    st.tuples(st.just("bulk"), st.lists(doc_st, min_size=1, max_size=6)),
    st.tuples(st.just("one"), st.lists(doc_st, min_size=1, max_size=2)),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("update"), st.integers(0, 50), st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)),
    st.tuples(st.just("merge")),
    st.tuples(st.just("reindex")),
)


def truth(conn: sqlite3.Connection) -> dict[str, dict[int, tuple[int, int, int]]]:
    """term -> pk -> (tf, sec, dl) as FTS5 itself holds them."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_inst USING fts5vocab(main, passages_fts, 'instance')")
    dl = {int(i): sum(kw_postings.varints(bytes(sz))) for i, sz in conn.execute("SELECT id, sz FROM passages_fts_docsize")}
    out: dict[str, dict[int, list[int]]] = {}
    for term, doc, col in conn.execute("SELECT term, doc, col FROM temp.t_inst"):
        post = out.setdefault(term, {}).setdefault(int(doc), [0, 0])
        post[0] += 1
        post[1] += col == "section"
    return {t: {d: (v[0], v[1], dl[d]) for d, v in docs.items()} for t, docs in out.items()}


def check_postings(conn: sqlite3.Connection) -> None:
    with read_tx(conn):
        want = truth(conn)
        meta = kw_search.usable(conn)
        assert meta is not None, "the postings do not match FTS5's counts"
        terms = {r[0] for r in conn.execute("SELECT term FROM kw_base UNION SELECT term FROM kw_delta")}
        assert set(want) <= terms
        for term in terms:
            assert kw_postings.term_postings(conn, term) == want.get(term, {}), term


def _draft(i: int, doc) -> tuple[RecordDraft, tuple[PassageDraft, ...]]:
    text, section, ns, kind, _ = doc
    return (RecordDraft(body=f"{i} " + " ".join(text), namespace=ns, kind=kind, id=f"r{i}"),
            (PassageDraft(text=" ".join(text), section=" ".join(section)),))


def _state(conn: sqlite3.Connection, rid: str, state: str) -> None:
    if state == "forgotten":
        conn.execute("UPDATE records SET forgotten_at = '2025-02-01T00:00:00.000000Z' WHERE id = ?", (rid,))
    elif state == "superseded":
        conn.execute("UPDATE records SET superseded_at = '2025-01-15T00:00:00.000000Z' WHERE id = ?", (rid,))


def apply(conn: sqlite3.Connection, op, counter: list[int]) -> None:
    kind = op[0]
    if kind == "bulk":
        news = []
        for doc in op[1]:
            i = counter[0] = counter[0] + 1
            draft, passages = _draft(i, doc)
            news.append((NewRecord(f"r{i}", draft, content_hash(draft.body), f"2025-01-{1 + i % 28:02d}T00:00:00.000000Z",
                                   derive_passages(draft, passages)), doc[4]))
        with write_tx(conn):
            insert_records(conn, [n for n, _ in news])
            for n, state in news:
                _state(conn, n.id, state)
    elif kind == "one":
        with write_tx(conn):
            for doc in op[1]:
                i = counter[0] = counter[0] + 1
                draft, passages = _draft(i, doc)
                rid = insert_record(conn, draft, passages, recorded_at=f"2025-01-{1 + i % 28:02d}T00:00:00.000000Z")
                _state(conn, rid, doc[4])
    elif kind in ("delete", "update"):
        pks = [r[0] for r in conn.execute("SELECT p.pk FROM passages p JOIN passages_fts_docsize d ON d.id = p.pk"
                                          " ORDER BY p.pk")]
        if not pks:
            return
        pk = pks[op[1] % len(pks)]
        with write_tx(conn):
            unindex_passages(conn, [pk])
            if kind == "update":
                conn.execute("UPDATE passages SET text = ? WHERE pk = ?", (" ".join(op[2]), pk))
                index_passages(conn, [pk])
    elif kind == "merge":
        kw_postings.merge(conn)
    elif kind == "reindex":
        reindex(conn)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc_st, min_size=1, max_size=30), ops=st.lists(op_st, min_size=1, max_size=8),
       queries=st.lists(st.tuples(query_st, scope_st), min_size=1, max_size=3), depth=st.integers(1, 12),
       listed=st.booleans(), weight=weight_st)
def test_postings_stay_fts5s_through_writes_and_merges(docs, ops, queries, depth, listed, weight) -> None:
    saved = scope_module.EXCLUDED_MAX
    scope_module.EXCLUDED_MAX = saved if listed else -1
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "memo.db")
        try:
            impact.forget_indexes()
            counter = [0]
            apply(conn, ("bulk", docs), counter)
            for op in ops:
                apply(conn, op, counter)
                check_postings(conn)
                for words, (ns, kinds, as_of) in queries:
                    scope = Scope(namespaces=tuple(ns), kinds=tuple(kinds), as_of="2025-01-20" if as_of else None)
                    query = " ".join(words)
                    slow = _hits(conn, query, scope, "fts5", depth, weight)
                    every = _hits(conn, query, scope, "fts5", 10_000, weight)
                    for ranker in ("dense", "pruned", "python"):     # kw_search: every ranking
                        kw_search.RANKER = ranker
                        before = impact.STATS["postings"]
                        fast = _hits(conn, query, scope, "impact", depth, weight)
                        assert impact.STATS["postings"] == before + 1, "the postings did not serve the search"
                        _same(fast, slow, every)
                        for (p1, s1), (p2, s2) in zip(fast, fast[1:], strict=False):
                            assert s1 > s2 or (s1 == s2 and p1 < p2)
        finally:
            scope_module.EXCLUDED_MAX = saved
            kw_search.RANKER = "auto"
            conn.close()
            impact.forget_indexes()
