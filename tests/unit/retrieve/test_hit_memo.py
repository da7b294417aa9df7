"""memo.retrieve.hit_memo: what the stages after fusion know of a candidate from the arms'
hits alone (its row, its relevance and band, abstention rule 1's verdict, the fields that
vary for narrow_hint, an arm's voters) is kept for the searches that fuse the very same
hits, as an eval grid does through the arm-hit cache.  Each such search must answer exactly
what a search without the cache answers: results, why, drops, narrow hint and trace."""

from __future__ import annotations

import itertools

import pytest
from retrieve_helpers import FakeSemantic, add, pk_of

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.hit_memo import hit_memo

NOW = "2024-07-01T00:00:00Z"
MODEL = "all-minilm-l6-v2-int8"
TEXTS = (   # text, kind, namespace, date
    ("How to clean a swimming pool filter", "doc", "home", None),
    ("Pool party on Saturday, bring towels", "note", "home", "2024-04-02T00:00:00Z"),
    ("We talked about filter cartridges for the pool pump", "conversation", "work", "2024-06-01"),
    ("Chocolate cake needs cocoa and butter", "note", "home", "2024-06-30"),
    ("The pool pump hums when the filter clogs", "conversation", "work", "2023-01-05"),
    ("Butter the cake tin before the cocoa batter goes in", "doc", "work", None),
    ("A filter for the coffee machine, paper or metal", "note", "work", "2022-03-03"),
    ("Pump up the bike tyres before the trip", "note", "home", "2024-06-29"),
    ("def clean_filter(pool):\n    pool.pump.stop()", "code", "work", None),   # a code share (code_queries)
)
QUERIES = ("pool filter", "cocoa cake", "pump", "filter", "xylophone")


@pytest.fixture
def sims(conn):
    pks = [pk_of(conn, add(conn, text, kind=kind, namespace=ns, **({"event_at": when} if when else {})))
           for text, kind, ns, when in TEXTS]
    # cosines on both sides of the model's semantic_floor (0.389): rule 1 drops some
    return {pk: 0.75 - 0.09 * i for i, pk in enumerate(pks)}


def _grid():
    for name, k, w, floor, half_life in itertools.product(
            ("zscore", "rrf", "minmax"), (20, 60), (0.3, 0.7), (0.3, 0.5), (10.0, 300.0)):
        over = {"weights.semantic": w, f"models.{MODEL}.semantic_floor": floor,
                "recency.half_life_days": half_life, "cutoff.gap": 1.0}
        if name == "rrf":
            over["fusion.k"] = k
        elif k != 20:
            continue
        yield load_profile(name).with_overrides(over)


def _answer(resp):
    tr = resp.trace
    return (resp.results, resp.abstained, resp.cause, resp.truncated, resp.narrow_hint,
            tuple((a.name, a.ran, a.candidates, a.matched) for a in tr.arms), tr.drops, tr.candidates,
            tr.cutoff_kind, tr.budget, tr.rescore, tr.fusion_weights)


@pytest.mark.parametrize("limit", [2, 100])
def test_a_grid_through_the_arm_hit_cache_answers_as_searches_without_it(conn, sims, limit):
    fake = FakeSemantic(sims)
    cached = {"semantic": fake, "arm_cache": True}
    profiles = list(_grid())
    seen = 0
    for query in QUERIES:
        for prof in profiles:        # one query through every run, as a replay task does
            req = SearchRequest(query, response_format="explain", now=NOW, limit=limit)
            want = search(conn, req, prof, {"semantic": fake})
            got = search(conn, req, prof, cached)
            assert _answer(got) == _answer(want), (query, prof.name, prof.flat())
            seen += bool(want.results)
    assert seen > 0
    assert conn_cache(conn)["hit_memo"]          # the memo was used, not bypassed


def test_the_memo_is_the_hits_own_and_the_datas(conn, sims):
    from memo.retrieve.types import ArmHit, ArmRun

    hits = (ArmHit(1, 1, 0.5),)
    runs = [ArmRun("keyword", True, "", False, hits, 0.0), ArmRun("semantic", False, "", False, (), 0.0)]
    memo = hit_memo(conn, runs)
    assert hit_memo(conn, list(runs)) is memo                       # the same hit tuples
    assert hit_memo(conn, [ArmRun("keyword", True, "", False, tuple(hits), 0.0)]) is memo
    assert hit_memo(conn, [ArmRun("keyword", True, "", False, (ArmHit(1, 1, 0.5),), 0.0)]) is not memo
    assert hit_memo(conn, [ArmRun("exact", True, "", False, hits, 0.0)]) is not memo
    add(conn, "a write: the data changed")
    assert hit_memo(conn, runs) is not memo
