"""Turn SQLite exceptions that escape an operation into memo's typed store errors, so the
CLI prints one line with a hint instead of a traceback.

A corruption error ("database disk image is malformed", "file is not a database") becomes
StoreCorrupt and marks the database damaged (``memo.store.damage``): memo's write path then
refuses to write into it until ``memo doctor`` or a restore clears the mark.  The database
is the ``conn`` given to the context manager, or, used as a decorator, the operation's
first argument when that is a connection.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from memo.errors import MemoError, StoreCorrupt
from memo.store.damage import (
    RESTORE_HINT,
    db_path_of,
    is_corrupt_error,
    mark_damaged,
    store_error_from,
    undecodable_text,
)

F = TypeVar("F", bound=Callable[..., Any])


class store_errors:  # noqa: N801 - used like a function: ``with store_errors("add"):`` / ``@store_errors("add")``
    def __init__(self, action: str, conn: sqlite3.Connection | None = None) -> None:
        self.action = action
        self.conn = conn

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is None:
            return False
        path = db_path_of(self.conn) if self.conn is not None else ""
        if isinstance(exc, sqlite3.DatabaseError):
            raise store_error_from(exc, self.action, path=path or None) from exc
        if isinstance(exc, UnicodeDecodeError):
            raise undecodable_text(self.action, exc) from exc
        if isinstance(exc, MemoError) and not isinstance(exc, StoreCorrupt) and is_corrupt_error(exc):
            # A SQLite corruption error some layer already wrapped (search arms, importer).
            if path:
                mark_damaged(path, f"{self.action}: {exc}")
            raise StoreCorrupt(str(exc), hint=RESTORE_HINT) from exc
        return False

    def __call__(self, func: F) -> F:
        action = self.action

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            conn = args[0] if args and isinstance(args[0], sqlite3.Connection) else kwargs.get("conn")
            with store_errors(action, conn if isinstance(conn, sqlite3.Connection) else None):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
