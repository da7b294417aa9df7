"""Per-connection caches of the pipeline: result rows (fetch_rows) and the opt-in arm-hit
cache (run_arms).  A cached answer must equal the uncached one, and any write must
empty the caches."""

from __future__ import annotations

import numpy as np
from retrieve_helpers import FakeSemantic, add, pk_of

from memo.retrieve import SearchRequest, search
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.fetch import fetch_rows
from memo.store.connect import write_tx

NOW = "2024-07-01T00:00:00Z"


def _numbers(resp):
    return [(r.pk, r.score, r.relevance, r.band, r.text, dict(r.why.arms), r.why.fused, r.why.final,
             r.why.provenance, r.why.freshness) for r in resp.results]


def _corpus(conn):
    pks = [pk_of(conn, add(conn, text, kind="note", event_at="2024-06-01")) for text in
           ("pool filter cleaning", "pool party towels", "filter cartridges for the pool pump")]
    return pks, FakeSemantic({pks[0]: 0.7, pks[1]: 0.5, pks[2]: 0.45})


def test_fetch_rows_is_cached_until_a_write(conn):
    pks, _ = _corpus(conn)
    first = fetch_rows(conn, pks)
    assert fetch_rows(conn, pks) == first and set(first) == set(pks)
    assert set(conn_cache(conn)["rows"]) == set(pks)
    with write_tx(conn):
        conn.execute("UPDATE passages SET section = 'changed' WHERE pk = ?", (pks[0],))
    assert "rows" not in conn_cache(conn)
    assert fetch_rows(conn, pks[:1])[pks[0]].section == "changed"


def test_arm_cache_gives_the_same_numbers_and_skips_the_arms(conn):
    _, svc = _corpus(conn)
    req = SearchRequest("pool filter", response_format="explain", now=NOW)
    plain = search(conn, req, "rrf", {"semantic": svc})
    assert "arm_hits" not in conn_cache(conn)          # not asked for: not used
    services = {"semantic": svc, "arm_cache": True, "query_vector": np.ones(384, dtype=np.float32)}
    first = search(conn, req, "rrf", services)
    assert len(conn_cache(conn)["arm_hits"]) == 3      # semantic + keyword + fact (no facts) stored
    svc.index.sims = {}                                # a second run must not ask the index
    again = search(conn, req, "rrf", services)
    assert _numbers(plain) == _numbers(first) == _numbers(again)
    assert [a.latency_ms for a in first.trace.arms] == [a.latency_ms for a in again.trace.arms]
    # Another fusion constant: same arm hits, different scores.
    other = search(conn, req, load_rrf_k(20), services)
    assert [r.score for r in other.results] != [r.score for r in again.results]


def test_arm_cache_keys_on_query_vector_and_empties_on_write(conn):
    pks, svc = _corpus(conn)
    req = SearchRequest("pool", now=NOW)
    base = {"semantic": svc, "arm_cache": True}
    search(conn, req, "rrf", {**base, "query_vector": np.ones(384, dtype=np.float32)})
    search(conn, req, "rrf", {**base, "query_vector": np.zeros(384, dtype=np.float32)})
    # The key holds every input of any arm (the vector too): 3 arms (with fact) x 2 vectors.
    assert len(conn_cache(conn)["arm_hits"]) == 6
    add(conn, "pool heater")
    fresh = search(conn, req, "rrf", {**base, "query_vector": np.ones(384, dtype=np.float32)})
    assert len(fresh.results) == 4


def load_rrf_k(k: int):
    from memo.profile import load_profile

    return load_profile("rrf").with_overrides({"fusion.k": k})


def test_routing_is_kept_with_the_arm_cache_and_keyed_by_entities(conn, monkeypatch):
    """Routing (its word counts are most of a search whose arms are cached) is a pure
    function of the query, scope, data and [entities]: kept per connection with the arm
    cache, computed again for another [entities] value, never kept without the cache."""
    import memo.retrieve.arms.shared as shared
    from memo.profile import load_profile

    _, svc = _corpus(conn)
    calls = []
    real = shared.route
    monkeypatch.setattr(shared, "route", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    req = SearchRequest("Pool Filter cleaning", response_format="explain", now=NOW)
    plain = search(conn, req, "rrf", {"semantic": svc})
    search(conn, req, "rrf", {"semantic": svc})
    assert len(calls) == 2                                  # no cache asked for: routed each time
    services = {"semantic": svc, "arm_cache": True, "query_vector": np.ones(384, dtype=np.float32)}
    first = search(conn, req, "rrf", services)
    again = search(conn, req, load_rrf_k(20), services)     # a fusion constant: same route
    assert len(calls) == 3 and _numbers(first) == _numbers(plain)
    assert [a.reason for a in again.trace.arms] == [a.reason for a in first.trace.arms]
    search(conn, req, load_profile("rrf").with_overrides({"entities.max_words": 2}), services)
    assert len(calls) == 4                                  # a key routing reads: routed again


def test_stored_cosines_are_read_once_per_query_vector_with_the_arm_cache(conn, monkeypatch):
    from memo.retrieve.backend import backend_of

    pks, svc = _corpus(conn)
    svc.index.sims = {pks[0]: 0.7}                     # the others are keyword-only hits
    asked = []
    cls = type(backend_of(conn))
    real = cls.passage_cosines
    monkeypatch.setattr(cls, "passage_cosines",
                        lambda self, c, m, q, p: asked.append(sorted(p)) or real(self, c, m, q, p))
    req = SearchRequest("pool", response_format="explain", now=NOW)
    services = {"semantic": svc, "arm_cache": True, "query_vector": np.ones(384, dtype=np.float32)}
    first = search(conn, req, "rrf", services)
    again = search(conn, req, load_rrf_k(20), services)
    assert len(asked) == 1
    assert {r.pk: r.relevance for r in first.results} == {r.pk: r.relevance for r in again.results}


def test_cache_reads_the_data_version_once_per_snapshot(tmp_path):
    """Inside a search's read snapshot the per-connection caches key on the data version
    read when the snapshot began (memo.store.connect.snapshot_data_version), not on a new
    PRAGMA per lookup; outside one they ask the connection, and a commit by another
    connection still empties them."""
    from memo.store.connect import read_tx, snapshot_data_version
    from memo.store.db import open_db

    conn = open_db(tmp_path / "memo.db")     # SQLite's data_version (PostgreSQL: its generation)
    _corpus(conn)
    asked: list[str] = []
    # FTS5 runs its own "-- PRAGMA 'main'.data_version" inside its queries: not ours
    conn.set_trace_callback(lambda sql: asked.append(sql) if sql.startswith("PRAGMA data_version") else None)
    try:
        assert snapshot_data_version(conn) is None
        with read_tx(conn):
            version = snapshot_data_version(conn)
            assert isinstance(version, int)
            n = len(asked)
            for _ in range(5):
                conn_cache(conn)
            assert len(asked) == n                       # no PRAGMA per lookup inside
        assert snapshot_data_version(conn) is None      # gone with the snapshot
        conn_cache(conn)
        assert len(asked) == n + 1                      # outside: asked again
        search(conn, SearchRequest("pool filter", now=NOW), "rrf")
        assert len(asked) == n + 2                      # a whole search: once, at its snapshot
    finally:
        conn.set_trace_callback(None)
        conn.close()
