"""Rough edges of `memo eval` a user probe met: the cache called the current index's graph
sidecars stale (and --prune deleted them); scipy and matplotlib warnings leaked to stderr
from `compare` and `report`; `-s` grids dropped an empty value silently and refused a
misspelt key without naming the right one."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from memo.embed import sidecar as vector_sidecar
from memo.errors import ProfileError, ValidationError
from memo.graph import sidecar as graph_sidecar
from memo_eval import plots
from memo_eval.cache import cache_root
from memo_eval.cache_files import prune, scan
from memo_eval.compare import paired_tests
from memo_eval.grid import expand, parse_set
from memo_eval.index import index_suffix

# 1. memo's derived files beside a cached index count with that index.


def _beside(db: Path) -> list[Path]:
    """The files memo derives from a database, named by memo's own functions."""
    return [graph_sidecar.sidecar_path(db), graph_sidecar.titles_path(db), graph_sidecar.subject_path(db, "sections"),
            vector_sidecar.sidecar_path(db, "bge-small")]


def test_graph_sidecars_count_with_their_index():
    index = cache_root() / "index"
    index.mkdir(parents=True)
    current = index / f"scifact-0123456789ab{index_suffix()}"
    stale = index / "scifact-0123456789ab-v1-deadbeef.db"
    removed = index / f"nfcorpus-0123456789ab{index_suffix()}"      # its database deleted by hand
    for db in (current, stale):
        for f in (db, Path(f"{db}-wal"), *_beside(db)):
            f.write_bytes(b"x" * 10)
    for f in _beside(removed):
        f.write_bytes(b"y")

    by_name = {e.name: e for e in scan()}
    assert sorted(by_name) == sorted(f"index/{db.name}" for db in (current, stale, removed))
    assert by_name[f"index/{current.name}"].status == "current"
    assert set(by_name[f"index/{current.name}"].files) == {current, Path(f"{current}-wal"), *_beside(current)}
    assert by_name[f"index/{current.name}"].bytes == 60
    assert by_name[f"index/{stale.name}"].status == "stale" and len(by_name[f"index/{stale.name}"].files) == 6
    assert by_name[f"index/{removed.name}"].status == "stale"

    prune()
    assert sorted(p.name for p in index.iterdir()) == sorted(
        p.name for p in (current, Path(f"{current}-wal"), *_beside(current)))


def test_a_sidecar_being_written_is_not_pruned():
    """A graph or vector sidecar is written under ``memo.store.temp_names.temp_beside``'s
    name, then renamed: while its process runs it is being built (prune keeps it), once
    the process is gone it is an orphan."""
    import os

    from memo.store.temp_names import temp_beside

    index = cache_root() / "index"
    index.mkdir(parents=True)
    db = index / f"scifact-0123456789ab{index_suffix()}"
    db.write_bytes(b"x")
    mine = temp_beside(graph_sidecar.sidecar_path(str(db)))
    mine.write_bytes(b"half")
    gone = mine.with_name(mine.name.replace(f"-{os.getpid()}-", "-999999999-"))
    gone.write_bytes(b"half")
    by_name = {e.name: e.status for e in scan()}
    assert by_name[f"index/{mine.name}"] == "building" and by_name[f"index/{gone.name}"] == "orphan"
    prune()
    assert mine.exists() and not gone.exists()


# 2. No library warning reaches stderr.

@pytest.mark.parametrize("shift", [0.1, 0.25, -0.3])
def test_constant_difference_has_no_t_test(shift):
    """B = A + c on every query (up to float noise): the differences have no spread, the
    t statistic is undefined; scipy warned of catastrophic cancellation and gave p ~ 1e-60."""
    a = [0.5, 0.3, 0.7, 0.2, 0.9]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = paired_tests(a, [x + shift for x in a])
    assert res["t_stat"] is None and res["t_p"] is None
    assert res["wilcoxon_p"] == pytest.approx(0.0625)
    assert res["wins" if shift > 0 else "losses"] == 5
    res = paired_tests(a, [0.6, 0.3, 0.8, 0.2, 0.95])          # differences with a spread: tested
    assert res["t_p"] == pytest.approx(0.089, abs=1e-3)
    assert paired_tests(a, a)["t_p"] == 1.0                     # identical runs, as before


_LONG = [f"/home/someone/projects/memo-profiles/a-long-folder/custom-{i}.toml"
         f"(fusion.k={i},weights.semantic=0.5,weights.keyword=0.5,arms.graph=true)" for i in range(12)]


@pytest.mark.parametrize("name", ["metric_vs_constant", "arm_contribution", "latency", "metric_bars",
                                  "query_deltas", "query_deltas_many", "weight_gain", "recall_curves",
                                  "recall_table", "category_bars"])
def test_plots_fit_long_labels_without_warning(tmp_path, name):
    """Run labels wider than the figure: tight_layout warned "Tight layout not applied" and
    cut them off.  Now the saved picture widens to hold them, silently."""
    curve = [(1, 0.1), (10, 0.5), (100, 0.9)]
    draw = {
        "metric_vs_constant": lambda p: plots.metric_vs_constant(p, "fusion.k", {lb: [(1, .5), (2, .6)] for lb in _LONG},
                                                                 "ndcg_10"),
        "arm_contribution": lambda p: plots.arm_contribution(p, _LONG, ["keyword", "semantic"],
                                                             {lb: {"keyword": .4, "semantic": .6} for lb in _LONG}),
        "latency": lambda p: plots.latency(p, {lb: [1.0, 2.0, 3.0] for lb in _LONG}),
        "metric_bars": lambda p: plots.metric_bars(p, "ndcg_10", [(lb, .5, .4, .6) for lb in _LONG], [("BM25", .6)]),
        "query_deltas": lambda p: plots.query_deltas(p, "ndcg_10", _LONG[0], {lb: [.1, -.1, 0] for lb in _LONG[:5]}),
        "query_deltas_many": lambda p: plots.query_deltas(p, "ndcg_10", _LONG[0], {lb: [.1, -.1, 0] for lb in _LONG}),
        "weight_gain": lambda p: plots.weight_gain(p, "ndcg_10", _LONG[0] * 2, {lb: [(.5, .1), (1.0, 0)] for lb in _LONG}),
        "recall_curves": lambda p: plots.recall_curves(p, {lb: curve for lb in _LONG[:6]}),
        "recall_table": lambda p: plots.recall_curves(p, {lb: curve for lb in _LONG}),
        "category_bars": lambda p: plots.category_bars(p, "recall_10", {lb: {"1": .5, "2": .6} for lb in _LONG}),
    }[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = draw(tmp_path / f"{name}.png")
    assert out.stat().st_size > 0


# 3. -s KEY=V1,V2: an empty value and a misspelt key.

@pytest.mark.parametrize(("option", "which", "kept"), [("weights.semantic=0.5,,0.7", "value 2 of 3", "0.5,0.7"),
                                                      ("fusion.k=20,", "value 2 of 2", "20"),
                                                      ("fusion.k=,20", "value 1 of 2", "20")])
def test_empty_grid_value_is_refused(option, which, kept):
    with pytest.raises(ValidationError, match=f"{which} is empty") as err:
        parse_set(option)
    assert err.value.hint == f"drop the extra comma: --set {option.split('=')[0]}={kept}"
    assert "\n" not in err.value.one_line()


def test_unknown_key_names_the_nearest():
    with pytest.raises(ProfileError, match="unknown key fusion.kk") as err:
        expand(["rrf"], ["fusion.kk=20,60"])
    assert err.value.hint.startswith("did you mean fusion.k?")
    with pytest.raises(ProfileError) as err:
        parse_set("weights.semantc=0.5")
    assert err.value.hint.startswith("did you mean weights.semantic?")
    with pytest.raises(ProfileError) as err:
        parse_set("weights.zzz=0.5")
    assert "semantic, keyword" in err.value.hint                 # no near key: the arms
    with pytest.raises(ProfileError) as err:
        parse_set("nothing.like.it=1")
    assert err.value.hint == ProfileError.hint
    # known keys, renamed ones and list keys still parse
    assert parse_set("fusion.k=20,60") == ("fusion.k", [20, 60])
    assert parse_set("retrieve.keyword_index=fts5") == ("retrieve.keyword_index", ["fts5"])
    assert parse_set("recency.aging_kinds=note,conversation") == ("recency.aging_kinds", ["note,conversation"])
