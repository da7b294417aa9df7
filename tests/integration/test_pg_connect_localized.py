"""A PostgreSQL server that answers in German: a wrong password, a missing password or an
unknown database behind a password is exit 2 (a configuration mistake), as on an English
server; before, only the English message text was recognised and these were exit 6
("retry once it is up"), so a retry loop spun forever.

The ``pgserver`` wheel's PostgreSQL is built without NLS (no translations), and this
machine has no German locale (``locale -a``: C, C.utf8, POSIX).  So the server is the
system's PostgreSQL (Debian's ``/usr/lib/postgresql/<major>``, built with NLS, with its
German catalog), started as ``pgserver`` starts its own (a temporary data directory, a
unix socket only, another user when run as root), with ``lc_messages = C.UTF-8`` and
``LANGUAGE=de``: gettext honours LANGUAGE for any locale but plain C, so the server's
messages come out in German with no German locale installed.  Without such an install the
test is skipped, saying why; the unit tests (tests/unit/store/test_pg_connect_errors.py)
cover the same rules everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app

pytestmark = pytest.mark.postgresql

runner = CliRunner()


def _german_postgres() -> Path | None:
    """The bin directory of a PostgreSQL whose server has its German messages, or None."""
    dirs = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name, reverse=True)
    on_path = shutil.which("pg_config")
    if on_path:
        dirs.append(Path(on_path).parent)
    for bindir in dirs:
        if not all((bindir / exe).exists() for exe in ("initdb", "pg_ctl", "postgres", "pg_config")):
            continue
        localedir = subprocess.run([bindir / "pg_config", "--localedir"], capture_output=True, text=True,
                                   check=False).stdout.strip()
        if localedir and list(Path(localedir, "de", "LC_MESSAGES").glob("postgres*.mo")):
            return bindir
    return None


@pytest.fixture(scope="module")
def german_server() -> Iterator[str]:
    """The URL (role ``postgres``, trust) of a German-speaking server whose role ``alice``
    logs in with the password ``right`` (scram-sha-256)."""
    psycopg = pytest.importorskip("psycopg")
    bindir = _german_postgres()
    if bindir is None:
        pytest.skip("no PostgreSQL with German messages here (a build with NLS and its German catalog, "
                    "e.g. Debian's postgresql package); the pgserver wheel's server has no translations")
    root = Path(tempfile.mkdtemp(prefix="memo-pgde-"))     # short: the socket lives in it
    user = None
    if os.geteuid() == 0:                                   # PostgreSQL refuses to run as root
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memo-xdg-"))   # as tests/pg_server.py
        from pgserver.utils import ensure_prefix_permissions, ensure_user_exists  # as pgserver does

        user = "pgserver"
        entry = ensure_user_exists(user)
        ensure_prefix_permissions(root)
        assert entry is not None
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data = root / "data"
    run = {"user": user, "check": True, "capture_output": True, "timeout": 120}
    subprocess.run([bindir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=utf8",
                    "--locale=C.UTF-8"], **run)
    opts = f"-k {root} -c listen_addresses='' -c lc_messages=C.UTF-8"
    try:
        subprocess.run([bindir / "pg_ctl", "-D", data, "-w", "-l", root / "log", "-o", opts, "start"],
                       env={**os.environ, "LANGUAGE": "de"}, **run)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"the system's PostgreSQL did not start with lc_messages=C.UTF-8: {exc.stderr!r}")
    url = f"postgresql://postgres@/postgres?host={root}"
    try:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("SET password_encryption = 'scram-sha-256'")
            c.execute("CREATE ROLE alice LOGIN PASSWORD 'right'")
            c.execute("CREATE DATABASE memo OWNER alice")
            hba = Path(c.execute("SHOW hba_file").fetchone()[0])
            # postgres keeps trust (the test's admin); every other role, known or not, is
            # asked for a password, as on a shared server
            hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n" + hba.read_text())
            c.execute("SELECT pg_reload_conf()")
        try:
            psycopg.connect(url.replace("/postgres?", "/no_such_db?", 1)).close()
        except psycopg.OperationalError as exc:
            if "existiert nicht" not in str(exc):
                pytest.skip(f"the server did not answer in German: {exc}")
        yield url
    finally:
        subprocess.run([bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop"], **{**run, "check": False})
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(("who", "said", "hint"), [
    ("alice:wrong@/memo", "Passwort-Authentifizierung für Benutzer »alice« fehlgeschlagen",
     "the server asked for a password and then refused"),
    ("alice:right@/memo_no_such_database", "Datenbank »memo_no_such_database« existiert nicht",
     "the server asked for a password and then refused"),
    ("nobody:x@/memo", "Passwort-Authentifizierung für Benutzer »nobody« fehlgeschlagen",   # no such role
     "the server asked for a password and then refused"),
    ("alice@/memo", "no password supplied", "check the user name and password"),   # libpq's own words
])
def test_a_refused_login_in_german_is_a_configuration_error(german_server: str, who: str, said: str,
                                                            hint: str) -> None:
    url = german_server.replace("postgres@/postgres", who, 1)
    for args in (("stats",), ("add", "hello"), ("search", "hello")):
        result = runner.invoke(app, [*args, "--db", url])
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: cannot connect to PostgreSQL: "), result.output
        assert said in lines[0] and hint in lines[0], result.output


def test_the_right_password_still_connects(german_server: str) -> None:
    """The refusals above are the password's, not the setup's.  (This server has no
    pgvector, so memo gets no further than finding no memo database there.)"""
    url = german_server.replace("postgres@/postgres", "alice:right@/memo", 1)
    result = runner.invoke(app, ["stats", "--db", url, "--json"])
    assert json.loads(result.output)["message"] == "no memo database at this PostgreSQL URL yet", result.output
