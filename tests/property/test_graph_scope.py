"""Property: the entity and graph arms never return an out-of-scope passage.  Random
records over three namespaces and two kinds, each naming a few of eight entities
(forgotten / superseded at random); random scopes and two-entity queries: every passage
either arm reports is one the scope's own SQL admits."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.graph.cache import forget_graphs
from memo.ops.add import add_record
from memo.ops.records import forget, supersede
from memo.retrieve import SearchRequest, search
from memo.retrieve.scope import build_scope_sql
from memo.store.db import open_db
from memo.stored import RecordDraft
from memo.types import Scope
from tests.fast_examples import examples

NAMES = ("Alice", "Bob", "Carol", "Dave", "Paris", "Berlin", "Initech", "Globex")
NS = ("a", "b", "c")
record_st = st.tuples(st.sampled_from(NS), st.sampled_from(("note", "doc")),
                      st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True),
                      st.sampled_from(("live", "live", "forgotten", "superseded")))
scope_st = st.builds(Scope, namespaces=st.lists(st.sampled_from(NS), max_size=2, unique=True).map(tuple),
                     kinds=st.lists(st.sampled_from(("note", "doc")), max_size=1).map(tuple))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(record_st, min_size=4, max_size=25), scope=scope_st,
       query=st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)))
def test_entity_and_graph_arms_stay_in_scope(records, scope, query):
    with tempfile.TemporaryDirectory() as d:
        conn = open_db(Path(d) / "m.db")
        try:
            for i, (ns, kind, names, state) in enumerate(records):
                body = f"Note {i}: " + " met ".join(names) + "."
                rid = add_record(conn, RecordDraft(body=body, namespace=ns, kind=kind)).record_id
                if state == "forgotten":
                    forget(conn, [rid])
                elif state == "superseded":
                    supersede(conn, rid, f"Note {i} rewritten: {names[0]} stayed home.")
            sql = build_scope_sql(scope)
            allowed = {r[0] for r in conn.execute(
                "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE " + (sql.where or "1"),
                sql.params)}
            q = f"{query[0]} and {query[1]} with whom"
            r = search(conn, SearchRequest(q, scope=scope, response_format="explain", limit=100), "rrf")
            for res in r.results:
                if {"entity", "graph"} & set(res.why.arms):
                    assert res.pk in allowed, (res.passage_id, res.why.arms.keys())
        finally:
            conn.close()
            forget_graphs()
