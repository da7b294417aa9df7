"""Property: a fact never lets an out-of-scope passage through (issue 10.7).  Random
records (namespaces, kinds, forgotten / superseded), random facts (namespace, evidence
anywhere, forgotten / superseded, matched by keyword and by meaning), random scopes: every
result of a scoped search is a passage the scope's own SQL admits, and every fact that
voted is live and in the scope's namespaces."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.retrieve import SearchRequest, search
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.facts import insert_fact
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from memo.types import Scope
from tests.fast_examples import examples

NS = ("a", "b", "c")
KINDS = ("note", "doc")

record_st = st.tuples(st.sampled_from(NS), st.sampled_from(KINDS), st.sampled_from(("live", "forgotten", "superseded")))
fact_st = st.tuples(st.sampled_from(NS), st.lists(st.integers(0, 11), min_size=1, max_size=3),
                    st.sampled_from(("live", "live", "forgotten", "superseded")), st.floats(0.0, 1.0))
scope_st = st.tuples(st.lists(st.sampled_from(NS), max_size=2, unique=True),
                     st.lists(st.sampled_from(KINDS), max_size=1, unique=True))


class _Idx:
    def __init__(self, sims):
        self.sims = sims

    def search(self, conn, q, allowed, k):
        ok = None if allowed is None else set(np.asarray(allowed).tolist())
        return sorted(((p, c) for p, c in self.sims.items() if ok is None or p in ok), key=lambda x: (-x[1], x[0]))[:k]


class _Svc:
    model_id = "all-minilm-l6-v2-int8"

    def __init__(self, fact_sims):
        self.index = _Idx({})
        self.fact_index = _Idx(fact_sims)

    def status(self):
        return True, "fake"

    def embed_query(self, text):
        return np.zeros(384, dtype=np.float32)


def _build(conn: sqlite3.Connection, records, facts) -> dict[int, float]:
    pks = []
    with write_tx(conn):
        for i, (ns, kind, state) in enumerate(records):
            rid = insert_record(conn, RecordDraft(body=f"record {i} token", namespace=ns, kind=kind),
                                (PassageDraft(text=f"record {i} token"),))
            pks.append(tuple(conn.execute("SELECT pk, id FROM passages WHERE record_id = ?", (rid,)).fetchone()))
            if state == "forgotten":
                conn.execute("UPDATE records SET forgotten_at = '2024-01-01T00:00:00.000000Z' WHERE id = ?", (rid,))
            elif state == "superseded":
                conn.execute("UPDATE records SET superseded_at = '2024-01-01T00:00:00.000000Z' WHERE id = ?", (rid,))
        sims = {}
        for j, (ns, ev, state, cos) in enumerate(facts):
            chosen = sorted({pks[e % len(pks)] for e in ev})
            _, fpk = insert_fact(conn, FactDraft(text=f"fact {j} token", evidence=("x",), namespace=ns),
                                 [(int(p[0]), p[1]) for p in chosen])
            sims[fpk] = cos
            if state == "forgotten":
                conn.execute("UPDATE facts SET forgotten_at = '2024-01-01T00:00:00.000000Z' WHERE pk = ?", (fpk,))
            elif state == "superseded":
                conn.execute("UPDATE facts SET superseded_at = '2024-01-01T00:00:00.000000Z' WHERE pk = ?", (fpk,))
    return sims


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record_st, min_size=1, max_size=12), facts=st.lists(fact_st, min_size=1, max_size=8),
       scope=scope_st, query=st.sampled_from(("token", "fact token", "nothing here")))
def test_a_fact_never_lets_an_out_of_scope_passage_through(records, facts, scope, query):
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "p.db")
        try:
            sims = _build(conn, records, facts)
            sc = Scope(namespaces=tuple(scope[0]), kinds=tuple(scope[1]))
            sql = build_scope_sql(sc)
            admitted = {r[0] for r in conn.execute(
                "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE " + sql.where, sql.params)}
            for mode in ("auto", "keyword"):
                resp = search(conn, SearchRequest(query, scope=sc, mode=mode, response_format="explain",
                                                  limit=100), "rrf", {"semantic": _Svc(sims)})
                for r in resp.results:
                    assert r.pk in admitted
                    fact_why = r.why.arms.get("fact")
                    for v in (fact_why.votes if fact_why else ()):
                        row = conn.execute("SELECT namespace, forgotten_at, superseded_at FROM facts WHERE id = ?",
                                           (v.fact_id,)).fetchone()
                        assert row[1] is None and row[2] is None
                        assert not sc.namespaces or row[0] in sc.namespaces
        finally:
            conn.close()
