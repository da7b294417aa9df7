"""`memo doctor` and the connection errors on PostgreSQL, through typer's CliRunner (the
PostgreSQL probe's FINDINGS.md, defects 2-4):

* a server that cannot be reached (nothing listening on the port, a stopped server's socket
  directory) is `StoreUnavailable`, exit 6, as for every other command: not "damaged"
  (exit 10, "restore a backup");
* live passages without a vector are the same `notice` (`memo backfill`) as on SQLite;
* a database that does not exist, an unknown user or a wrong password is a configuration
  mistake: `ValidationError`, exit 2, with a hint about the database name or the
  credentials, never the retryable "server is down" exit 6.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app
from memo.errors import StoreUnavailable, ValidationError
from memo.ops.doctor import doctor
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from tests.pg_server import OwnServer, drop_database, new_database, server_url

pytestmark = pytest.mark.postgresql

runner = CliRunner()


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def url():
    u = new_database()
    yield u
    drop_database(u)


@pytest.mark.parametrize("where", ["port", "socket"])
def test_doctor_on_an_unreachable_server_is_unavailable_not_damaged(where: str, tmp_path: Path) -> None:
    # Nothing listens there: what a stopped server leaves (its socket directory without the
    # socket), or a port no server is on.
    url = (f"postgresql://postgres@127.0.0.1:{_free_port()}/memo" if where == "port"
           else f"postgresql://postgres@/memo?host={tmp_path}")
    with pytest.raises(StoreUnavailable):
        doctor(url)
    code, out = _run("doctor", "--db", url)
    assert code == 6, out
    assert "cannot connect to PostgreSQL" in out and "damaged" not in out and "restore" not in out
    code, out = _run("doctor", "--db", url, "--json")
    assert code == 6 and json.loads(out)["error"] == "StoreUnavailable"


def _unembedded(db: str, text: str) -> None:
    conn = open_db(db)
    try:
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=text), (PassageDraft(text=text),))
    finally:
        conn.close()


def test_doctor_reports_pending_vectors_as_on_sqlite(url: str, tmp_path: Path) -> None:
    lite = str(tmp_path / "memo.db")
    reports = {}
    for db in (lite, url):
        _unembedded(db, "queued while the model is missing okapi")
        code, out = _run("doctor", "--db", db, "--json")
        assert code == 0, out
        reports[db] = json.loads(out)
    want, got = reports[lite], reports[url]
    assert got["status"] == want["status"] == "notice"
    pending = [f for f in want["findings"] if f["check"] == "counts"]
    assert pending and "have no vector yet" in pending[0]["problem"] and "memo backfill" in pending[0]["action"]
    assert [f for f in got["findings"] if f["check"] == "counts"] == pending
    assert got["counts"]["pending_vectors"] == want["counts"]["pending_vectors"] == 1
    assert got["counts"]["pending_fact_vectors"] == want["counts"]["pending_fact_vectors"] == 0


def _refused(url: str, hint: str) -> None:
    with pytest.raises(ValidationError) as err:
        doctor(url)
    assert hint in err.value.hint and "retry once it is up" not in err.value.hint
    for args in (("doctor",), ("search", "hello"), ("add", "hello")):
        code, out = _run(*args, "--db", url)
        assert code == 2, (args, out)
        assert "cannot connect to PostgreSQL" in out and hint in out, out
    code, out = _run("stats", "--db", url, "--json")
    assert code == 2 and json.loads(out)["error"] == "ValidationError"


def test_an_unknown_database_or_user_is_a_configuration_error() -> None:
    admin = server_url()
    _refused(admin.replace("/postgres?", "/memo_no_such_database?", 1), "check the database name")
    _refused(admin.replace("postgres:@", "memo_no_such_user:x@", 1), "check the user name and password")


def test_a_wrong_password_is_a_configuration_error() -> None:
    """A server of the test's own that asks one role for a password (pg_hba.conf)."""
    import psycopg

    srv = OwnServer()
    try:
        with psycopg.connect(srv.url, autocommit=True) as c:
            c.execute("SET password_encryption = 'scram-sha-256'")
            c.execute("CREATE ROLE memo_alice LOGIN PASSWORD 'right'")
            hba = Path(c.execute("SHOW hba_file").fetchone()[0])
            hba.write_text("local all memo_alice scram-sha-256\n" + hba.read_text())
            c.execute("SELECT pg_reload_conf()")
        good = srv.url.replace("postgres:@", "memo_alice:right@", 1)
        psycopg.connect(good).close()                        # the role and its password work
        _refused(srv.url.replace("postgres:@", "memo_alice:wrong@", 1), "check the user name and password")
    finally:
        srv.cleanup()


def test_doctor_never_prints_the_password(url: str) -> None:
    """The report's path was the URL as given: `memo doctor` printed the password (stats
    redacted it); a password given as a parameter was printed by both."""
    from memo.store.postgres.connection import redact

    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://u@/db?host=/s&password=pw&x=1") == "postgresql://u@/db?host=/s&password=***&x=1"
    assert redact("postgresql:///db?PASSWORD=pw") == "postgresql:///db?PASSWORD=***"
    open_db(url).close()
    given = url + ("&" if "?" in url else "?") + "password=s3cretPW"   # the test server trusts, ignores it
    code, out = _run("doctor", "--db", given)
    assert code == 0 and "s3cretPW" not in out and "password=***" in out, out
    code, out = _run("doctor", "--db", given, "--json")
    assert code == 0 and "s3cretPW" not in out and json.loads(out)["path"].endswith("password=***")
    code, out = _run("stats", "--db", given, "--json")
    assert code == 0 and "s3cretPW" not in out
