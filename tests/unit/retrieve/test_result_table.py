"""Stage 9's table (memo.retrieve.result_table): a search that asks for columns gets the
table, whose Result objects (built on first access) equal a plain search's, field for field
and why for why; the eval's part builder reads the same values from the columns as from
those objects."""

from __future__ import annotations

import pytest
from retrieve_helpers import FakeSemantic, add, assert_why_reproduces_final, pk_of

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.result_table import ResultTable
from memo.types import Scope

NOW = "2024-07-01T00:00:00Z"
TEXTS = (
    ("How to clean a swimming pool filter", "doc", None),
    ("Pool party on Saturday, bring towels", "note", "2024-04-02T00:00:00Z"),
    ("We talked about filter cartridges for the pool pump", "conversation", "2024-06-01"),
    ("Chocolate cake needs cocoa and butter", "note", "2024-06-30"),
    ("The pool pump hums when the filter clogs", "conversation", "2023-01-05"),
    ("Butter the cake tin before the cocoa batter goes in", "doc", None),
)


@pytest.fixture
def sims(conn):
    pks = [pk_of(conn, add(conn, text, kind=kind, **({"event_at": when} if when else {})))
           for text, kind, when in TEXTS]
    return {pk: 0.8 - 0.13 * i for i, pk in enumerate(pks)}


@pytest.mark.parametrize("profile", ["zscore", "rrf", "minmax"])
@pytest.mark.parametrize("fmt", ["explain", "compact"])
@pytest.mark.parametrize("query", ["pool filter", "cocoa cake", "pump", "xylophone"])
def test_columns_materialize_to_the_plain_searchs_results(conn, sims, profile, fmt, query):
    prof = load_profile(profile).with_overrides({"cutoff.gap": 1.0})
    svc = {"semantic": FakeSemantic(sims)}
    plain = search(conn, SearchRequest(query, response_format=fmt, now=NOW, limit=100), prof, svc)
    table = search(conn, SearchRequest(query, response_format=fmt, now=NOW, limit=100, columns=True), prof, svc).results
    assert isinstance(plain.results, tuple)
    assert isinstance(table, ResultTable)
    assert len(table) == len(plain.results) and bool(table) == bool(plain.results)
    assert table.materialize() == plain.results          # every field, why included
    assert table == plain.results and list(table) == list(plain.results)
    if plain.results:
        assert table[0] == plain.results[0] and table[-1:] == plain.results[-1:]
        if fmt == "explain":
            for res in table:
                assert_why_reproduces_final(res)
    assert table.materialize() is table.materialize()     # built once


def test_part_builder_reads_the_same_values_from_the_columns_as_from_the_objects(conn, sims):
    from memo_eval.partials import PartBuilder

    prof = load_profile("zscore").with_overrides({"cutoff.gap": 1.0})
    svc = {"semantic": FakeSemantic(sims)}
    keys = {pk: f"doc{pk % 3}" for pk in sims}
    qrels = {"q0": {"doc0": 1, "doc2": 2}, "q1": {"doc1": 1}}
    from_cols, from_objs = PartBuilder(qrels, keys), PartBuilder(qrels, keys)
    for qi, query in enumerate(("pool filter", "cocoa cake butter")):
        req = SearchRequest(query, scope=Scope(), response_format="explain", now=NOW, limit=100, columns=True)
        table = search(conn, req, prof, svc).results
        assert isinstance(table, ResultTable) and len(table) > 1
        qrow = {"qid": f"q{qi}"}
        from_cols.add(qrow, table)
        from_objs.add(qrow, tuple(table.materialize()))
    a, b = from_cols.part(0), from_objs.part(0)
    assert a.table.equals(b.table)
    assert (a.ranked, a.contributions, a.voted, a.factor_values, a.factor_qids) == \
        (b.ranked, b.contributions, b.voted, b.factor_values, b.factor_qids)
