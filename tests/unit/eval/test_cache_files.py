"""The harness's cache: a build leaves no temporary files; scan tells current, stale,
orphan and building entries apart; prune deletes only stale and orphan ones."""

from __future__ import annotations

import os
import subprocess
import sys

from memo.store.db import open_db
from memo_eval.cache import cache_root
from memo_eval.cache_files import prune, scan, summary
from memo_eval.datasets import load_eval_set
from memo_eval.index import build_index, index_suffix


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_build_leaves_only_the_index(tiny):
    built = build_index(load_eval_set(str(tiny), "test"))
    left = sorted(p.name for p in built.path.parent.iterdir())
    assert not [n for n in left if ".tmp" in n], left
    entries = scan()
    assert [(e.kind, e.status) for e in entries] == [("index", "current")]
    assert entries[0].files[0] == built.path


def test_scan_and_prune(tiny):
    current = build_index(load_eval_set(str(tiny), "test")).path
    index = current.parent
    root = cache_root()
    # an index of other code, with the files SQLite and memo keep beside it
    stale = index / "tiny-0123456789ab-v1-deadbeef.db"
    for name in (stale.name, f"{stale.name}-wal", f"{stale.name}-shm", f"{stale.name}-writer.lock"):
        (index / name).write_bytes(b"x" * 10)
    dead, alive = _dead_pid(), os.getpid()
    orphan = index / f"{current.name}.tmp{dead}"
    (index / orphan.name).write_bytes(b"y" * 5)
    (index / f"{orphan.name}-writer.lock").write_bytes(b"")
    building = index / f"{current.name}.tmp{alive}"
    building.write_bytes(b"z")
    (root / "vectors").mkdir()
    vec = root / "vectors" / "tiny-model-0123.npy"
    vec.write_bytes(b"v" * 7)
    vec_orphan = root / "vectors" / f"tiny-model-0123.tmp{dead}.npy"
    vec_orphan.write_bytes(b"v")
    (root / "datasets" / "mine").mkdir(parents=True)
    (root / "datasets" / "mine" / "corpus.jsonl").write_bytes(b"d" * 3)

    by_name = {e.name: e for e in scan()}
    assert by_name[f"index/{stale.name}"].status == "stale"
    assert by_name[f"index/{stale.name}"].bytes == 40 and len(by_name[f"index/{stale.name}"].files) == 4
    assert by_name[f"index/{orphan.name}"].status == "orphan" and len(by_name[f"index/{orphan.name}"].files) == 2
    assert by_name[f"index/{building.name}"].status == "building"
    assert by_name[f"index/{current.name}"].status == "current" and current.name.endswith(index_suffix())
    assert by_name["vectors/tiny-model-0123.npy"].status == "current"
    assert by_name[f"vectors/{vec_orphan.name}"].status == "orphan"
    assert by_name["datasets/mine"].status == "current" and by_name["datasets/mine"].bytes == 3
    counts = summary(list(by_name.values()))
    assert counts["stale"] == {"entries": 1, "bytes": 40} and counts["orphan"]["entries"] == 2

    gone = prune()
    assert sorted(e.name for e in gone) == sorted([f"index/{stale.name}", f"index/{orphan.name}",
                                                   f"vectors/{vec_orphan.name}"])
    assert not any(p.name.startswith(stale.name) or p.name.startswith(orphan.name) for p in index.iterdir())
    assert building.exists() and vec.exists() and (root / "datasets" / "mine" / "corpus.jsonl").exists()
    conn = open_db(current, write=False)         # the current index is untouched and still opens
    try:
        assert conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == 12
    finally:
        conn.close()
    assert {e.status for e in scan()} == {"current", "building"}


def test_empty_or_missing_cache():
    assert scan() == [] and prune() == []
