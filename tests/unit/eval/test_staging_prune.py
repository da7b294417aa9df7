"""`memo eval cache --prune` removes the staging folders (<runs dir>/.incomplete/<batch id>)
of batches that died without cleaning up (kill -9), never one whose batch still holds its
lock, and says how many folders and bytes it removed; listings never see .incomplete."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app
from memo_eval import staging as S
from memo_eval.grid import expand
from memo_eval.listing import list_runs
from memo_eval.run import EvalOptions, run_eval
from memo_eval.traces import claim_staging, discard_staging, resolve_runs, staging_dir

runner = CliRunner()

# A batch in another process: claims its staging folder, writes a run's file, then either
# dies by SIGKILL (no cleanup runs) or says "ready" and waits for stdin to close.
_BATCH = """
import os, signal, sys
from pathlib import Path
from memo_eval.traces import claim_staging
folder = Path(sys.argv[1])
lock = claim_staging(folder)
(folder / "run-1").mkdir()
(folder / "run-1" / "queries.parquet").write_bytes(b"q" * 1000)
if sys.argv[2] == "die":
    os.kill(os.getpid(), signal.SIGKILL)
print("ready", flush=True)
sys.stdin.read()
"""


def _killed_batch(runs: Path, batch_id: str) -> Path:
    folder = staging_dir(runs, batch_id)
    proc = subprocess.run([sys.executable, "-c", _BATCH, str(folder), "die"], check=False)
    assert proc.returncode == -signal.SIGKILL and (folder / S.LOCK).is_file()
    return folder


def _live_batch(runs: Path, batch_id: str) -> tuple[Path, subprocess.Popen]:
    folder = staging_dir(runs, batch_id)
    proc = subprocess.Popen([sys.executable, "-c", _BATCH, str(folder), "wait"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return folder, proc


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()


def test_abandoned_batch_folder_is_pruned_and_counted(tmp_path):
    runs = tmp_path / "runs"
    dead = _killed_batch(runs, "20260101T000000aaaa-tiny-test")
    [found] = S.scan(runs)
    assert found.status == "abandoned" and found.bytes >= 1000 and found.owner.startswith("pid ")
    gone = S.prune(runs)
    assert [b.batch_id for b in gone] == [dead.name] and gone[0].bytes == found.bytes
    assert not dead.exists() and not (runs / S.STAGING).exists()     # .incomplete too, once empty
    assert S.scan(runs) == [] and S.prune(runs) == []


def test_live_batch_of_another_process_is_kept(tmp_path):
    runs = tmp_path / "runs"
    live, proc = _live_batch(runs, "20260101T000000bbbb-tiny-test")
    try:
        dead = _killed_batch(runs, "20260101T000000cccc-tiny-test")
        by_id = {b.batch_id: b.status for b in S.scan(runs)}
        assert by_id == {live.name: "live", dead.name: "abandoned"}
        assert [b.batch_id for b in S.prune(runs)] == [dead.name]
        assert (live / "run-1" / "queries.parquet").is_file() and not dead.exists()
        # even one marked abandoned by a stale scan is kept: prune takes the lock first
        stale = S.StagedBatch(live.name, "abandoned", 0, None, live)
        assert S.prune(runs, [stale]) == [] and live.is_dir()
        # and an old modification time changes nothing while the lock is held
        old = time.time() - S.UNOWNED_AGE_S - 60
        os.utime(live / "run-1" / "queries.parquet", (old, old))
        assert S.prune(runs) == [] and live.is_dir()
    finally:
        _stop(proc)                                   # SIGKILL: the kernel drops the lock
    [after] = S.scan(runs)
    assert after.status == "abandoned"
    assert [b.batch_id for b in S.prune(runs)] == [live.name] and not (runs / S.STAGING).exists()


def test_lock_held_in_this_process_is_seen(tmp_path):
    """flock, not fcntl record locks: a prune in the batch's own process sees it live."""
    runs = tmp_path / "runs"
    folder = staging_dir(runs, "20260101T000000dddd-tiny-test")
    lock = claim_staging(folder)
    try:
        assert [b.status for b in S.scan(runs)] == ["live"]
        assert S.prune(runs) == [] and folder.is_dir()
    finally:
        discard_staging(folder, lock)
    assert not folder.exists() and not (runs / S.STAGING).exists() and lock.fd is None


def test_folder_without_lock_is_pruned_only_when_old(tmp_path):
    """A folder left by a harness older than the lock: kept while recent (it may be a live
    batch of that harness), pruned once nothing in it changed for UNOWNED_AGE_S."""
    runs = tmp_path / "runs"
    folder = runs / S.STAGING / "20250101T000000eeee-tiny-test"
    (folder / "run-1").mkdir(parents=True)
    (folder / "run-1" / "results.parquet").write_bytes(b"r" * 50)
    assert [(b.status, b.bytes, b.owner) for b in S.scan(runs)] == [("unowned", 50, None)]
    assert S.prune(runs) == [] and folder.is_dir()
    old = time.time() - S.UNOWNED_AGE_S - 60
    for p in (folder / "run-1" / "results.parquet", folder / "run-1", folder):
        os.utime(p, (old, old))
    assert [b.status for b in S.scan(runs)] == ["abandoned"]
    assert [b.bytes for b in S.prune(runs)] == [50] and not folder.exists()


def test_claim_makes_the_folder_again_after_a_prune(tmp_path, monkeypatch):
    """A prune that deleted the folder (its lock was free: the batch had opened, not yet
    locked) leaves the batch to make it again, its lock at the path."""
    folder = staging_dir(tmp_path / "runs", "20260101T000000ffff-tiny-test")
    real = os.open
    opened = []

    def open_then_pruned(path, flags, *a, **k):
        fd = real(path, flags, *a, **k)
        if str(path).endswith(S.LOCK) and not opened:
            opened.append(path)
            monkeypatch.undo()
            shutil.rmtree(folder)          # what a prune does between the batch's open and flock
        return fd

    monkeypatch.setattr(S.os, "open", open_then_pruned)
    lock = S.claim(folder)
    monkeypatch.undo()
    try:
        assert opened and (folder / S.LOCK).is_file() and S._same_file(lock.fd, folder / S.LOCK)
        assert [b.status for b in S.scan(folder.parents[1])] == ["live"]
    finally:
        lock.release()


def test_cache_prune_command_reports_batch_folders(tmp_path):
    runs = tmp_path / "runs"
    dead = _killed_batch(runs, "20260101T000000abab-tiny-test")
    live, proc = _live_batch(runs, "20260101T000000cdcd-tiny-test")
    try:
        res = runner.invoke(app, ["eval", "cache", "--json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)["staging"]
        assert doc["summary"]["abandoned"]["batches"] == 1 and doc["summary"]["live"]["batches"] == 1
        assert doc["removed_batches"] == 0 and dead.is_dir()
        human = runner.invoke(app, ["eval", "cache"])
        assert "abandoned 1" in human.stdout and "--prune" in human.stdout
        res = runner.invoke(app, ["eval", "cache", "--prune", "--json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)["staging"]
        size = next(b["bytes"] for b in doc["batches"] if b["batch_id"] == dead.name)
        assert doc["removed_batches"] == 1 and doc["removed_bytes"] == size >= 1000
        assert {b["batch_id"]: b["deleted"] for b in doc["batches"]} == {dead.name: True, live.name: False}
        assert not dead.exists() and live.is_dir()
    finally:
        _stop(proc)
    res = runner.invoke(app, ["eval", "cache", "--prune", "-v", "--runs-dir", str(runs)])
    assert res.exit_code == 0, res.output
    assert "removed 1 abandoned batch folders" in res.stdout and f".incomplete/{live.name}  (deleted)" in res.stdout
    assert not (runs / S.STAGING).exists()


def test_batch_holds_its_lock_while_it_replays_and_listing_ignores_staging(tiny, tmp_path):
    runs = tmp_path / "runs"
    seen: list[list[str]] = []

    def ticks(total, unit="searches"):
        def tick(n):
            if not seen and unit == "searches":        # replaying (the index reports its last count too)
                seen.append([b.status for b in S.scan(runs)])
                assert S.prune(runs) == []         # the running batch's folder is kept
        return tick

    specs = expand(["rrf"], ["fusion.k=10,20"], mode="keyword")
    res = run_eval(EvalOptions(dataset=str(tiny), semantic=False, workers=1, out=runs, specs=specs),
                   tick_factory=ticks)
    assert seen == [["live"]] and not (runs / S.STAGING).exists()
    assert list_runs(runs, datasets=False)["n_runs"] == 2
    # a whole run left in a dead batch's staging folder is not a run: not listed, not resolved
    run = Path(res["runs"][0]["path"])
    dead = _killed_batch(runs, "20260101T000000eeee-tiny-test")
    shutil.copytree(run, dead / ("x" + run.name))
    assert list_runs(runs, datasets=False)["n_runs"] == 2
    assert {p.name for p in resolve_runs([res["batch_id"]], runs)} == {Path(r["path"]).name for r in res["runs"]}
    assert [b.batch_id for b in S.prune(runs)] == [dead.name]
    assert list_runs(runs, datasets=False)["n_runs"] == 2
