"""The whole pipeline: explain numbers, abstention, bands, trace, degraded mode, errors."""

from __future__ import annotations

import time

import pytest
from retrieve_helpers import FakeSemantic, add, pk_of

from memo import metrics
from memo.errors import QuerySyntaxError, ValidationError
from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.arms import ARMS
from memo.retrieve.pipeline import NOT_FOUND_HINT

NOW = "2024-07-01T00:00:00Z"


@pytest.fixture
def corpus(conn):
    r = {
        "pool": add(conn, "How to clean a swimming pool filter", kind="doc", source="wiki", author="ann",
                    import_path="docs/pool.md"),
        "note": add(conn, "Pool party on Saturday, bring towels", kind="note", event_at="2024-04-02T00:00:00Z"),
        "chat": add(conn, "We talked about filter cartridges for the pool pump", kind="conversation",
                    event_at="2024-06-01"),
        "cake": add(conn, "Chocolate cake needs cocoa and butter", kind="note", event_at="2024-06-30"),
    }
    return {k: pk_of(conn, v) for k, v in r.items()}


def test_explain_contributions_reproduce_the_final_score_exactly(conn, corpus):
    svc = FakeSemantic({corpus["pool"]: 0.7, corpus["chat"]: 0.55, corpus["note"]: 0.4, corpus["cake"]: 0.1})
    resp = search(conn, SearchRequest("pool filter", response_format="explain", now=NOW),
                  load_profile("rrf").with_overrides({"cutoff.gap": 1.0}), {"semantic": svc})
    assert resp.results
    for res in resp.results:
        w = res.why
        total = 0.0
        for arm in w.arms.values():
            total += arm.contribution
        assert total == w.fused
        assert w.fused * w.factor("recency") == w.final == res.score
        assert sum(a.contribution for a in w.arms.values()) * w.factor("recency") == res.score
    top = resp.results[0]
    assert top.pk == corpus["pool"]
    assert list(top.why.arms) == ["semantic", "keyword"]
    assert top.why.arms["semantic"].rank == 1 and top.why.arms["semantic"].raw == 0.7
    assert top.why.arms["semantic"].contribution == 0.5 / 61
    assert top.why.provenance == {"source": "wiki", "author": "ann", "import_path": "docs/pool.md",
                                  "recorded_at": top.why.provenance["recorded_at"],
                                  "content_hash": top.why.provenance["content_hash"]}
    assert top.relevance == 0.7 and top.band == "strong" and top.why.band == "strong"
    chat = next(r for r in resp.results if r.pk == corpus["chat"])
    assert chat.band == "moderate"
    assert chat.why.freshness["age_days"] == 30.0 and chat.why.freshness["event_at"] == "2024-06-01"
    assert chat.why.factor("recency") == 0.8 + (1 - 0.8) * 0.5 ** (30 / 90)


def test_zscore_explain_reproduces_final_and_each_contribution_from_the_arms_raws(conn, corpus):
    """The default profile's fusion: why's contributions sum to fused, fused x recency = final,
    and each arm's contribution is weight * (raw - min) / sigma over that arm's own list (all
    its candidates are results here: no gap cutoff, no abstention floor, limit 100)."""
    import statistics

    svc = FakeSemantic({corpus["pool"]: 0.7, corpus["chat"]: 0.55, corpus["note"]: 0.4, corpus["cake"]: 0.1})
    prof = load_profile("zscore").with_overrides({"cutoff.gap": 1.0,      # every candidate is a result
                                                  "models.all-minilm-l6-v2-int8.semantic_floor": -1.0})
    assert prof.fusion.method == "zscore"
    resp = search(conn, SearchRequest("pool filter", response_format="explain", now=NOW, limit=100), prof,
                  {"semantic": svc})
    assert resp.results
    raws: dict[str, list[float]] = {}
    for res in resp.results:
        for name, arm in res.why.arms.items():
            raws.setdefault(name, []).append(arm.raw)
    assert set(raws) == {"semantic", "keyword"} and len(raws["semantic"]) == 4
    for res in resp.results:
        w = res.why
        total = 0.0
        for arm in w.arms.values():
            total += arm.contribution
        assert total == w.fused and w.fused * w.factor("recency") == w.final == res.score
        for name, arm in w.arms.items():
            lo, sigma = min(raws[name]), statistics.pstdev(raws[name])
            want = prof.weights[name] * ((arm.raw - lo) / sigma if sigma > 0 else 1.0)
            assert arm.contribution == pytest.approx(want, rel=1e-12)
    top = resp.results[0]
    assert top.pk == corpus["pool"]
    # cosines 0.7, 0.55, 0.4, 0.1: mean 0.4375, sigma 0.2219: the pool page is 2.7 sd above the cake
    assert top.why.arms["semantic"].contribution == pytest.approx(0.5 * 0.6 / 0.22185299186623558, rel=1e-12)


def test_compact_results_carry_no_why(conn, corpus):
    resp = search(conn, SearchRequest("pool", mode="keyword"), "rrf")
    assert resp.results and all(r.why is None for r in resp.results)
    assert all(r.relevance is None and r.band is None for r in resp.results)


def test_abstention_and_not_in_knowledge_base(conn, corpus):
    svc = FakeSemantic({corpus["pool"]: 0.25, corpus["cake"]: 0.2})  # all below floor 0.30
    resp = search(conn, SearchRequest("quantum chromodynamics"), "rrf", {"semantic": svc})
    assert resp.results == () and resp.abstained
    assert "semantic_floor" in resp.reason and resp.hint == NOT_FOUND_HINT
    drop = next(d for d in resp.trace.drops if d.stage == "abstention")
    assert drop.count == 2 and set(drop.passage_pks) == {corpus["pool"], corpus["cake"]}


def test_weak_semantic_vote_survives_with_keyword_evidence(conn, corpus):
    svc = FakeSemantic({corpus["cake"]: 0.2, corpus["pool"]: 0.1})
    resp = search(conn, SearchRequest("chocolate"), "rrf", {"semantic": svc})
    assert [r.pk for r in resp.results] == [corpus["cake"]]
    assert resp.results[0].band == "below" and resp.results[0].relevance == 0.2


def test_trace_reports_arms_counts_budget_and_cutoff(conn, corpus):
    resp = search(conn, SearchRequest("pool", mode="keyword", max_tokens=1000), "rrf")
    tr = resp.trace
    assert [a.name for a in tr.arms] == [a.name for a in ARMS]
    kw = next(a for a in tr.arms if a.name == "keyword")
    assert kw.ran and kw.candidates == 3 and kw.latency_ms >= 0
    sem = next(a for a in tr.arms if a.name == "semantic")
    assert not sem.ran and sem.reason == "mode keyword"
    ex = next(a for a in tr.arms if a.name == "exact")
    assert not ex.ran and ex.reason == "mode keyword"
    assert tr.filter == {"in_scope": 4, "total": 4, "out_of_scope": 0}
    assert tr.candidates == 3 and tr.cutoff_kind in ("none", "gap", "min_results")
    assert tr.budget["max"] == 1000 and tr.budget["used"] == sum(r.tokens for r in resp.results)
    assert tr.degraded == {"flag": False, "reason": None}


def test_degraded_when_the_model_is_missing(conn, corpus):
    before = metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable")._value.get()
    resp = search(conn, SearchRequest("pool"), "rrf", {"semantic": FakeSemantic({}, available=False)})
    assert resp.results  # keyword still answers
    assert resp.trace.degraded["flag"] and "fake model missing" in resp.trace.degraded["reason"]
    assert metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable")._value.get() == before + 1
    resp = search(conn, SearchRequest("pool", mode="keyword"), "rrf", {})
    assert not resp.trace.degraded["flag"]   # semantic deliberately off: not degraded


def test_exact_arm_routing(conn):
    rid = add(conn, "The server returned ERR_CONN_RESET after the upgrade to net/http 1.22", kind="doc")
    add(conn, "The connection was reset by the peer", kind="doc")
    resp = search(conn, SearchRequest("ERR_CONN_RESET"), "rrf", {})
    ex = next(a for a in resp.trace.arms if a.name == "exact")
    assert ex.ran and ex.reason == "query looks like an identifier" and ex.candidates == 1
    assert resp.results[0].record_id == rid
    plain = search(conn, SearchRequest("connection reset"), "rrf", {})
    assert next(a for a in plain.trace.arms if a.name == "exact").reason == "query names no identifier"
    exact = search(conn, SearchRequest("net/http", mode="exact"), "rrf", {})
    assert exact.results[0].record_id == rid


def test_cutoff_limit_and_budget_drops_are_recorded(conn):
    for i in range(30):
        add(conn, f"lighthouse keeper log entry {i} " + "word " * (i % 5), kind="doc")
    prof = load_profile("rrf").with_overrides({"cutoff.gap": 1.0})
    resp = search(conn, SearchRequest("lighthouse keeper", mode="keyword", limit=12, max_tokens=60), prof)
    stages = {d.stage: d for d in resp.trace.drops}
    assert stages["limit"].count == 18
    assert resp.trace.budget["used"] <= 60
    assert resp.truncated == stages["limit"].count + stages["budget"].count
    assert len(resp.results) == 12 - stages["budget"].count
    assert resp.narrow_hint is None or resp.narrow_hint["would_drop"] > 0


@pytest.mark.parametrize("req", [SearchRequest("x", limit=0), SearchRequest("x", limit=101),
                                 SearchRequest("x", max_tokens=0), SearchRequest("x", mode="fuzzy"),
                                 SearchRequest("x", response_format="xml"), SearchRequest("x", now="later")])
def test_bad_requests_are_validation_errors(conn, req):
    with pytest.raises(ValidationError):
        search(conn, req, "rrf", {})


@pytest.mark.parametrize("query", ["", "   ", "???", "*:^-"])
def test_queries_without_words_raise_query_syntax_error(conn, query):
    add(conn, "something")
    with pytest.raises(QuerySyntaxError):
        search(conn, SearchRequest(query, mode="keyword"), "rrf", {})


def test_wordless_query_still_runs_the_semantic_arm(conn):
    rid = add(conn, "question marks everywhere")
    svc = FakeSemantic({pk_of(conn, rid): 0.9})
    resp = search(conn, SearchRequest("???"), "rrf", {"semantic": svc})
    assert [r.record_id for r in resp.results] == [rid]
    kw = next(a for a in resp.trace.arms if a.name == "keyword")
    assert not kw.ran and "no words" in kw.reason


def test_empty_database_answers_no_scope_not_abstained(conn):
    resp = search(conn, SearchRequest("anything", mode="keyword"), "rrf")
    assert not resp.abstained and resp.cause == "no_scope" and resp.results == ()
    assert resp.reason == "the database holds no memories yet" and "memo add" in resp.hint


@pytest.mark.sqlite_only   # PostgreSQL keeps the keyword index in the passage row: it cannot fall out of step
def test_index_rows_without_a_passage_are_not_results(conn):
    rid = add(conn, "orphan lighthouse text")
    keep = add(conn, "another lighthouse text")
    pk = pk_of(conn, rid)
    from memo.store.connect import write_tx
    with write_tx(conn):  # simulate an index out of step: passage gone, FTS row left behind
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("DELETE FROM passages WHERE pk = ?", (pk,))
    resp = search(conn, SearchRequest("lighthouse", mode="keyword"), "rrf", {})
    assert [r.record_id for r in resp.results] == [keep]


def test_a_result_the_semantic_arm_did_not_return_still_has_a_relevance(backend_db):
    """Issue 32: keyword-only hits showed no relevance.  With the semantic arm cut to one
    passage, the other results' relevance is their stored vector's cosine with the query."""
    import memo as _memo
    from memo.ops import add_record as _add
    from memo.profile import load_profile as _load
    from memo.store.db import open_db as _open
    from memo.stored import RecordDraft as _Draft

    db = backend_db
    c = _open(db, write=True)
    for text in ("the deploy key rotates weekly", "deploy the service with the key from vault",
                 "key lime pie recipe with a deploy of whipped cream"):
        _add(c, _Draft(body=text))
    c.close()
    narrow = _load("zscore").with_overrides({"retrieve.fetch_depth": 1}, name="narrow")
    auto = _memo.search("deploy key", db=db, profile=narrow)
    assert len(auto.results) >= 2 and all(r.relevance is not None for r in auto.results)
    assert all(r.band is not None for r in auto.results)
    keyword = _memo.search("deploy key", db=db, mode="keyword")
    assert all(r.relevance is None for r in keyword.results)     # nothing embedded the query


class _LoadsModel(FakeSemantic):
    """Reports a model load (as SemanticService.take_startup_ms does) once per load; the
    query embedding loads the model when ``load_in_search`` (a cold process's first search)."""

    def __init__(self, sims, *, load_in_search: bool) -> None:
        super().__init__(sims)
        self.pending = 0.0 if load_in_search else 500.0     # else: loaded before the search
        self.load_in_search = load_in_search

    def embed_query(self, text):  # noqa: ANN001, ANN201
        if self.load_in_search:        # the load takes the time it reports
            time.sleep(0.05)
            self.pending, self.load_in_search = 50.0, False
        return super().embed_query(text)

    def take_startup_ms(self) -> dict[str, float]:
        out = {"model_load": self.pending} if self.pending else {}
        self.pending = 0.0
        return out


def test_a_model_loaded_before_the_search_is_not_its_startup(conn):
    """A load before the search (a replay's warm-up) was subtracted from the first search's
    latency: latency_ms came out negative.  A load inside the search is still reported apart."""
    pk = pk_of(conn, add(conn, "the lighthouse keeper logs the weather"))
    before = search(conn, SearchRequest("lighthouse weather"), "rrf", {"semantic": _LoadsModel({pk: 0.8}, load_in_search=False)})
    assert before.trace.latency_ms >= 0 and "model_load" not in before.trace.stage_ms
    during = search(conn, SearchRequest("lighthouse weather"), "rrf", {"semantic": _LoadsModel({pk: 0.8}, load_in_search=True)})
    assert during.trace.stage_ms["model_load"] == 50.0 and during.trace.latency_ms >= 0
