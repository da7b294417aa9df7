"""Fixtures for the pipeline tests (helpers live in retrieve_helpers.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memo.store.db import open_db


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path / "retrieve.db")
    yield c
    c.close()
