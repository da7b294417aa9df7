"""Which engine a connection talks to, and whether a ``--db`` value names a server.

One definition: everything that must differ between SQLite and PostgreSQL asks
``is_postgres(conn)``; everything else runs the same SQL on both (translated at the
PostgreSQL connection, ``memo.store.postgres.connection``).
"""

from __future__ import annotations

URL_SCHEMES = ("postgresql://", "postgres://")


def is_db_url(value: object) -> bool:
    """True for a PostgreSQL connection URL (``postgresql://...``), the only server memo
    speaks to; anything else is a SQLite file path."""
    return isinstance(value, str) and value.strip().lower().startswith(URL_SCHEMES)


def is_postgres(conn: object) -> bool:
    return getattr(conn, "memo_dialect", "sqlite") == "postgresql"
