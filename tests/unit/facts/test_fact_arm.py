"""The fact arm in the pipeline (issue 10.4-10.5, 10.7): keyword and meaning fact lists,
votes for evidence passages under the scope, supersede / forget / purge / as_of, abstention
of weak meaning-only facts, why reproducing final, the trace on a database without facts."""

from __future__ import annotations

import numpy as np
import pytest

from memo import ops
from memo.ops import facts as fops
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from memo.types import Scope
from tests.unit.ops.index_rows import keyword_rows

NOW = "2024-07-01T00:00:00Z"


class FactIndex:
    def __init__(self, sims):
        self.sims = sims          # fact pk -> cosine

    def search(self, conn, qvec, allowed, k):
        ok = None if allowed is None else set(np.asarray(allowed).tolist())
        items = sorted(((pk, c) for pk, c in self.sims.items() if ok is None or pk in ok), key=lambda x: (-x[1], x[0]))
        return items[:k]


class Semantic:
    model_id = "all-minilm-l6-v2-int8"     # semantic_floor 0.39 in the profiles

    def __init__(self, passage_sims=None, fact_sims=None):
        self.index = FactIndex(passage_sims or {})
        self.fact_index = FactIndex(fact_sims or {})

    def status(self):
        return True, "fake"

    def embed_query(self, text):
        return np.zeros(384, dtype=np.float32)


@pytest.fixture
def conn(backend_db):
    c = open_db(backend_db)
    yield c
    c.close()


def rec(conn, text, ns="default", **kw):
    with write_tx(conn):
        return insert_record(conn, RecordDraft(body=text, namespace=ns, kind="doc", **kw), (PassageDraft(text=text),))


def fact(conn, text, evidence, ns="default", **kw):
    return fops.add_fact(conn, FactDraft(text=text, evidence=tuple(evidence), namespace=ns, **kw), embed=False).fact_id


def fpk(conn, fid):
    return conn.execute("SELECT pk FROM facts WHERE id = ?", (fid,)).fetchone()[0]


def ids(resp):
    return [r.record_id for r in resp.results]


def run(conn, query, services=None, profile="rrf", **scope):
    return search(conn, SearchRequest(query, scope=Scope(**scope), response_format="explain", now=NOW),
                  profile, services or {})


def test_no_facts_the_arm_runs_finds_nothing_and_says_so(conn):
    rec(conn, "pool filter cartridge")
    resp = run(conn, "pool filter")
    arm = next(a for a in resp.trace.arms if a.name == "fact")
    assert arm.ran and arm.candidates == 0 and "no facts" in arm.reason and arm.matched is None
    assert ids(resp) and all("fact" not in r.why.arms for r in resp.results)


def test_identifier_fact_found_by_exact_wording_votes_for_its_evidence(conn):
    note = rec(conn, "the proxy log shows resets every hour")
    other = rec(conn, "unrelated gardening notes")
    f = fact(conn, "Upstream closes idle sockets: clients see ERR_CONN_RESET", [note])
    resp = run(conn, "ERR_CONN_RESET")
    assert ids(resp) == [note] and other not in ids(resp)
    why = resp.results[0].why
    vote = why.arms["fact"].votes[0]
    assert vote.fact_id == f and vote.keyword_rank == 1 and vote.semantic_rank is None and "ERR_CONN_RESET" in vote.text
    total = 0.0
    for a in why.arms.values():
        total += a.contribution
    assert total * why.factor("recency") == why.final == resp.results[0].score
    arm = next(a for a in resp.trace.arms if a.name == "fact")
    assert arm.matched == 1 and arm.candidates == 1 and arm.latency_ms >= 0


def test_passage_rank_by_best_fact_then_number_of_facts(conn):
    a = rec(conn, "alpha passage")
    b = rec(conn, "beta passage")
    c = rec(conn, "gamma passage")
    fact(conn, "zebra stripes everywhere zebra", [a])
    fact(conn, "zebra crossing", [b])
    fact(conn, "zebra crossing near the school", [b, c])
    resp = run(conn, "zebra crossing")
    hits = {r.record_id: r.why.arms["fact"] for r in resp.results}
    assert hits[b].rank < hits[c].rank                     # same best fact, b has two voters
    assert len(hits[b].votes) == 2 and hits[b].votes[0].rank <= hits[b].votes[1].rank
    assert hits[b].raw == hits[b].votes[0].score


def test_supersede_forget_purge_and_as_of(conn):
    note = rec(conn, "meeting notes from the kickoff")
    f1 = fact(conn, "the launch date is in march", [note])
    assert ids(run(conn, "march")) == [note]
    t_between = conn.execute("SELECT recorded_at FROM facts WHERE id = ?", (f1,)).fetchone()[0]
    rep = fops.supersede_fact(conn, f1, "the launch date moved to april")
    assert ids(run(conn, "march")) == []                       # old wording is not live
    assert ids(run(conn, "april")) == [note]
    assert ids(run(conn, "march", as_of=t_between)) == [note]   # as_of: the old version
    assert ids(run(conn, "april", as_of=t_between)) == []       # not recorded yet then
    fops.forget_facts(conn, [rep.new_id])
    assert ids(run(conn, "april")) == []
    assert ids(run(conn, "april", as_of=NOW)) == []             # forgotten never comes back
    ops.purge(conn, confirm=True)
    assert keyword_rows(conn, "facts_fts", "april") == []


def test_fact_hidden_when_its_evidence_is_forgotten_or_purged(conn):
    note = rec(conn, "kickoff notes")
    fact(conn, "budget approved by finance", [note])
    assert ids(run(conn, "budget finance")) == [note]
    ops.forget(conn, [note])
    resp = run(conn, "budget finance")
    assert ids(resp) == [] and next(a for a in resp.trace.arms if a.name == "fact").candidates == 0
    ops.purge(conn, confirm=True)
    assert ids(run(conn, "budget finance")) == []


def test_evidence_in_another_namespace_than_the_scope(conn):
    work = rec(conn, "sprint planning", ns="work")
    home = rec(conn, "grocery list", ns="home")
    fact(conn, "the sprint goal is the payment rewrite", [home], ns="work")   # evidence in 'home'
    fact(conn, "payment for groceries is due friday", [work], ns="home")      # evidence in 'work'
    assert set(ids(run(conn, "payment"))) == {home, work}
    # scoped to work: only work passages; the work fact's evidence is in home: no vote
    assert ids(run(conn, "payment", namespaces=("work",))) == []
    assert ids(run(conn, "payment", namespaces=("home",))) == []
    assert set(ids(run(conn, "payment", namespaces=("home", "work")))) == {home, work}


def test_meaning_only_fact_below_floor_is_abstained_above_is_kept(conn):
    weak = rec(conn, "aaa")
    strong = rec(conn, "bbb")
    fw = fact(conn, "ccc", [weak])
    fs = fact(conn, "ddd", [strong])
    svc = Semantic(fact_sims={fpk(conn, fw): 0.2, fpk(conn, fs): 0.6})
    resp = run(conn, "something else entirely", {"semantic": svc})
    assert ids(resp) == [strong]
    drop = next(d for d in resp.trace.drops if d.stage == "abstention")
    assert drop.count == 1
    vote = resp.results[0].why.arms["fact"].votes[0]
    assert vote.semantic_rank == 1 and vote.semantic_raw == 0.6 and vote.keyword_rank is None
    # keyword evidence on the weak fact keeps it
    fact(conn, "something else about ccc", [weak])
    assert set(ids(run(conn, "something else entirely", {"semantic": svc}))) == {weak, strong}


def test_fact_ranking_sums_min_max_normalised_keyword_and_meaning(conn):
    a = rec(conn, "first")
    b = rec(conn, "second")
    c = rec(conn, "third")
    fa = fact(conn, "orchard apples harvest", [a])
    fb = fact(conn, "the pears", [b])
    fc = fact(conn, "the plums", [c])
    svc = Semantic(fact_sims={fpk(conn, fa): 0.5, fpk(conn, fb): 0.9, fpk(conn, fc): 0.1})
    resp = run(conn, "apples", {"semantic": svc})
    got = {r.record_id: r.why.arms["fact"] for r in resp.results}
    # keyword list: fa alone -> 1.0; meaning list: (cos - 0.1) / (0.9 - 0.1)
    assert got[a].raw == 1.0 + (0.5 - 0.1) / (0.9 - 0.1)
    assert got[b].raw == 1.0
    assert got[a].rank == 1 and got[b].rank == 2
    assert got[a].votes[0].keyword_rank == 1 and got[a].votes[0].semantic_rank == 2


def test_query_without_words_still_raises_when_no_arm_can_run(conn):
    from memo.errors import QuerySyntaxError

    note = rec(conn, "x")
    fact(conn, "y words", [note])
    with pytest.raises(QuerySyntaxError):
        run(conn, "???")
