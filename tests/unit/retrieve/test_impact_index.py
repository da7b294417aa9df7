"""The keyword arm's impact index (memo/retrieve/impact.py): FTS5's records read right, the
switch and threshold of the profile, staleness after writes, the background build."""

from __future__ import annotations

import numpy as np
import pytest
from retrieve_helpers import add

from memo.profile import load_profile
from memo.retrieve import SearchRequest, impact, search
from memo.retrieve.services import ArmServices
from memo.store import kw_postings
from memo.store.connect import db_file, read_tx


@pytest.fixture(autouse=True)
def _fresh_indexes():
    impact.forget_indexes()
    yield
    impact.forget_indexes()


def _profile(keyword_index: str = "impact", minimum: int = 0):
    return load_profile("rrf").with_overrides({"index.keyword": keyword_index,
                                               "index.impact_min_passages": minimum})


def _keyword(conn, query: str, prof):
    res = search(conn, SearchRequest(query=query, mode="keyword", response_format="explain"), prof, ArmServices())
    return [r.passage_id for r in res.results]   # (scores carry recency: the clock moves)


def test_varints_decode_sqlite_encoding() -> None:
    assert kw_postings.varints(bytes([0x05, 0x81, 0x00, 0xFF, 0x7F])) == [5, 128, 16383]


def test_index_reads_fts5s_own_statistics(fresh_db) -> None:
    add(fresh_db, "cells divide; the cell cycle", section="Cell biology")
    add(fresh_db, "mice and a mouse")
    index = impact.ensure_index(fresh_db)
    assert index.n_rows == 2 and len(index.pks) == 2
    # Porter stems from FTS5 itself: 'cells' and 'cell' are one term with two occurrences in row 1
    t = index.vocab["cell"]
    lo, hi = index.offsets[t], index.offsets[t + 1]
    assert index.freqs[lo:hi].tolist() == [3]            # cells, cell + section "Cell"
    assert "mice" in index.vocab and "mous" in index.vocab


def test_profile_switch_threshold_and_equal_results(fresh_db) -> None:
    for i in range(6):
        add(fresh_db, f"protein binding site {i} tumour" + " cell" * i)
    impact.ensure_index(fresh_db)
    before = dict(impact.STATS)
    on = _keyword(fresh_db, "cell binding", _profile("impact"))
    assert impact.STATS["impact"] == before["impact"] + 1
    off = _keyword(fresh_db, "cell binding", _profile("fts5"))
    above = _keyword(fresh_db, "cell binding", _profile("impact", minimum=7))   # 6 passages < 7
    # below the threshold a current index still serves (it is never built for it: below)
    assert impact.STATS["impact"] == before["impact"] + 2
    impact.forget_indexes()
    below = _keyword(fresh_db, "cell binding", _profile("impact", minimum=7))
    assert impact.STATS["impact"] == before["impact"] + 2                       # FTS5 answered
    assert impact.current_index(fresh_db) is None
    assert on == off == above == below and on


def test_a_write_makes_the_index_stale_until_rebuilt(fresh_db) -> None:
    add(fresh_db, "alpha beta")
    impact.ensure_index(fresh_db)
    with read_tx(fresh_db):
        assert impact.usable_index(fresh_db, "passages_fts") is not None
    add(fresh_db, "beta gamma")
    with read_tx(fresh_db):
        assert impact.usable_index(fresh_db, "passages_fts") is None
    # FTS5 answers meanwhile, with the new row
    assert len(_keyword(fresh_db, "gamma", _profile())) == 1
    impact.ensure_index(fresh_db)
    before = impact.STATS["impact"]
    assert len(_keyword(fresh_db, "gamma", _profile())) == 1
    assert impact.STATS["impact"] == before + 1


def test_second_miss_builds_in_the_background(fresh_db) -> None:
    add(fresh_db, "alpha beta")
    prof = _profile()
    key = (db_file(fresh_db), "passages_fts")
    _keyword(fresh_db, "alpha", prof)                    # miss 1: a one-shot process never builds
    assert key not in impact._BUILDING and key not in impact._INDEXES
    _keyword(fresh_db, "alpha", prof)                    # miss 2: build scheduled
    assert impact.wait_built(fresh_db, timeout=60)
    before = impact.STATS["impact"]
    assert _keyword(fresh_db, "alpha", prof)
    assert impact.STATS["impact"] == before + 1


def test_ties_come_in_pk_order(fresh_db) -> None:
    for i in range(5):
        add(fresh_db, f"words {i}")
    index = impact.ensure_index(fresh_db)
    score = np.ones(len(index.pks))                       # five equal scores
    assert [pk for pk, _ in impact.topk(index, score, None, 3)] == index.pks[:3].tolist()


def test_reindex_makes_the_index_stale_and_the_rebuild_ranks_the_same(fresh_db) -> None:
    from memo.ops.maintenance import reindex

    for i in range(4):
        add(fresh_db, f"tumour protein {i}" + " binding" * i)
    impact.ensure_index(fresh_db)
    before = _keyword(fresh_db, "binding protein", _profile())
    reindex(fresh_db)                                      # rebuilds FTS5: new structure record
    with read_tx(fresh_db):
        assert impact.usable_index(fresh_db, "passages_fts") is None
    impact.ensure_index(fresh_db)
    assert _keyword(fresh_db, "binding protein", _profile()) == before == _keyword(
        fresh_db, "binding protein", _profile("fts5"))


def _keyword_arm(conn, query: str, keyword_index: str, weight: float) -> list[tuple[int, float]]:
    from memo.retrieve.arms.base import ArmContext
    from memo.retrieve.arms.keyword import KeywordArm
    from memo.retrieve.scope import build_scope_sql
    from memo.types import Scope

    prof = _profile(keyword_index).with_overrides({"retrieve.keyword_section_weight": weight})
    with read_tx(conn):
        ctx = ArmContext(conn=conn, query=query, mode="keyword", scope_sql=build_scope_sql(Scope()),
                         fetch_depth=10, profile=prof)
        return [(h.pk, h.raw) for h in KeywordArm().run(ctx)]


@pytest.mark.parametrize("keyword_index", ["fts5", "impact"])
def test_section_weight_lifts_a_title_match_over_a_body_match(fresh_db, keyword_index) -> None:
    """retrieve.keyword_section_weight: one 'kinase' in a short body vs one in a longer
    passage's section (title).  Unweighted, the shorter passage wins (bm25's length norm);
    with the section weighing 3 the title match wins; 1.0 is FTS5's unweighted bm25 exactly."""
    from retrieve_helpers import pk_of

    body = pk_of(fresh_db, add(fresh_db, "kinase activity"))
    title = pk_of(fresh_db, add(fresh_db, "of the cell cycle regulation", section="kinase"))
    for i in range(4):                               # rows without the term: a positive idf
        add(fresh_db, f"unrelated filler passage number {i}")
    impact.ensure_index(fresh_db)
    unweighted = [(r[0], -r[1]) for r in fresh_db.execute(
        "SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH '\"kinase\"' ORDER BY s")]
    one = _keyword_arm(fresh_db, "kinase", keyword_index, 1.0)
    assert one == unweighted and [pk for pk, _ in one] == [body, title]
    three = _keyword_arm(fresh_db, "kinase", keyword_index, 3.0)
    assert [pk for pk, _ in three] == [title, body]
    weighted = [(r[0], -r[1]) for r in fresh_db.execute(
        "SELECT rowid, bm25(passages_fts, 1.0, 3.0) AS s FROM passages_fts WHERE passages_fts MATCH '\"kinase\"'"
        " ORDER BY s")]
    assert three == weighted
    assert dict(three)[body] == dict(one)[body]       # a body-only match keeps its score


def test_index_keeps_section_counts(fresh_db) -> None:
    add(fresh_db, "cells divide; the cell cycle", section="Cell biology")
    index = impact.ensure_index(fresh_db)
    t = index.vocab["cell"]
    lo, hi = index.offsets[t], index.offsets[t + 1]
    assert index.freqs[lo:hi].tolist() == [3] and index.section_freqs[lo:hi].tolist() == [1]
    assert impact.weighted_freqs(index, int(lo), int(hi), 2.5).tolist() == [2.0 + 2.5]


def test_stems_are_kept_per_tokenizer_and_words_and_equal_fts5s() -> None:
    """The stemmer's cache (memo.retrieve.impact._STEMS) answers what the in-memory FTS5
    table answers, per tokenizer, for any container of words; a caller that changes the
    list it got back does not change the next answer; a phrase stays None."""
    from memo.retrieve import impact

    impact._STEMS.clear()
    porter = "porter unicode61 remove_diacritics 2"
    fresh = impact._STEMMER._stems(porter, ("running", "Dogs"))
    assert fresh == ("run", "dog")
    got = impact._STEMMER.stems(porter, ("running", "Dogs"))
    assert got == list(fresh) and (porter, ("running", "Dogs")) in impact._STEMS
    got.append("x")
    assert impact._STEMMER.stems(porter, ["running", "Dogs"]) == ["run", "dog"]
    assert impact._STEMMER.stems("unicode61", ("running",)) == ["running"]     # no stemmer: its own entry
    assert impact._STEMMER.stems(porter, ("two words",)) is None


def test_a_database_created_again_at_the_path_is_not_served_the_old_index(tmp_path) -> None:
    """Two databases written alike at one path have the same FTS5 records; the postings'
    random generation tells them apart, so the first one's index is stale for the second."""
    from memo.store.db import open_db

    path = tmp_path / "memo.db"
    conn = open_db(path)
    add(conn, "alpha beta")
    impact.ensure_index(conn)
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"memo.db{suffix}").unlink(missing_ok=True)
    conn = open_db(path)
    try:
        add(conn, "gamma delta")
        with read_tx(conn):
            assert impact.usable_index(conn, "passages_fts") is None
        assert "gamma" in impact.ensure_index(conn).vocab
    finally:
        conn.close()
