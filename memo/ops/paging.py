"""Paging of the list operations (records, facts, entities): one check for all of them.

``limit`` and ``offset`` go to SQL as bound integers; SQLite's INTEGER is a signed 64-bit
value, so a larger Python int raised ``OverflowError`` (a traceback through MCP, found by
the hostile-arguments fuzz) instead of a clear error.  Bounds: ``1 <= limit`` and
``0 <= offset``, both at most ``MAX_PAGE_INT``.
"""

from __future__ import annotations

from memo.errors import ValidationError

MAX_PAGE_INT = 2**63 - 1   # SQLite INTEGER (and PostgreSQL bigint) maximum


def check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE_INT or not 0 <= offset <= MAX_PAGE_INT:
        raise ValidationError(f"limit must be 1..{MAX_PAGE_INT} and offset 0..{MAX_PAGE_INT}")
