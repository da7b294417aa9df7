"""The suite runs on both backends (issue 17.3): ``db_path`` (and so the shared
``fresh_db``) is a SQLite file or the URL of a fresh PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.store.dialect import is_db_url


@pytest.fixture
def db_path(backend_db: str) -> Path | str:
    return backend_db if is_db_url(backend_db) else Path(backend_db)
