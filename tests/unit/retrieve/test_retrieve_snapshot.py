"""Scope is one snapshot (issue 9, point 1): a commit that lands between the scope read and
an arm's query must not leak an out-of-scope passage into a scoped search.

The interleaving is forced, not hoped for: the scope-statistics read is wrapped so that,
right after it, a second connection commits a strong out-of-scope match.  Before the fix
(scope stats and the FTS query as two separate reads) the new row was not in the excluded
set and came back as a result of a ``--namespace work`` search.
"""

from __future__ import annotations

import pytest
from retrieve_helpers import FakeSemantic, add

from memo.retrieve import SearchRequest, search
from memo.retrieve import scope as scope_mod
from memo.store.connect import connect
from memo.store.db import open_db
from memo.store.dialect import is_db_url
from memo.types import Scope


def _profile():
    from memo.profile import load_profile
    return load_profile("rrf").with_overrides({"cutoff.gap": 1.0})


@pytest.fixture
def two_conns(backend_db):
    """A reader and a writer on one database, on each backend (PostgreSQL: REPEATABLE
    READ gives the search its snapshot)."""
    db = backend_db
    reader = open_db(db)
    writer = open_db(db) if is_db_url(db) else connect(db)
    yield reader, writer
    writer.close()
    reader.close()


def _commit_between(monkeypatch, writer, fired):
    """After the arm reads the scope statistics, another connection commits."""
    real = scope_mod.scope_stats

    def interleaved(conn, scope_sql):
        stats = real(conn, scope_sql)
        if not fired:
            fired.append(add(writer, "zebra password is hunter2 zebra zebra", namespace="personal"))
        return stats
    monkeypatch.setattr(scope_mod, "scope_stats", interleaved)


@pytest.mark.parametrize("excluded_max", [500, 0])  # both plans of the SQLite text top-k (memo.retrieve.backend_sqlite)
@pytest.mark.parametrize("filt", ["namespace", "kind", "tags", "as_of", "forgotten"])
def test_commit_between_scope_and_arm_does_not_leak(two_conns, monkeypatch, excluded_max, filt):
    reader, writer = two_conns
    monkeypatch.setattr(scope_mod, "EXCLUDED_MAX", excluded_max)
    wanted = add(writer, "the zebra in the work notes", namespace="work", kind="note", tags=("w",),
                 recorded_at="2026-01-01T00:00:00.000000Z")
    scope = {"namespace": Scope(namespaces=("work",)), "kind": Scope(kinds=("note",)),
             "tags": Scope(tags=("w",)), "as_of": Scope(as_of="2026-06-01"),
             "forgotten": Scope()}[filt]
    fired: list[str] = []
    real = scope_mod.scope_stats

    def interleaved(conn, scope_sql):
        stats = real(conn, scope_sql)
        if fired:
            return stats
        if filt == "forgotten":
            # the leak's mirror: a live row forgotten mid-search must not come back
            writer.execute("UPDATE records SET forgotten_at = '2026-01-02T00:00:00.000000Z' WHERE id = ?",
                           (wanted,))
            fired.append(wanted)
        else:
            fired.append(add(writer, "zebra password is hunter2 zebra zebra", namespace="personal",
                             kind="doc"))
        return stats
    monkeypatch.setattr(scope_mod, "scope_stats", interleaved)

    resp = search(reader, SearchRequest("zebra", scope=scope, mode="keyword"), _profile())
    assert fired, "the interleaved commit did not happen"
    got = [r.record_id for r in resp.results]
    if filt == "forgotten":
        # the snapshot predates the forget: the search answers as of its snapshot
        assert got == [wanted]
    else:
        assert got == [wanted], f"out-of-scope leak under {filt}: {got}"
    # the next search sees the new state and still keeps scope
    again = search(reader, SearchRequest("zebra", scope=scope, mode="keyword"), _profile())
    if filt == "forgotten":
        assert [r.record_id for r in again.results] == []
    else:
        assert [r.record_id for r in again.results] == [wanted]


def test_semantic_mask_and_keyword_share_the_snapshot(two_conns, monkeypatch):
    reader, writer = two_conns
    wanted = add(writer, "zebra at work", namespace="work")
    fired: list[str] = []
    _commit_between(monkeypatch, writer, fired)
    sims = {1: 0.9, 2: 0.95, 3: 0.99}   # pk 2 is the row committed mid-search
    resp = search(reader, SearchRequest("zebra", scope=Scope(namespaces=("work",))), _profile(),
                  {"semantic": FakeSemantic(sims)})
    assert fired
    assert [r.record_id for r in resp.results] == [wanted]


def test_search_leaves_no_transaction_open(two_conns):
    reader, writer = two_conns
    add(writer, "zebra", namespace="work")
    search(reader, SearchRequest("zebra", mode="keyword"), _profile())
    assert not reader.in_transaction
    # and a caller's own transaction is kept, not ended, by a search inside it
    reader.execute("BEGIN")
    search(reader, SearchRequest("zebra", mode="keyword"), _profile())
    assert reader.in_transaction
    reader.execute("ROLLBACK")
