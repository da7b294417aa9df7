"""Paging of the list operations (records, facts, entities): one check for all of them.

``limit`` and ``offset`` go to SQL as bound integers; SQLite's INTEGER is a signed 64-bit
value, so a larger Python int raised ``OverflowError`` (a traceback through MCP, found by
the hostile-arguments fuzz) instead of a clear error.  Bounds: ``1 <= limit`` and
``0 <= offset``, both at most ``MAX_PAGE_INT``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from memo.errors import ValidationError

T = TypeVar("T")

MAX_PAGE_INT = 2**63 - 1   # SQLite INTEGER (and PostgreSQL bigint) maximum


def check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE_INT or not 0 <= offset <= MAX_PAGE_INT:
        raise ValidationError(f"limit must be 1..{MAX_PAGE_INT} and offset 0..{MAX_PAGE_INT}")


def fetch_page(fetch: Callable[[int], Sequence[T]], limit: int, offset: int) -> tuple[Sequence[T], int | None]:
    """One page of a list operation and the offset of the next one (None on the last page):
    ``fetch(n)`` reads at most ``n`` rows from ``offset`` and is asked for one row more than
    ``limit``, whose presence says another page exists (the list operations count nothing).
    A limit out of range goes to ``fetch`` as given, and the operation's ``check_page``
    refuses it.  Every surface that pages (``memo list``, ``memo fact list``, ``memo
    entities list``, MCP's list tools) reads through here."""
    rows = fetch(limit + 1 if 1 <= limit < MAX_PAGE_INT else limit)
    shown = rows[:limit]
    return shown, (offset + len(shown) if len(rows) > limit else None)
