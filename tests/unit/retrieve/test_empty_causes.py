"""Empty answers (issue 12.3): one test per cause in memo.retrieve.empty.EMPTY_CAUSES.
``abstained`` is true only when the abstention stage emptied the list; every other empty
answer names its own cause, reason and hint.  Also the partial degradation (12.4): some
in-scope passages without a vector."""

from __future__ import annotations

import pytest
from retrieve_helpers import FakeSemantic, add, pk_of

from memo import metrics
from memo.embed import NO_VECTORS_YET
from memo.embed.vectors import pending_in_scope
from memo.retrieve import SearchRequest, search
from memo.retrieve.empty import EMPTY_CAUSES, NOT_FOUND_HINT, empty_cause
from memo.retrieve.types import ArmRun
from memo.types import Scope

NOW = "2024-07-01T00:00:00Z"


@pytest.fixture
def pks(conn):
    return {
        "pool": pk_of(conn, add(conn, "How to clean a swimming pool filter", kind="doc", namespace="home")),
        "cake": pk_of(conn, add(conn, "Chocolate cake needs cocoa and butter", kind="note", namespace="home")),
    }


def _empty(resp, cause: str) -> None:
    assert resp.results == () and resp.cause == cause
    assert resp.abstained is (cause == "abstained")
    assert resp.reason and resp.hint and "?" not in resp.reason


def _counted(cause: str) -> float:
    return metrics.SEARCH_EMPTY.labels(cause=cause)._value.get()


def test_no_scope(conn, pks):
    before = _counted("no_scope")
    resp = search(conn, SearchRequest("pool", scope=Scope(namespaces=("nowhere",)), now=NOW), "rrf",
                  {"semantic": FakeSemantic({})})
    _empty(resp, "no_scope")
    assert resp.reason.startswith("no memory is in namespace 'nowhere'; the namespaces are ") and "widen" in resp.hint
    assert _counted("no_scope") == before + 1


def test_model_unavailable_in_semantic_mode(conn, pks):
    resp = search(conn, SearchRequest("pool", mode="semantic", now=NOW), "rrf",
                  {"semantic": FakeSemantic({}, available=False)})
    _empty(resp, "model_unavailable")
    assert "fake model missing" in resp.reason and "memo models check" in resp.hint
    assert resp.trace.degraded["flag"]


class _NoVectors(FakeSemantic):
    """The model is fine, but no passage has a vector for it (the real service's status)."""

    def status(self) -> tuple[bool, str]:
        return False, f"{NO_VECTORS_YET} for model m (run `memo backfill`)"


def test_no_vectors_in_semantic_mode_points_at_backfill_not_the_model(conn, pks):
    resp = search(conn, SearchRequest("pool", mode="semantic", now=NOW), "rrf", {"semantic": _NoVectors({})})
    _empty(resp, "no_vectors")
    assert "memo backfill" in resp.hint and "models check" not in resp.hint


def test_no_searchable_word(conn, pks):
    resp = search(conn, SearchRequest("???", now=NOW), "rrf", {"semantic": FakeSemantic({})})
    _empty(resp, "no_searchable_word")
    assert "no words" in resp.reason


def test_no_match(conn, pks):
    resp = search(conn, SearchRequest("zebra", mode="keyword", now=NOW), "rrf")
    _empty(resp, "no_match")
    assert resp.reason == "no passage matched the query" and "rephrase" in resp.hint


def test_abstained_only_when_abstention_emptied_the_list(conn, pks):
    svc = FakeSemantic({pks["pool"]: 0.25, pks["cake"]: 0.2})        # all below the floor (0.30)
    resp = search(conn, SearchRequest("quantum chromodynamics", now=NOW), "rrf", {"semantic": svc})
    _empty(resp, "abstained")
    assert "all 2 candidates" in resp.reason and "semantic_floor" in resp.reason
    assert resp.hint == NOT_FOUND_HINT


def test_budget_smaller_than_the_first_result(conn, pks):
    resp = search(conn, SearchRequest("pool filter", mode="keyword", max_tokens=1, now=NOW), "rrf")
    _empty(resp, "budget")
    tokens = conn.execute("SELECT tokens FROM passages WHERE pk = ?", (pks["pool"],)).fetchone()[0]
    assert f"needs {tokens} tokens, more than max_tokens 1" in resp.reason
    assert f"at least {tokens}" in resp.hint and resp.truncated == 1


def test_no_arm_and_dropped_are_decided_by_the_table():
    # Not reachable through today's arms (a query no arm can compile is a QuerySyntaxError;
    # cutoff and limit never empty a list): the decision function still names them.
    skipped = [ArmRun("keyword", False, "mode semantic", False, (), 0.0)]
    assert empty_cause(in_scope=3, mode="auto", runs=skipped, n_fused=0, n_abstained=0,
                       n_after_abstention=0) == "no_arm"
    ran = [ArmRun("keyword", True, "", False, (), 0.1)]
    assert empty_cause(in_scope=3, mode="auto", runs=ran, n_fused=2, n_abstained=0,
                       n_after_abstention=0) == "dropped"
    assert set(EMPTY_CAUSES) == {"no_scope", "model_unavailable", "no_searchable_word", "no_arm",
                                 "no_match", "abstained", "vectors_pending", "budget", "dropped", "no_vectors"}


class _PartlyEmbedded(FakeSemantic):
    """The fake service plus the real pending count (its model has no stored vectors, so
    every passage without one in ``embedded`` counts as pending)."""

    def __init__(self, sims, embedded: set[int], model_id: str = "all-minilm-l6-v2-int8") -> None:
        super().__init__(sims, model_id=model_id)
        self.embedded = embedded

    def pending_in_scope(self, conn, where, params):  # noqa: ANN001 - mirrors SemanticService
        return pending_in_scope(conn, self.model_id, where, params) - len(self.embedded)


def test_some_passages_without_vectors_degrade_partially_and_are_found_by_keyword(conn, pks):
    before = metrics.SEARCH_DEGRADED.labels(reason="vectors_pending")._value.get()
    svc = _PartlyEmbedded({pks["cake"]: 0.9}, embedded={pks["cake"]})   # the pool passage has no vector
    resp = search(conn, SearchRequest("swimming pool", now=NOW), "rrf", {"semantic": svc})
    deg = resp.trace.degraded
    assert deg["flag"] and "1 of 2 in-scope passages have no vector" in deg["reason"]
    assert "memo backfill" in deg["reason"]
    assert pks["pool"] in [r.pk for r in resp.results]                   # found by keyword
    assert metrics.SEARCH_DEGRADED.labels(reason="vectors_pending")._value.get() == before + 1
    # Fully embedded (another model: the count is cached per model until the data changes).
    full = search(conn, SearchRequest("swimming pool", now=NOW), "rrf",
                  {"semantic": _PartlyEmbedded({pks["cake"]: 0.9}, embedded=set(pks.values()), model_id="m2")})
    assert not full.trace.degraded["flag"]


def test_an_abstention_with_passages_not_yet_embedded_is_not_a_not_found(conn, pks):
    """The semantic arm weighed only the embedded passages; the answer may be among the
    others (a server's embedder still busy, an import with --no-embed): the empty answer
    says so instead of "not in the knowledge base"."""
    svc = _PartlyEmbedded({pks["cake"]: 0.2}, embedded={pks["cake"]})      # the pool passage has no vector
    resp = search(conn, SearchRequest("finance review meeting", mode="semantic", now=NOW), "rrf", {"semantic": svc})
    _empty(resp, "vectors_pending")
    assert "1 of 2 in-scope passages have no vector yet" in resp.reason and "memo backfill" in resp.hint
