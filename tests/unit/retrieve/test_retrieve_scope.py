"""Stage 1: the scope filter sits inside each arm's SQL, before top-k."""

from __future__ import annotations

import pytest
from retrieve_helpers import FakeSemantic, add, pk_of

from memo.errors import ValidationError
from memo.retrieve import SearchRequest, search
from memo.retrieve import scope as scope_mod
from memo.retrieve.scope import build_scope_sql
from memo.store.connect import write_tx
from memo.store.dialect import is_postgres
from memo.types import Scope

NO_CUT = {"cutoff.gap": 1.0}


def ids(resp):
    return [r.record_id for r in resp.results]


def _profile(**over):
    from memo.profile import load_profile
    return load_profile("rrf").with_overrides({**NO_CUT, **over})


@pytest.mark.parametrize("excluded_max", [500, 0])  # both exact plans of the SQLite text top-k (memo.retrieve.backend_sqlite)
def test_filtered_search_finds_passages_the_unfiltered_top_100_lacks(conn, monkeypatch, excluded_max):
    monkeypatch.setattr(scope_mod, "EXCLUDED_MAX", excluded_max)
    for i in range(150):  # strong matches, out of scope
        add(conn, f"zebra zebra zebra zebra stripes number {i}", namespace="noise", kind="doc")
    wanted = [add(conn, f"a zebra was seen near lake {i} with many other animals around", namespace="wanted",
                  kind="doc") for i in range(3)]
    prof = _profile()
    unfiltered = search(conn, SearchRequest("zebra", mode="keyword", limit=100), prof)
    assert not set(wanted) & set(ids(unfiltered))
    filtered = search(conn, SearchRequest("zebra", scope=Scope(namespaces=("wanted",)), mode="keyword"), prof)
    assert sorted(ids(filtered)) == sorted(wanted)
    assert filtered.trace.filter == {"in_scope": 3, "total": 153, "out_of_scope": 150}
    assert any(d.stage == "scope" and d.count == 150 for d in filtered.trace.drops)


def test_semantic_arm_gets_the_scope_too(conn):
    a = add(conn, "alpha", namespace="a")
    b = add(conn, "beta", namespace="b")
    svc = FakeSemantic({pk_of(conn, a): 0.9, pk_of(conn, b): 0.8})
    resp = search(conn, SearchRequest("anything", scope=Scope(namespaces=("b",)), mode="semantic"),
                  _profile(), {"semantic": svc})
    assert ids(resp) == [b]


def test_live_filter_and_as_of(conn):
    old = add(conn, "the deploy key rotates weekly", recorded_at="2024-01-01T00:00:00.000000Z")
    new = add(conn, "the deploy key rotates daily", recorded_at="2024-03-01T00:00:00.000000Z")
    gone = add(conn, "the deploy key is in the vault", recorded_at="2024-01-01T00:00:00.000000Z")
    with write_tx(conn):
        conn.execute("UPDATE records SET superseded_at = ?, superseded_by = ? WHERE id = ?",
                     ("2024-03-01T00:00:00.000000Z", new, old))
        conn.execute("UPDATE records SET forgotten_at = ? WHERE id = ?", ("2024-04-01T00:00:00.000000Z", gone))
    prof = _profile()
    live = search(conn, SearchRequest("deploy key", mode="keyword"), prof)
    assert ids(live) == [new]
    feb = search(conn, SearchRequest("deploy key", scope=Scope(as_of="2024-02-01"), mode="keyword"), prof)
    assert ids(feb) == [old]            # new not yet recorded; gone stays forgotten
    mar = search(conn, SearchRequest("deploy key", scope=Scope(as_of="2024-03-01T00:00:00Z"), mode="keyword"), prof)
    assert ids(mar) == [new]            # superseded at T is no longer visible at T


def test_every_scope_field(conn):
    a = add(conn, "kafka consumer lag alert", kind="doc", namespace="ops", source="wiki", library="kafka",
            version="3.6", tags=("infra", "alerts"), trust=0.9, event_at="2024-05-01T10:00:00Z")
    b = add(conn, "kafka consumer lag graph", kind="note", namespace="ops", source="slack", library="kafka",
            version="3.5", tags=("infra",), trust=0.4, event_at="2024-06-15")
    c = add(conn, "kafka consumer lag runbook", kind="doc", namespace="dev", tags=("alerts", "infra"),
            recorded_at="2023-01-01T00:00:00.000000Z")
    prof = _profile()

    def q(**fields):
        return sorted(ids(search(conn, SearchRequest("kafka lag", scope=Scope(**fields), mode="keyword"), prof)))

    assert q() == sorted([a, b, c])
    assert q(namespaces=("ops",)) == sorted([a, b])
    assert q(namespaces=("ops", "dev")) == sorted([a, b, c])
    assert q(kinds=("note",)) == [b]
    assert q(sources=("wiki", "slack")) == sorted([a, b])
    assert q(library="kafka", version="3.6") == [a]
    assert q(tags=("infra", "alerts")) == sorted([a, c])
    assert q(tags=("alerts", "nope")) == []
    assert q(min_trust=0.5) == sorted([a, c])
    assert q(date_from="2024-06-01") == [b]
    assert q(date_to="2024-05-01") == sorted([a, c])          # bare date: the whole day
    assert q(date_from="2024-05-01", date_to="2024-05-01") == [a]
    assert q(date_to="2023-12-31") == [c]                     # no event_at: recorded_at


def _n_tables(conn) -> int:  # noqa: ANN001
    if is_postgres(conn):
        return conn.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()[0]
    return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]


def test_hostile_values_are_parameters(conn):
    add(conn, "ordinary text about tables")
    before = _n_tables(conn)
    hostile = ("'; DROP TABLE records; --", '"', "`", "r.id", "1 OR 1=1", "namespace")
    for value in hostile:
        resp = search(conn, SearchRequest("tables", scope=Scope(namespaces=(value,), kinds=(), sources=(value,),
                                                                library=value, version=value, tags=(value,)),
                                          mode="keyword"), _profile())
        assert resp.results == ()
    assert _n_tables(conn) == before
    assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 1


@pytest.mark.parametrize("scope", [Scope(kinds=("blog",)), Scope(date_from="yesterday"), Scope(as_of="soon"),
                                   Scope(min_trust=2.0), Scope(date_from="2024-02-01", date_to="2024-01-01")])
def test_bad_scope_values_are_validation_errors(scope):
    with pytest.raises(ValidationError):
        build_scope_sql(scope)


def test_scope_sql_has_no_values_in_text():
    sql = build_scope_sql(Scope(namespaces=("x'y",), tags=("t",), library="LIBVALUE", min_trust=0.5))
    assert "x'y" not in sql.where and "LIBVALUE" not in sql.where
    assert "x'y" in sql.params and "LIBVALUE" in sql.params


def test_dates_in_any_iso_form_filter_by_the_moment_they_name(conn):
    """Event dates are stored in one form (memo.text.when): before, the value as typed was
    compared as text with the bounds, so 20260310 sorted after 2026-12-31 and a time with
    an offset fell on the wrong side of midnight UTC."""
    basic = add(conn, "cormorant census basic", event_at="20260310")
    week = add(conn, "cormorant census week", event_at="2026-W11-2")              # Tuesday 2026-03-10
    east = add(conn, "cormorant census east", event_at="2026-03-10T23:30:00-05:00")   # 03-11 04:30 UTC
    tokyo = add(conn, "cormorant census tokyo", event_at="2026-03-11T01:00:00+09:00")  # 03-10 16:00 UTC
    prof = _profile()

    def q(**fields):
        return sorted(ids(search(conn, SearchRequest("cormorant census", scope=Scope(**fields), mode="keyword"), prof)))

    assert q(date_from="2026-01-01", date_to="2026-12-31") == sorted([basic, week, east, tokyo])
    assert q(date_to="2026-03-10") == sorted([basic, week, tokyo])
    assert q(date_from="2026-03-11T00:00:00Z", date_to="2026-03-11T23:59:59Z") == [east]
    assert q(date_from="20260311") == [east]                  # a bound in basic form is a date too
    stored = dict(conn.execute("SELECT id, event_at FROM records").fetchall())
    assert stored[basic] == stored[week] == "2026-03-10" and stored[east] == "2026-03-11T04:30:00.000000Z"
