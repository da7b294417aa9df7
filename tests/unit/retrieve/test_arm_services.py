"""ArmServices (issue 11.8): the typed, frozen value the arms share; the old services
dict still accepted during the transition."""

from __future__ import annotations

import dataclasses

import pytest

from memo.graph.cache import GraphCache
from memo.ops.add import add_record
from memo.retrieve import SearchRequest, search
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.scope import build_scope_sql
from memo.retrieve.services import ArmServices
from memo.stored import RecordDraft
from memo.types import Scope


def test_of_accepts_the_old_dict_and_refuses_unknown_keys():
    svc = object()
    s = ArmServices.of({"semantic": svc, "arm_cache": True})
    assert s == ArmServices(semantic=svc, arm_cache=True)
    assert ArmServices.of(None) == ArmServices() == ArmServices.of({})
    assert ArmServices.of(s) is s
    with pytest.raises(ValueError, match="unknown arm service"):
        ArmServices.of({"semantc": svc})
    with pytest.raises(TypeError):
        ArmServices.of(["semantic"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.arm_cache = False                       # type: ignore[misc]
    # the dict's reads, for callers not moved yet
    assert s.get("semantic") is svc and "semantic" in s and "query_vector" not in s
    assert s.get("nope", 1) == 1 and not ArmServices().get("arm_cache")
    assert s.with_(query_vector=[1.0]).query_vector == [1.0] and s.query_vector is None


def test_context_and_pipeline_take_either_form(fresh_db):
    ctx = ArmContext(conn=fresh_db, query="q", mode="auto", scope_sql=build_scope_sql(Scope()), fetch_depth=5,
                     services={"arm_cache": True})
    assert isinstance(ctx.services, ArmServices) and ctx.services.arm_cache
    for body in ("Alice works at Initech with Bob.", "Bob lives in Paris.", "Alice and Bob went to Paris."):
        add_record(fresh_db, RecordDraft(body=body))
    req = SearchRequest("Alice and Paris", response_format="explain", limit=10)
    a = search(fresh_db, req, "rrf", {})
    b = search(fresh_db, req, "rrf", ArmServices())
    assert [r.passage_id for r in a.results] == [r.passage_id for r in b.results]


def test_graph_arm_uses_the_services_graph_cache(fresh_db):
    for body in ("Alice works at Initech with Bob.", "Bob lives in Paris.", "Paris has the Louvre.",
                 "Bob and Alice went to Paris together."):   # Alice inside a sentence: a name (issue 29.1)
        add_record(fresh_db, RecordDraft(body=body))
    own = GraphCache()
    r = search(fresh_db, SearchRequest("Alice and Paris", response_format="explain", limit=10), "rrf",
               ArmServices(graph_cache=own))
    assert {a.name: a for a in r.trace.arms}["graph"].ran
    assert len(own._graphs) == 1                  # the walk's graph was built in this cache
