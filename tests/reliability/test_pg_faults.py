"""Issue 33.6: PostgreSQL under faults -- kill -9 of writers, a server crash and restart
mid-write, a full tablespace (docs/reliability.md section 10).

Writers are real processes (tests/reliability/_pg_fault_worker.py) adding, embedding
(fake 8-dimension vectors, written as the background embedder writes them), importing,
superseding and forgetting through memo's library API; each prints an operation only
after the call returned.  After every fault the database is read by a fresh connection:

* every acknowledged write is there: records with exactly the passages reported, vectors
  for every passage of an acknowledged ``V``, supersedes linked, forgets applied;
* nothing is half written, acknowledged or not: no record without passages, passages
  numbered 0..n-1, a record's vectors all or none, an import file's records a whole
  number of batches (0, 3 or 6), no live duplicate, and the derived rows (exact_fts, the
  tsvector columns, bm25's postings) in step with the passages.

Without the transaction in ``memo.ops.add.add_record`` (statements in autocommit) a kill
between the record's and the passages' inserts leaves a record without passages, which
``_check`` reports; a typed_error that let psycopg's OperationalError through would make
the restart test's workers exit 3 with a traceback.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memo.store.db import open_db

pytestmark = pytest.mark.postgresql

WORKER = Path(__file__).with_name("_pg_fault_worker.py")
ROOT = Path(__file__).resolve().parents[2]
KILL_ROUNDS = int(os.environ.get("MEMO_PG_KILL_ROUNDS", "4"))
KILL_WRITERS = 3


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _spawn(url: str, name: str, work: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, str(WORKER), url, name, str(work)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())
    assert p.stdout is not None
    line = p.stdout.readline().strip()
    assert line == "ready", (line, p.stderr.read()[-2000:] if p.stderr else "")
    return p


class Acks:
    """What the workers acknowledged (their stdout lines, see _pg_fault_worker.py)."""

    def __init__(self) -> None:
        self.passages: dict[str, int] = {}      # record id -> passages
        self.vectors: dict[str, int] = {}
        self.superseded: dict[str, str] = {}    # old -> new
        self.forgotten: set[str] = set()
        self.files: dict[str, list[str]] = {}
        self.errors: Counter[str] = Counter()
        self.error_lines: dict[str, str] = {}   # error class -> one of its lines
        self.lines = 0

    def read(self, out: str) -> None:
        for line in out.splitlines():
            kind, *rest = line.split()
            self.lines += 1
            if kind == "A":
                self.passages[rest[0]] = int(rest[1])
            elif kind == "V":
                self.vectors[rest[0]] = int(rest[1])
            elif kind == "I":
                self.files[rest[0]] = rest[1:]
                self.passages.update({rid: 1 for rid in rest[1:]})
            elif kind == "S":
                self.superseded[rest[0]] = rest[1]
                self.passages[rest[1]] = int(rest[2])
            elif kind == "F":
                self.forgotten.add(rest[0])
            elif kind == "E":
                self.errors[rest[0]] += 1
                self.error_lines.setdefault(rest[0], line)
            else:
                raise AssertionError(f"unexpected worker line {line!r}")


def _check(url: str, acks: Acks) -> dict[str, int]:
    """Every acknowledged write present, nothing half written (see the module docstring)."""
    conn = open_db(url, write=False)
    try:
        q = conn.execute_native
        records = {r[0]: r for r in q("SELECT id, superseded_by, superseded_at, forgotten_at, import_path "
                                      "FROM records")}
        per_record = {r[0]: (r[1], r[2], r[3]) for r in q(
            "SELECT record_id, count(*), min(ord), max(ord) FROM passages GROUP BY record_id")}
        vectors = {r[0]: r[1] for r in q(
            "SELECT p.record_id, count(*) FROM vectors v JOIN passages p ON p.pk = v.passage_pk "
            "WHERE v.model_id = 'fake-8' GROUP BY p.record_id")}
        bad_dims = q("SELECT count(*) FROM vectors WHERE vector_dims(vec) <> 8").fetchone()[0]
        live_dups = q("SELECT count(*) FROM (SELECT namespace, content_hash FROM records WHERE forgotten_at IS NULL "
                      "GROUP BY 1, 2 HAVING count(*) > 1) d").fetchone()[0]
        n_pass = q("SELECT count(*) FROM passages").fetchone()[0]
        no_exact = q("SELECT count(*) FROM passages p WHERE NOT EXISTS "
                     "(SELECT 1 FROM exact_fts e WHERE e.rowid = p.pk)").fetchone()[0]
        n_exact = q("SELECT count(*) FROM exact_fts").fetchone()[0]
        tsv_stale = q(
            "SELECT count(*) FROM passages WHERE tsv IS DISTINCT FROM "
            "(setweight(to_tsvector('english', memo_words(text)), 'A') "
            " || setweight(to_tsvector('english', memo_words(section)), 'B')) "
            "OR dl IS DISTINCT FROM memo_token_count(tsv)").fetchone()[0]
        postings_stale = q(
            "SELECT (SELECT count(*) FROM (SELECT r.pk, u.lexeme FROM passages r, unnest(r.tsv) u "
            "                              EXCEPT SELECT key, lex FROM passage_terms) a) "
            "     + (SELECT count(*) FROM (SELECT key, lex FROM passage_terms EXCEPT "
            "                              SELECT r.pk, u.lexeme FROM passages r, unnest(r.tsv) u) b)").fetchone()[0]
        dangling = q("SELECT count(*) FROM records r WHERE superseded_by IS NOT NULL AND NOT EXISTS "
                     "(SELECT 1 FROM records n WHERE n.id = r.superseded_by)").fetchone()[0]
    finally:
        conn.close()

    # Acknowledged writes: all there, with what was reported.
    lost = [rid for rid in acks.passages if rid not in records]
    assert not lost, f"{len(lost)} acknowledged records lost: {lost[:5]}"
    wrong = [rid for rid, n in acks.passages.items() if per_record.get(rid) != (n, 0, n - 1)]
    assert not wrong, [(rid, acks.passages[rid], per_record.get(rid)) for rid in wrong[:5]]
    assert all(vectors.get(rid) == n for rid, n in acks.vectors.items()), "acknowledged vectors lost"
    assert all(records[old][1] == new and records[old][2] for old, new in acks.superseded.items()), \
        "an acknowledged supersede is not linked"
    assert all(records[rid][3] for rid in acks.forgotten), "an acknowledged forget is undone"
    # Nothing half written, acknowledged or not.
    assert set(per_record) == set(records), f"records without passages: {sorted(set(records) - set(per_record))[:5]}"
    assert all(n == hi + 1 and lo == 0 for n, lo, hi in per_record.values()), "passage ords with a gap"
    assert all(vectors.get(rid, 0) in (0, per_record[rid][0]) for rid in records), "a record half embedded"
    # An imported record's import_path is <file>:<line>; a new version keeps its old one's.
    versions = {r[1] for r in records.values() if r[1]}
    files = Counter(Path(r[4]).name.split(":")[0] for r in records.values() if r[4] and r[0] not in versions)
    assert set(files.values()) <= {3, 6}, {f: n for f, n in files.items() if n not in (3, 6)}
    assert all(files.get(f) == 6 for f in acks.files), "an acknowledged import is not whole"
    assert (bad_dims, live_dups, no_exact, tsv_stale, postings_stale, dangling) == (0, 0, 0, 0, 0, 0), \
        dict(bad_dims=bad_dims, live_dups=live_dups, no_exact=no_exact, tsv_stale=tsv_stale,
             postings_stale=postings_stale, dangling=dangling)
    assert n_exact == n_pass, (n_exact, n_pass)
    return {"records": len(records), "passages": n_pass, "acknowledged": len(acks.passages)}


@pytest.mark.slow
def test_pg_kill9_writers_lose_no_acknowledged_write(tmp_path):
    """KILL_ROUNDS rounds: 3 writers started together and SIGKILLed at a random moment
    (0.2-2 s after all are ready), then the checks."""
    from tests.pg_server import drop_database, new_database

    url = new_database()
    rng = random.Random(336)
    acks = Acks()
    figures = []
    try:
        open_db(url).close()
        for rnd in range(KILL_ROUNDS):
            work = tmp_path / f"r{rnd}"
            work.mkdir()
            procs = [_spawn(url, f"k{rnd}x{n}", work) for n in range(KILL_WRITERS)]
            time.sleep(rng.uniform(0.2, 2.0))
            for p in procs:
                p.send_signal(signal.SIGKILL)
            for p in procs:
                out, err = p.communicate(timeout=60)
                assert p.returncode == -signal.SIGKILL, err[-2000:]
                acks.read(out)
            assert not acks.errors, acks.errors
            figures.append(_check(url, acks))
    finally:
        drop_database(url)
    summary = {"rounds": KILL_ROUNDS, "writers": KILL_WRITERS, "acknowledged_lines": acks.lines,
               "acknowledged_records": len(acks.passages), "supersedes": len(acks.superseded),
               "forgets": len(acks.forgotten), "imports": len(acks.files), "vectors": len(acks.vectors),
               "lost": 0, **figures[-1]}
    print(json.dumps(summary))
    assert acks.superseded and acks.forgotten and acks.files and acks.vectors, summary


@pytest.mark.slow
def test_pg_server_crash_and_restart_mid_write(tmp_path):
    """A server of the test's own crashes twice under 3 writers (SIGKILL of the postmaster
    and every backend, then ``pg_ctl stop -m immediate``), stays down for a second and
    restarts on the same data directory.  Writers meet only ``StoreUnavailable`` (typed,
    never a psycopg traceback: a worker exits 3 on any other exception), keep their
    connection and write again once the server is back; a long-lived reading connection
    (a server's) fails typed while the server is down and searches again after the
    restart without being reopened; a fresh connection finds every acknowledged write."""
    from memo.errors import StoreUnavailable
    from memo.retrieve import SearchRequest, search
    from tests.pg_server import OwnServer

    srv = OwnServer()
    procs: list[subprocess.Popen] = []
    acks = Acks()
    req = SearchRequest("pgfault", mode="keyword", limit=5)
    try:
        url = srv.database("memo_restart")
        open_db(url).close()
        pooled = open_db(url, write=False)
        procs = [_spawn(url, f"w{n}", tmp_path) for n in range(3)]
        down_errors = []
        for how in ("kill", "immediate"):
            time.sleep(2.0)
            srv.crash(how)
            with pytest.raises(StoreUnavailable) as err:
                search(pooled, req)
            down_errors.append(err.value.one_line())
            time.sleep(1.0)
            srv.start()
            assert search(pooled, req).results, "the long-lived connection did not recover"
        time.sleep(3.0)
        (tmp_path / "stop").touch()
        outs = []
        for p in procs:
            out, err_text = p.communicate(timeout=120)
            assert p.returncode == 0, err_text[-3000:]
            assert "Traceback" not in err_text, err_text[-3000:]
            acks.read(out)
            outs.append(out.splitlines())
        pooled.close()
        figures = _check(url, acks)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        srv.cleanup()
    # Every writer met the outage (typed) and wrote again after the last restart.
    assert set(acks.errors) == {"StoreUnavailable"}, acks.error_lines
    for lines in outs:
        last_error = max(i for i, line in enumerate(lines) if line.startswith("E "))
        assert any(line.startswith("A ") for line in lines[last_error:]), lines[-5:]
    summary = {"crashes": 2, "writers": 3, "acknowledged_lines": acks.lines,
               "acknowledged_records": len(acks.passages), "typed_errors": dict(acks.errors), "lost": 0,
               **figures, "down_error": down_errors[0]}
    print(json.dumps(summary))


def _mount_small_tmpfs(where: Path, mib: int, uid: int, gid: int) -> list[str]:
    """Mount a ``mib``-MiB tmpfs owned by uid:gid at ``where``; returns the command prefix
    used (``[]`` as root, ``sudo -n`` otherwise), or skips: PostgreSQL has no quota of
    its own, and a small file system is the only honest way to fill its disk."""
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    try:
        done = subprocess.run([*prefix, "mount", "-t", "tmpfs", "-o", f"size={mib}m,uid={uid},gid={gid},mode=0700",
                               "tmpfs", str(where)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a small tmpfs for the tablespace: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for the tablespace (needs root or passwordless sudo): "
                    f"{done.stderr.strip()[:200]}")
    return prefix


@pytest.mark.slow
def test_pg_full_tablespace_is_disk_full_and_loses_nothing(tmp_path):
    """The database lives in a tablespace on a 24 MiB tmpfs (the server's own data
    directory, WAL included, stays on the big disk); a ballast file leaves about 4 MiB
    free.  Adds go on until one fails: it must be ``DiskFull`` (SQLSTATE 53100; exit 12
    from the CLI, with "disk full" in its line), not StoreBusy nor a raw error.  Then the
    ballast is deleted, writing works again, and every acknowledged add is there, whole."""
    import pwd

    from memo.errors import DiskFull
    from memo.ops.add import add_record
    from tests.pg_server import OwnServer

    srv = OwnServer()
    mnt = Path(srv.root + "-ts")
    mnt.mkdir()
    pw = pwd.getpwnam(srv.user) if srv.user else pwd.getpwuid(os.getuid())
    prefix = None
    acks = Acks()
    try:
        prefix = _mount_small_tmpfs(mnt, 24, pw.pw_uid, pw.pw_gid)
        import psycopg

        with psycopg.connect(srv.url, autocommit=True) as c:
            c.execute(f"CREATE TABLESPACE small LOCATION '{mnt}'")
        url = srv.database("memo_full", tablespace="small")
        conn = open_db(url)
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        ballast = mnt / "ballast"
        subprocess.run([*prefix, "dd", "if=/dev/zero", f"of={ballast}", "bs=64K",
                        f"count={max(0, free - (4 << 20)) // 65536}"], check=True, capture_output=True)
        bg = NoEmbedHere()
        body = "\n\n".join(f"Paragraph {n}: " + " ".join(f"word{n}x{k}" for k in range(150)) for n in range(6))
        full = None
        for i in range(2000):
            try:
                rep = add_record(conn, _draft(f"full {i}\n\n{body}"), background=bg)
            except DiskFull as exc:
                full = exc
                break
            acks.passages[rep.record_id] = rep.passages
        assert full is not None, "2000 adds fitted into 4 MiB"
        assert "disk full" in full.one_line() and "nothing acknowledged was lost" in full.one_line()
        # The CLI: exit 12, DiskFull named in its JSON document.
        cli = subprocess.run([sys.executable, "-c", "from memo.cli import main; main()", "add", "--db", url,
                              "--json", f"one more {body}"], capture_output=True, text=True, timeout=120,
                             cwd=ROOT, env={**_env(), "MEMO_DB": url})
        assert cli.returncode == 12, (cli.returncode, cli.stdout[-500:], cli.stderr[-1500:])
        doc = json.loads(cli.stdout)
        assert doc["error"] == "DiskFull" and "disk full" in doc["hint"], doc
        assert "Traceback" not in cli.stderr, cli.stderr[-1500:]
        subprocess.run([*prefix, "rm", "-f", str(ballast)], check=True)
        rep = add_record(conn, _draft(f"after the ballast went {body}"), background=bg)
        acks.passages[rep.record_id] = rep.passages
        conn.close()
        figures = _check(url, acks)
    finally:
        srv.cleanup()
        if prefix is not None:
            subprocess.run([*prefix, "umount", str(mnt)], capture_output=True)
        mnt.rmdir()
    print(json.dumps({"acknowledged_before_full": len(acks.passages) - 1, "lost": 0, **figures,
                      "error": full.one_line()[:300]}))


class NoEmbedHere:
    model_id = None

    def submit(self, record_ids=(), fact_pks=()) -> bool:  # noqa: ANN001
        return True


def _draft(body: str):  # noqa: ANN202
    from memo.stored import RecordDraft

    return RecordDraft(body=body, namespace="pgfault")
