"""Shared fixtures.  Every test runs with its own MEMO_DB and XDG dirs (autouse), so no
test can touch the user's real database.

The fast path (./scripts/test.sh --fast, issue 27.6) selects ``-m "not slow and not
postgresql"`` and loads the hypothesis profile ``fast`` registered here (fewer examples
for the counts written as ``tests.fast_examples.examples(n)``; no deadline, the machine
may be loaded)."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from memo.store.db import open_db

# --hypothesis-profile=fast (scripts/test.sh --fast); the full suite keeps the default.
settings.register_profile("fast", max_examples=10, deadline=None)


@pytest.fixture(scope="session")
def _onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of optimised model graphs for the session (memo.embed.optimized): each
    test's own cache folder would write the 90 MB file again."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                  _onnx_cache: Path) -> Path:
    home = tmp_path_factory.mktemp("home")
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(_onnx_cache))
    monkeypatch.setenv("MEMO_DB", str(home / "memo.db"))
    monkeypatch.delenv("MEMO_SYNCHRONOUS", raising=False)
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memo.db"


@pytest.fixture
def fresh_db(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated, empty database in tmp_path (write connection)."""
    conn = open_db(db_path)
    yield conn
    conn.close()


BACKENDS = ("sqlite", "postgresql")


@pytest.hookimpl(tryfirst=True)   # before -m reads the markers added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The PostgreSQL variant of a backend-parametrised test gets the ``postgresql`` marker
    (as the modules that use the session's server directly carry it), so ``-m "not
    postgresql"`` deselects every test that needs the server (the fast path).
    ``@pytest.mark.sqlite_only`` tests (SQLite's own machinery: the impact index, FTS5
    internals, the file on disk) run on SQLite only: their PostgreSQL variants are
    deselected, not skipped (they do not exist)."""
    keep, drop = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        pg = spec is not None and spec.params.get("backend_db") == "postgresql"
        if pg:
            item.add_marker(pytest.mark.postgresql)
        (drop if pg and item.get_closest_marker("sqlite_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=BACKENDS)
def backend_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a backend-parametrised test keeps its database: a SQLite file path, or the
    URL of a fresh database on the session's real PostgreSQL (tests/pg_server.py)."""
    if request.param == "sqlite":
        yield str(tmp_path / "memo.db")
        return
    from tests.pg_server import drop_database, new_database

    url = new_database()
    try:
        yield url
    finally:
        from memo.embed.service import clear_caches

        clear_caches()
        drop_database(url)


HEARTBEAT_S = 30.0


@pytest.fixture
def progress(request: pytest.FixtureRequest) -> Iterator[Callable[[str], None]]:
    """A ``status(label)`` callback for long steps (embedding SciFact takes about 12 minutes
    on 2 cores the first time): each label and, every 30 s, the step still running go to
    the terminal past pytest's output capture, so a long test is never silent."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    t0 = time.monotonic()
    state = {"label": "starting"}
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock, capman.global_and_fixture_disabled():
            sys.stderr.write(f"\n  [{request.node.name} {time.monotonic() - t0:5.0f} s] {line}")
            sys.stderr.flush()

    def status(label: str) -> None:
        state["label"] = label
        write(label)

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            write(f"still running: {state['label']}")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield status
    finally:
        stop.set()
        thread.join()
