"""Faults named for what they are (issue 33.4): a read-only database or folder, and a full
disk, through the real `memo` CLI on real file systems.

Read-only: tests run as root here, and root ignores file modes, so the folder is made
read-only with a read-only bind mount (the kernel refuses writes with EROFS, root too);
without root, `chmod 444` / `555` does it.  Disk full: a 1 MiB tmpfs, which needs root
(skipped otherwise: RLIMIT_FSIZE would give EFBIG, not a full disk).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()


def js(*args: str, code: int = 0) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == code, (result.exit_code, result.output)
    return json.loads(result.stdout)


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("seed")
    notes = base / "notes"
    notes.mkdir()
    for i in range(5):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThe deploy step {i} uses retries.\n")
    path = base / "m.db"
    js("import", str(notes), "--db", str(path), "--no-embed", "--no-progress")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def read_only_db(seeded: Path, tmp_path: Path) -> Iterator[Path]:
    """A memo database in a folder nobody (root included) may write."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "m.db"
    shutil.copy(seeded, db)
    if os.geteuid() != 0:
        db.chmod(0o444)
        folder.chmod(0o555)
        yield db
        folder.chmod(0o755)
        return
    if not (_mount("--bind", str(folder), str(folder))
            and _mount("-o", "remount,bind,ro", str(folder))):
        subprocess.run(["umount", str(folder)], capture_output=True)
        pytest.skip("cannot make a read-only bind mount here (root without mount rights)")
    try:
        yield db
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)   # -l: this process may still hold a connection


def test_a_read_only_database_serves_searches_and_refuses_writes_by_name(read_only_db):
    db = str(read_only_db)
    with pytest.raises(OSError):            # really read-only, for root too
        open(read_only_db, "ab").close()
    hits = js("search", "deploy retries", "--db", db)
    assert hits["results"], hits
    assert js("stats", "--db", db)["records"] == 5
    err = js("add", "a new note", "--db", db, code=6)
    assert err["error"] == "StoreReadOnly"
    assert err["hint"].startswith("read-only: searches work, writes need write access")
    doc = js("doctor", "--db", db)
    assert doc["exit_code"] == 0 and doc["status"] == "notice"
    assert any(f["problem"].startswith("read-only: searches work") for f in doc["findings"])
    assert not any(f["severity"] == "damaged" for f in doc["findings"])
    assert sorted(p.name for p in read_only_db.parent.iterdir()) == ["m.db"]


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)):
        pytest.skip("no small file system to fill (mounting a tmpfs needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)   # -l: this process may still hold a connection


def _fill(folder: Path, leave: int) -> None:
    """Write a filler file until about ``leave`` bytes are free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(folder / "filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


def test_a_full_disk_is_named_and_nothing_acknowledged_is_lost(seeded, small_fs, tmp_path):
    db = small_fs / "m.db"
    shutil.copy(seeded, db)
    _fill(small_fs, 96 * 1024)
    big = tmp_path / "big.md"
    big.write_text("word " * 60_000)
    err = js("import", str(big), "--db", str(db), "--no-embed", "--no-progress", code=12)
    assert err["error"] == "DiskFull", err
    assert err["hint"] == "disk full: free space; nothing acknowledged was lost"
    doc = js("doctor", "--db", str(db))
    assert doc["exit_code"] == 0 and not any(f["severity"] == "damaged" for f in doc["findings"])
    assert js("stats", "--db", str(db))["records"] == 5
    # Completely full: opening fails when SQLite must create its -shm file; still a full
    # disk, for a search and for doctor, never damage (in a subprocess: nothing of this
    # process holds the file open).
    (small_fs / "filler").unlink()
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    _fill(small_fs, 0)
    for args in (("search", "deploy"), ("doctor",)):
        proc = subprocess.run([sys.executable, "-m", "memo", *args, "--db", str(db), "--json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 12 and json.loads(proc.stdout)["error"] == "DiskFull", (proc.stdout, proc.stderr)
    assert not Path(f"{db}-damaged").exists()


def test_a_backup_to_a_full_disk_blames_the_disk_not_the_database(seeded, small_fs, tmp_path):
    db = tmp_path / "m.db"
    shutil.copy(seeded, db)
    _fill(small_fs, 16 * 1024)
    err = js("backup", str(small_fs / "b.db"), "--db", str(db), code=12)
    assert err["error"] == "DiskFull" and str(small_fs) in err["message"], err
    assert "the database itself is fine" in err["hint"]
    assert not Path(f"{db}-damaged").exists()
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler"]


def test_subprocess_read_only_search(read_only_db):
    proc = subprocess.run([sys.executable, "-m", "memo", "search", "deploy", "--db", str(read_only_db), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
