"""`memo backup` refusals and `memo restore`, through typer's CliRunner (in process) and real
`memo` subprocesses while another process has the database open (issue 9.2)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo import ops
from memo.cli import app
from memo.store.connect import connect
from memo.store.db import open_db
from memo.store.migrations import LATEST
from memo.stored import RecordDraft

runner = CliRunner()
EXE = Path(sys.executable).with_name("memo")
CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "memo"]


def run(*args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result


def js(*args: str, code: int = 0):
    return json.loads(run(*args, "--json", code=code).stdout)


def sub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ))


def _ids(path: Path) -> set[str]:
    conn = connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0] for r in conn.execute("SELECT id FROM records")}
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "live.db"


def test_backup_refusals_exit_2_as_json_and_one_line(db, tmp_path):
    writer = open_db(db)                     # another program with the database open
    ids = [ops.add_record(writer, RecordDraft(body=f"acknowledged {i}")).record_id for i in range(10)]
    for suffix in ("-wal", "-shm", "-journal"):
        err = js("backup", f"{db}{suffix}", "--force", "--db", str(db), code=2)
        assert err["error"] == "ValidationError" and f"{suffix} file" in err["message"] and err["hint"]
    assert js("backup", str(db), "--force", "--db", str(db), code=2)["message"].endswith("is the database itself")
    folder = tmp_path / "bk"
    folder.mkdir()
    r = run("backup", str(folder), "--db", str(db), code=2)
    assert r.stderr.startswith(f"error: {folder} is a folder: give a file path inside it (")
    assert r.stderr.count("\n") == 1
    other = tmp_path / "other.db"
    theirs = open_db(other)
    ops.add_record(theirs, RecordDraft(body="theirs"))
    err = js("backup", str(other), "--force", "--db", str(db), code=2)
    assert "in use or not closed cleanly" in err["message"] and "--force does not override" in err["hint"]
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert "cannot create the folder" in js("backup", str(blocker / "x.db"), "--db", str(db), code=2)["message"]
    ids += [ops.add_record(writer, RecordDraft(body=f"later {i}")).record_id for i in range(3)]
    assert _ids(db) == set(ids) and len(_ids(other)) == 1
    writer.close()
    theirs.close()


def test_backup_wal_of_a_database_open_in_another_process_is_refused(db, tmp_path):
    """A real `memo backup DB-wal --force` process while this process holds acknowledged
    writes in the -wal: refused, and every write is still there."""
    writer = open_db(db)
    ids = [ops.add_record(writer, RecordDraft(body=f"acknowledged {i}")).record_id for i in range(10)]
    assert Path(f"{db}-wal").stat().st_size > 0
    p = sub("backup", f"{db}-wal", "--force", "--db", str(db), "--json")
    assert p.returncode == 2, p.stderr
    assert json.loads(p.stdout)["error"] == "ValidationError"
    ids.append(ops.add_record(writer, RecordDraft(body="after the attempt")).record_id)
    assert _ids(db) == set(ids)
    writer.close()


def test_backup_json_and_force_over_a_plain_file(db, tmp_path):
    js("add", "one note about otters", "--db", str(db))
    dest = tmp_path / "out" / "copy.db"
    dest.parent.mkdir()
    dest.write_text("old contents")
    assert js("backup", str(dest), "--db", str(db), code=2)["message"].endswith("already exists")
    doc = js("backup", str(dest), "--force", "--db", str(db))
    assert list(doc) == ["source", "path", "size_bytes", "integrity", "counts", "seconds"]
    assert doc["path"] == str(dest) and doc["integrity"] == "ok" and doc["counts"]["records"] == 1
    assert sorted(p.name for p in dest.parent.iterdir()) == ["copy.db"]


def test_restore_json_confirmation_and_round_trip(db, tmp_path):
    kept = js("add", "kept note", "--db", str(db))["record_id"]
    bk = tmp_path / "bk.db"
    js("backup", str(bk), "--db", str(db))
    later = js("add", "later note", "--db", str(db))["record_id"]
    err = js("restore", str(bk), "--db", str(db), code=4)
    assert err["error"] == "ConfirmationRequired" and "--yes" in err["hint"]
    assert _ids(db) == {kept, later}
    doc = js("restore", str(bk), "--yes", "--db", str(db))
    assert list(doc) == ["source", "path", "method", "previous", "previous_integrity", "schema_version",
                         "backup_schema_version", "integrity", "counts", "seconds"]
    assert doc["method"] == "sqlite-backup" and doc["integrity"] == "ok" and doc["counts"]["records"] == 1
    assert doc["schema_version"] == LATEST and doc["previous_integrity"] == "ok"
    assert _ids(db) == {kept} and _ids(Path(doc["previous"])) == {kept, later}
    out = run("restore", str(bk), "--yes", "--no-keep-previous", "--db", str(db)).stdout
    assert out.startswith(f"restored {db} from {bk}: integrity ok, 1 records") and "previous" not in out
    assert len(list(tmp_path.glob("live.db.before-restore-*"))) == 1


def test_restore_refuses_bad_files_with_their_exit_codes(db, tmp_path):
    js("add", "live note", "--db", str(db))
    good = tmp_path / "good.db"
    js("backup", str(good), "--db", str(db))
    text = tmp_path / "notes.txt"
    text.write_text("hello " * 100)
    too_new = tmp_path / "new.db"
    too_new.write_bytes(good.read_bytes())
    c = sqlite3.connect(too_new)
    c.execute(f"PRAGMA user_version={LATEST + 1}")
    c.close()
    before = _ids(db)
    assert js("restore", str(text), "--yes", "--db", str(db), code=2)["error"] == "ValidationError"
    assert js("restore", str(tmp_path / "nope.db"), "--yes", "--db", str(db), code=2)["error"] == "ValidationError"
    err = js("restore", str(too_new), "--yes", "--db", str(db), code=6)
    assert err["error"] == "SchemaTooNew" and "upgrade memo" in err["hint"]
    r = run("restore", str(text), "--yes", "--db", str(db), code=2)
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    assert _ids(db) == before and not list(tmp_path.glob("live.db.before-restore-*"))


def test_restore_in_a_subprocess_while_this_process_has_the_database_open(db, tmp_path):
    conn = open_db(db)
    base = [ops.add_record(conn, RecordDraft(body=f"base {i} about otters")).record_id for i in range(5)]
    bk = tmp_path / "bk.db"
    ops.backup(conn, bk)
    extra = [ops.add_record(conn, RecordDraft(body=f"extra {i}")).record_id for i in range(5)]
    assert len(ops.list_records(conn)) == 10
    p = sub("restore", str(bk), "--yes", "--db", str(db), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["counts"]["records"] == 5 and doc["method"] == "sqlite-backup"
    assert {r.id for r in ops.list_records(conn)} == set(base)   # the open connection sees the restore
    after = ops.add_record(conn, RecordDraft(body="written after the restore")).record_id
    hits = ops.list_records(conn)
    assert {r.id for r in hits} == {*base, after} and not set(extra) & {r.id for r in hits}
    conn.close()
    assert _ids(db) == {*base, after}
    assert set(extra) <= _ids(Path(doc["previous"]))


def test_restore_has_help():
    out = run("restore", "--help").stdout
    assert "--json" in out and "--db" in out and "--yes" in out


def test_restore_under_a_concurrent_writer_loses_no_acknowledged_write(db, tmp_path):
    """Another process commits all the time.  Every write it acknowledged is either in the
    safety copy (committed before the restore) or in the restored database (after it): the
    snapshot and the restore happen with no commit between them."""
    conn = open_db(db)
    base = {ops.add_record(conn, RecordDraft(body=f"base {i}")).record_id for i in range(5)}
    bk = tmp_path / "bk.db"
    ops.backup(conn, bk)
    conn.close()
    out = tmp_path / "w.out"
    worker = Path(__file__).parents[1] / "reliability" / "_worker.py"
    # The writer runs until told to stop (out.stop), so that it is still writing after the
    # restore however slow the machine is: the test needs commits on both sides of the swap.
    writer = subprocess.Popen([sys.executable, str(worker), "writer", str(db), str(out), "120", "rw"],
                              stderr=subprocess.PIPE, text=True)

    def acked_count() -> int:
        return len(out.read_text().split()) if out.exists() else 0

    try:
        deadline = time.monotonic() + 60
        while acked_count() < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        p = sub("restore", str(bk), "--yes", "--db", str(db), "--json")
        after = acked_count()
        deadline = time.monotonic() + 60
        while acked_count() < after + 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        Path(f"{out}.stop").touch()
        _, err = writer.communicate(timeout=90)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert p.returncode == 0, p.stderr
    assert writer.returncode == 0, err[-1500:]
    assert not Path(f"{out}.err").exists() or Path(f"{out}.err").read_text() == ""
    acked = set(out.read_text().split())
    doc = json.loads(p.stdout)
    live, previous = _ids(db), _ids(Path(doc["previous"]))
    assert acked - (live | previous) == set()
    assert base <= live and acked & previous and acked & live   # writes landed on both sides
    assert not (live - base) & previous                         # nothing after the restore is in the old copy
