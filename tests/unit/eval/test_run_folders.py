"""A run folder appears only complete, and Ctrl-C keeps the runs that had finished, whole,
and says so in one line (exit 130).  Tiny synthetic set, keyword mode, one worker."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import memo_eval.replay as RP
import memo_eval.run as R
from memo.cli import app
from memo_eval.grid import expand
from memo_eval.listing import list_runs
from memo_eval.run import EvalOptions, Interrupted, run_eval

TABLES = ["queries.parquet", "results.parquet", "runs.parquet"]
runner = CliRunner()


class _InlineExecutor:
    """The replay's finish threads, run inline: a run is scored and staged before the next
    tick, so where a Ctrl-C lands is deterministic."""

    def __init__(self, *a, **k):
        pass

    def submit(self, fn, *args):
        f: Future = Future()
        f.set_result(fn(*args))
        return f

    def shutdown(self, *a, **k):
        pass


def _grid(tiny, out, **kw):
    specs = expand(["rrf"], ["fusion.k=10,20,40,60"], mode="keyword")
    return EvalOptions(dataset=str(tiny), semantic=False, workers=1, out=out, specs=specs, **kw)


def _folders(out: Path) -> dict[str, list[str]]:
    return {d.name: sorted(f.name for f in d.iterdir()) for d in out.iterdir()} if out.is_dir() else {}


def test_ctrl_c_mid_replay_keeps_finished_runs_whole(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(RP, "ThreadPoolExecutor", _InlineExecutor)
    monkeypatch.setattr(RP, "GROUP_ROWS_MAX", 1)        # one run per group: runs end one by one
    out = tmp_path / "runs"
    seen = []

    def ticks(total, unit="searches"):
        def tick(n):
            if unit != "searches":                       # the index's counts (it reports its last one)
                return
            seen.append(n)
            if sum(seen) >= 2 * 4:                       # two runs of 4 queries replayed: Ctrl-C
                raise KeyboardInterrupt
        return tick

    with pytest.raises(KeyboardInterrupt) as err:       # Ctrl-C stays a KeyboardInterrupt to callers
        run_eval(_grid(tiny, out), tick_factory=ticks)
    assert isinstance(err.value, Interrupted) and str(err.value).startswith("interrupted; kept the 2 of 4 runs that had finished (batch ")
    folders = _folders(out)
    assert len(folders) == 2 and all(files == TABLES for files in folders.values())   # no .incomplete left
    rows = [pq.read_table(out / name / "runs.parquet").to_pylist()[0] for name in folders]
    assert {r["batch_runs"] for r in rows} == {4}
    assert list_runs(out, datasets=False)["n_runs"] == 2


def test_ctrl_c_while_writing_keeps_every_run(tiny, tmp_path, monkeypatch):
    """The probe's case: Ctrl-C after the replay, while the runs' rows were written: it left
    folders with queries and results only, which the readers took for nothing at all."""
    out = tmp_path / "runs"
    calls = []
    real = R.write_run_row

    def interrupted_once(folder, row):
        calls.append(row["run_id"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(folder, row)
    monkeypatch.setattr(R, "write_run_row", interrupted_once)
    with pytest.raises(KeyboardInterrupt) as err:
        run_eval(_grid(tiny, out))
    assert isinstance(err.value, Interrupted) and "interrupted while writing; all 4 runs kept" in str(err.value)
    folders = _folders(out)
    assert len(folders) == 4 and all(files == TABLES for files in folders.values())


def test_folders_appear_complete(tiny, tmp_path, monkeypatch):
    """While a batch is written, nothing of it is under the runs dir but complete runs."""
    out = tmp_path / "runs"
    real = R.write_traces
    seen: list[dict[str, list[str]]] = []

    def watch(folder, *a):
        seen.append(_folders(out))
        return real(folder, *a)
    monkeypatch.setattr(R, "write_traces", watch)
    res = run_eval(_grid(tiny, out))
    assert seen and all(all(files == TABLES for name, files in s.items() if not name.startswith(".")) for s in seen)
    assert sorted(_folders(out)) == sorted(r["run_id"] for r in res["runs"])


def test_cli_says_what_was_kept(tiny, monkeypatch):
    def stop(*a, **k):
        raise Interrupted("interrupted; kept the 1 of 4 runs that had finished (batch b, each complete) in /x")
    monkeypatch.setattr(R, "run_eval", stop)
    res = runner.invoke(app, ["eval", "run", "-d", str(tiny), "--mode", "keyword", "--quiet"])
    assert res.exit_code == 130
    assert res.stderr.splitlines() == ["error: interrupted; kept the 1 of 4 runs that had finished (batch b, each "
                                       "complete) in /x (run the command again to replay the rest)"]

