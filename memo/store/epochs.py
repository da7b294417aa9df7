"""The epochs that tell a process's caches of derived data that rows went away.

``memo_meta.vectors_epoch`` (vector matrices and their sidecar files, ``memo.embed``) and
``memo_meta.mentions_epoch`` (mention graphs, title indexes and their sidecar files,
``memo.graph``) move whenever rows are deleted; a cache holding another epoch reloads in
full, one holding the same epoch only reads the rows added since (by ``seq``).

Caches are keyed by the database's path (or URL), so an epoch must also tell *databases*
apart: a database deleted and created again at the same path, copied over, or restored
from a backup of another one would otherwise match a cache of the one before it at the
same epoch, and the rows "added since" would be appended to another database's graph or
vectors.  So every epoch is a fresh random 62-bit number: set when a database is created,
when rows go away (a database from before this rule takes one at its first deletion) and
when a backup is restored.  Only equality is ever asked of an epoch.  The keyword
postings' ``generation`` follows the same rule (``memo.store.kw_postings``).
"""

from __future__ import annotations

import os

VECTORS = "vectors_epoch"
MENTIONS = "mentions_epoch"


def random_below(power_of_two: int) -> int:
    """A uniform random integer in [0, power_of_two) from the OS's generator (``secrets``
    would add ~4 ms of imports, hmac and hashlib, to every process that searches: a cold
    ``memo search`` imports this module).  Exact for a power of two up to 2**64."""
    return int.from_bytes(os.urandom(8), "little") % power_of_two


def fresh_epoch() -> str:
    """A value no cache of any database holds (stored as text, as memo_meta's values are)."""
    return str(random_below(1 << 62))


def bump(conn, key: str) -> None:  # noqa: ANN001 - a SQLite or PostgreSQL connection
    """Give ``key`` (``VECTORS`` or ``MENTIONS``) a fresh epoch (caller's transaction)."""
    conn.execute("UPDATE memo_meta SET value = ? WHERE key = ?", (fresh_epoch(), key))


def new_database(conn) -> None:  # noqa: ANN001 - a SQLite or PostgreSQL connection
    """Fresh epochs for a database just created (or just restored): its own, not the '0'
    every database starts from in the migrations' SQL."""
    for key in (VECTORS, MENTIONS):
        bump(conn, key)
