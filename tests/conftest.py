"""Shared fixtures.  Every test runs with its own MEMO_DB and XDG dirs (autouse), so no
test can touch the user's real database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memo.store.db import open_db


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
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
