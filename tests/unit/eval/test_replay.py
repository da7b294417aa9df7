"""Replay on the tiny synthetic set (keyword mode: no model), traces and metrics."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from memo_eval.grid import RunSpec, expand
from memo_eval.index import build_index
from memo_eval.metrics import per_query
from memo_eval.run import EvalOptions, run_eval
from memo_eval.traces import QUERIES_SCHEMA, RESULTS_SCHEMA, duck, read_table, resolve_runs


def _run(tiny, specs, workers=1, **kw):
    return run_eval(EvalOptions(dataset=str(tiny), split="test", specs=specs, semantic=False, workers=workers, **kw))


def test_run_writes_three_tables(tiny, tmp_path):
    res = _run(tiny, [RunSpec("rrf", mode="keyword")])
    assert res["queries"] == 4 and res["replay"]["searches"] == 4
    run = res["runs"][0]
    folder = resolve_runs([run["run_id"]])[0]
    assert folder.parent == tmp_path / "runs"
    q = pq.read_table(folder / "queries.parquet")
    r = pq.read_table(folder / "results.parquet")
    runs = pq.read_table(folder / "runs.parquet").to_pylist()[0]
    assert q.schema.equals(QUERIES_SCHEMA, check_metadata=False)
    assert r.schema.equals(RESULTS_SCHEMA, check_metadata=False)
    assert q.num_rows == 4
    assert runs["fusion.k"] == 60 and runs["weights.semantic"] == 0.5 and runs["profile"] == "rrf"
    assert runs["dataset"] == "tiny" and runs["split"] == "test" and runs["memo_version"]
    assert runs["ndcg_10"] == pytest.approx(run["metrics"]["ndcg_10"])
    rows = r.to_pylist()
    assert all(x["keyword_rank"] is not None for x in rows)
    # the per-query weights (trace.fusion_weights): rrf's fixed ones, nothing measured
    assert {(x["keyword_weight"], x["semantic_weight"], x["keyword_multiplier"], x["keyword_coverage"])
            for x in q.to_pylist()} == {(0.5, 0.5, None, None)}
    # rows are in memo's order: final desc, then tiebreak desc (rrf's tiebreak = min-max score)
    for qid in {x["qid"] for x in rows}:
        keys = [(x["final"], x["tiebreak"]) for x in sorted(rows, key=lambda x: x["rank"]) if x["qid"] == qid]
        assert keys == sorted(keys, reverse=True)
    assert {x["doc_id"] for x in rows} <= {f"d{i:02d}" for i in range(1, 13)}
    # The top result of q1 is the graded-2 doc and is labelled so.
    top = next(x for x in rows if x["qid"] == "q1" and x["rank"] == 1)
    assert top["doc_id"] == "d01" and top["relevant"] == 2
    # per-query metrics in the table = metrics recomputed from the results table
    ranked: dict[str, list[str]] = {}
    for x in sorted(rows, key=lambda x: (x["qid"], x["rank"])):
        ranked.setdefault(x["qid"], []).append(x["doc_id"])
    from memo_eval.datasets import load_eval_set
    again = per_query(load_eval_set(str(tiny), "test").qrels, ranked)
    for row in q.to_pylist():
        assert row["ndcg_10"] == pytest.approx(again[row["qid"]]["ndcg_10"])


def test_index_built_once(tiny):
    from memo_eval.datasets import load_eval_set

    es = load_eval_set(str(tiny), "test")
    first = build_index(es)
    again = build_index(load_eval_set(str(tiny), "train"))
    assert first.built and not again.built and first.path == again.path
    assert first.records == 12 and first.passages == 12


def test_grid_and_workers_agree(tiny):
    specs = expand(["rrf", "minmax"], ["cutoff.gap=0.2,1.0"], mode="keyword")
    one = _run(tiny, specs, workers=1, write=False)
    two = _run(tiny, specs, workers=2, write=False)
    assert len(one["runs"]) == 4
    for a, b in zip(one["runs"], two["runs"], strict=True):
        assert a["label"] == b["label"] and a["metrics"] == b["metrics"]


def test_duckdb_and_polars_views(tiny):
    res = _run(tiny, expand(["rrf"], ["cutoff.gap=0.3,1.0"], mode="keyword"))
    folders = resolve_runs([res["batch_id"]])       # a batch prefix resolves to its runs
    assert len(folders) == 2
    con = duck(folders)
    assert con.execute("SELECT count(*) FROM queries").fetchone()[0] == 8
    assert con.execute('SELECT count(DISTINCT "cutoff.gap") FROM runs').fetchone()[0] == 2
    assert read_table(folders, "results").height == con.execute("SELECT count(*) FROM results").fetchone()[0]


def test_cached_arms_are_flagged_and_typed_columns(tiny):
    """Later runs of a grid reuse the arm hits: flagged per query, their arm latency null,
    the producing search's latency kept apart; stage_ms and by_category/by_arm typed."""
    import pyarrow as pa

    res = _run(tiny, expand(["rrf"], ["cutoff.gap=0.2,1.0"], mode="keyword"))
    first, second = (resolve_runs([r["run_id"]])[0] for r in res["runs"])
    q1 = pq.read_table(first / "queries.parquet").to_pylist()
    q2 = pq.read_table(second / "queries.parquet").to_pylist()
    assert not any(q["arm_cached"] for q in q1) and all(q["arm_cached"] for q in q2)
    assert all(q["keyword_latency_ms"] is not None and not q["keyword_cached"] for q in q1)
    assert all(q["keyword_latency_ms"] is None and q["keyword_cached"] for q in q2)
    by_qid = {q["qid"]: q for q in q1}
    assert all(q["keyword_source_latency_ms"] == by_qid[q["qid"]]["keyword_latency_ms"] for q in q2)
    assert {q["label"] for q in q2} == {"rrf[keyword](cutoff.gap=1.0)"} and {q["profile"] for q in q2} == {"rrf"}
    r2 = pq.read_table(second / "results.parquet")
    assert set(r2.column("label").to_pylist()) == {"rrf[keyword](cutoff.gap=1.0)"}
    qt = pq.read_table(first / "queries.parquet")
    assert pa.types.is_struct(qt.schema.field("stage_ms").type) and q1[0]["stage_ms"]["arms"] is not None
    runs = pq.read_table(first / "runs.parquet")
    assert pa.types.is_list(runs.schema.field("by_arm").type)
    arms = {a["arm"]: a for a in runs.to_pylist()[0]["by_arm"]}
    assert arms["keyword"]["ran"] == 1.0 and arms["semantic"]["ran"] == 0.0
    con = duck([first, second])
    assert con.execute("SELECT count(*) FROM queries WHERE NOT arm_cached").fetchone()[0] == 4
    from memo_eval import analysis as A
    assert A.uncached_latency(con).height == 4


def test_query_rows_carry_the_adaptive_weights_and_their_evidence():
    """What the extra adaptive set (trace.fusion_weights) lands in queries.parquet's columns."""
    from types import SimpleNamespace

    from memo.retrieve.fusion.adaptive import adapt
    from memo_eval.datasets import EvalQuery
    from memo_eval.replay import _query_row

    fw = adapt({"semantic": 0.5, "keyword": 0.5}, 0.3, 0.6).as_dict()
    tr = SimpleNamespace(degraded={"flag": False}, cutoff_kind="none", candidates=3, latency_ms=1.0, arms=(),
                         stage_ms={}, rescore={}, fusion_weights=fw)
    resp = SimpleNamespace(results=(), reason=None, truncated=0, trace=tr)
    q = EvalQuery(qid="q1", text="x")
    row = _query_row(q, resp, 1.0)
    assert row["keyword_weight"] == 0.25 and row["semantic_weight"] == 0.5
    assert row["keyword_multiplier"] == 0.5 and row["keyword_coverage"] == 0.3


def test_plan_tasks_takes_each_query_through_every_run_of_its_group(monkeypatch):
    """A query's runs of one group are in one task (one worker, so its arms run once there),
    every (run, query) is planned exactly once, and groups respect GROUP_ROWS_MAX."""
    from memo_eval import replay as R

    specs = [object() for _ in range(7)]
    monkeypatch.setattr(R, "GROUP_ROWS_MAX", 3 * 10 * R.EVAL_LIMIT)      # 3 runs of 10 queries
    tasks = R.plan_tasks(specs, 10)
    seen = [(ri, qi) for runs, qidx in tasks for ri, _ in runs for qi in qidx]
    assert sorted(seen) == [(ri, qi) for ri in range(7) for qi in range(10)]
    groups = {tuple(ri for ri, _ in runs) for runs, _ in tasks}
    assert groups == {(0, 1, 2), (3, 4, 5), (6,)}
    firsts = [runs[0][0] for runs, _ in tasks]
    assert firsts == sorted(firsts)                 # groups in order: runs end roughly in order
    monkeypatch.setattr(R, "GROUP_ROWS_MAX", 10**9)
    (only_runs, _), *_ = R.plan_tasks(specs, 10)
    assert len(only_runs) == 7 and all(len(runs) == 7 for runs, _ in R.plan_tasks(specs, 10))


def test_each_query_runs_its_arms_once_across_workers(tiny, monkeypatch):
    """Two workers, a four-run grid: every query's keyword arm ran in exactly one search of
    the grid (before plan_tasks, tasks of one run's chunk went to either worker, and both
    ran the arms of most queries)."""
    import duckdb

    from memo_eval import replay as R

    monkeypatch.setattr(R, "CHUNK", 2)            # several tasks, so both workers take some
    monkeypatch.setattr(R, "QUERIES_MIN", 1)
    res = _run(tiny, expand(["rrf", "minmax"], ["cutoff.gap=0.2,1.0"], mode="keyword"), workers=2)
    assert res["replay"]["workers"] == 2
    folders = resolve_runs([res["batch_id"]])
    assert len(folders) == 4
    con = duck(folders)
    per_query = con.execute("SELECT qid, count(*) FILTER (WHERE NOT keyword_cached) FROM queries GROUP BY qid").fetchall()
    assert per_query and all(n == 1 for _, n in per_query), per_query
    assert isinstance(con, duckdb.DuckDBPyConnection)


def test_the_parent_pauses_its_collector_while_workers_search_and_leaves_its_settings(tiny, monkeypatch):
    """With spawned workers the parent collects parts with its cyclic collector off (what it
    holds then has no cycles; a collection walked all of it) and afterwards has its own
    thresholds and collector back: the pre-flight's worker set-up does not leak into the caller."""
    import gc

    from memo_eval import replay as R

    monkeypatch.setattr(R, "CHUNK", 2)
    monkeypatch.setattr(R, "QUERIES_MIN", 1)
    seen: list[bool] = []
    real_collect_state = R._collector_paused

    def watching(pause):
        seen.append(pause)
        return real_collect_state(pause)

    monkeypatch.setattr(R, "_collector_paused", watching)
    states: list[bool] = []
    real_finish = R.merge

    def merge_watching(parts):             # runs on the parent's finishing threads
        states.append(gc.isenabled())
        return real_finish(parts)

    monkeypatch.setattr(R, "merge", merge_watching)
    before = gc.get_threshold()
    assert gc.isenabled()
    _run(tiny, expand(["rrf"], ["cutoff.gap=0.2,1.0"], mode="keyword"), workers=2)
    assert seen == [True] and states and not any(states)
    assert gc.get_threshold() == before and gc.isenabled()
    _run(tiny, [RunSpec("rrf", mode="keyword")], workers=1)     # searches in this process: collector on
    assert seen == [True, False] and states[-1] is True
    assert gc.get_threshold() == before and gc.isenabled()


def test_a_script_without_a_main_guard_does_not_hang(tiny, tmp_path):
    """A program that runs an evaluation at its top level, outside ``if __name__ ==
    "__main__":``, with two replay workers: they do not run it again (spawn would, as
    ``__mp_main__``; each worker then failed at start and the pool started it again, forever)."""
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import os
        from memo_eval.grid import expand
        from memo_eval.run import EvalOptions, run_eval
        print("top level", os.getpid(), flush=True)
        specs = expand(["rrf", "minmax"], ["cutoff.gap=0.2,0.4,0.6,0.8,0.9,1.0"], mode="keyword")
        res = run_eval(EvalOptions(dataset={str(tiny)!r}, split="test", specs=specs, semantic=False,
                                   workers=2, write=False))
        print("runs", len(res["runs"]), "workers", res["replay"]["workers"], flush=True)
    """))
    repo = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(repo)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[1:] == ["runs 12 workers 2"], proc.stdout
    assert proc.stdout.count("top level") == 1
