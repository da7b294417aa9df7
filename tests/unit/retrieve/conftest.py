"""Fixtures for the pipeline tests (helpers live in retrieve_helpers.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from memo.store.db import open_db


@pytest.fixture
def conn(backend_db: str) -> Iterator[sqlite3.Connection]:
    """A fresh database on each backend (SQLite file, real PostgreSQL): the pipeline's
    tests run against both (issue 17.3)."""
    c = open_db(backend_db)
    yield c
    c.close()
