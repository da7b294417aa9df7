"""The suite runs on both backends (issue 17.3): ``db_path`` (and so the shared
``fresh_db``) is a SQLite file or the URL of a fresh PostgreSQL database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memo.store.dialect import is_db_url


@pytest.fixture
def db_path(backend_db: str) -> Path | str:
    return backend_db if is_db_url(backend_db) else Path(backend_db)


@pytest.fixture
def new_db(backend_db: str, tmp_path: Path) -> Iterator[Callable[[str], Path | str]]:
    """``new_db(name)``: one more fresh database on the test's backend (tests comparing
    two stores): a file in tmp_path, or a new database on the session's PostgreSQL."""
    made: list[str] = []

    def make(name: str) -> Path | str:
        if not is_db_url(backend_db):
            return tmp_path / f"{name}.db"
        from tests.pg_server import new_database

        made.append(new_database())
        return made[-1]

    yield make
    if made:
        from tests.pg_server import drop_database

        for url in made:
            drop_database(url)
