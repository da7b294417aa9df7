"""A real PostgreSQL with pgvector for the backend-parametrised tests (issue 17.3).

The ``pgserver`` wheel (a dev dependency) bundles PostgreSQL 16 and pgvector; one server
runs per test session in a temporary directory and every test gets a fresh database
(``CREATE DATABASE``, about 0.1 s), dropped afterwards.  Without the wheel (a user's plain
checkout) the PostgreSQL half of the parametrised tests is skipped with the reason, unless
``MEMO_REQUIRE_POSTGRES=1`` (scripts/test.sh, CI): then it fails, so CI can never pass
with PostgreSQL silently unexercised.

Every test that needs the server carries the ``postgresql`` marker (tests/conftest.py sets
it on the PostgreSQL variant of the backend-parametrised tests), so ``-m "not postgresql"``
deselects them.  ``MEMO_NO_POSTGRES=1`` (scripts/test.sh --fast) promises the run starts no
server: a test that asks for one anyway fails, naming the marker it lacks.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
from typing import Any

import pytest

_lock = threading.Lock()
_server: dict[str, Any] = {}
_names = itertools.count(1)


def _missing(why: str) -> None:
    if os.environ.get("MEMO_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL backend tests required (MEMO_REQUIRE_POSTGRES=1) but {why}")
    pytest.skip(f"PostgreSQL backend not testable here: {why} (pip install pgserver 'psycopg[binary]')")


def server_url() -> str:
    """The session server's admin URL (started on first use)."""
    if os.environ.get("MEMO_NO_POSTGRES") == "1":
        pytest.fail("this run starts no PostgreSQL (MEMO_NO_POSTGRES=1, scripts/test.sh --fast): a test that "
                    "needs the server must carry the postgresql marker (or take backend_db), so that "
                    "-m 'not postgresql' deselects it")
    with _lock:
        if "url" not in _server:
            # pgserver asks platformdirs for a runtime dir; give it one (no warning).
            os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="memo-xdg-"))
            try:
                import pgserver
                import psycopg  # noqa: F401
            except ImportError as exc:
                _missing(f"{exc.name} is not installed")
            # A short directory: the server's unix socket lives in it (108-byte path limit).
            root = tempfile.mkdtemp(prefix="memo-pg-")
            srv = pgserver.get_server(root, cleanup_mode="delete")
            _server["srv"] = srv
            _server["url"] = srv.get_uri()
        return _server["url"]


def new_database() -> str:
    """A fresh, empty database on the session server; returns its URL."""
    import psycopg

    admin = server_url()
    name = f"memo_t{os.getpid()}_{next(_names)}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return admin.replace("/postgres?", f"/{name}?", 1)


def drop_database(url: str) -> None:
    import psycopg

    name = url.split("/")[-1].split("?")[0]
    try:
        with psycopg.connect(server_url(), autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass


class OwnServer:
    """A PostgreSQL server of one test's own, for what must not happen to the session's
    server: a crash and a restart (``crash`` / ``start``), a tablespace on a small
    file system (docs/reliability.md section 10).  ``cleanup`` stops it and deletes its
    data directory."""

    def __init__(self) -> None:
        server_url()                     # the same checks (the wheel, MEMO_NO_POSTGRES) as the session's
        import pgserver

        self.root = tempfile.mkdtemp(prefix="memo-pgown-")
        self.srv = pgserver.get_server(self.root, cleanup_mode="delete")
        self.url = self.srv.get_uri()
        self.user = self.srv.system_user   # the OS user running it (None: this process's user)

    def database(self, name: str, *, tablespace: str | None = None) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"' + (f' TABLESPACE "{tablespace}"' if tablespace else ""))
        return self.url.replace("/postgres?", f"/{name}?", 1)

    def crash(self, how: str) -> None:
        """``kill``: SIGKILL the postmaster and every backend (a machine crash, the OOM
        killer); ``immediate``: ``pg_ctl stop -m immediate`` (no checkpoint: the next
        start runs crash recovery)."""
        import signal

        import psutil
        from pgserver._commands import pg_ctl

        pid = self.srv.get_pid()
        assert pid is not None
        if how == "kill":
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            for p in procs:
                p.send_signal(signal.SIGKILL)
            psutil.wait_procs(procs, timeout=30)
        else:
            pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.srv.pgdata, user=self.user, timeout=60)

    def start(self) -> None:
        """Start it again on the same data directory (the same socket: the same URL)."""
        with self.srv._lock:
            self.srv.ensure_postgres_running()
        assert self.srv.get_uri() == self.url, (self.srv.get_uri(), self.url)

    def cleanup(self) -> None:
        try:
            self.srv.cleanup()
        except Exception:  # noqa: BLE001 - a test already failing must not hide behind this
            pass
