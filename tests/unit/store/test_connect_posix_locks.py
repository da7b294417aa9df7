"""Opening a second connection must not drop the POSIX locks of the first one.

On POSIX, closing *any* file descriptor of a file releases every fcntl lock the process
holds on it, SQLite's included ("How to corrupt an SQLite database", 2.2).  ``connect``
reads the database header itself before SQLite opens the file (``check_header``); done
with a plain open/close while another connection of the same process is inside a
transaction, that silently dropped the other connection's locks: another process could
then take the database as unused, checkpoint and delete its WAL.  The 4-writer soak with a
background embedder thread per writer (each opening its own connection) hit it: "database
disk image is malformed" within a minute.  So the header is read once per file and process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memo.store.db import open_db

# SQLite's unix VFS lock bytes (os_unix.c / sqliteInt.h): a reader holds a read lock on
# the SHARED range of the database file while it has a transaction open.
PENDING_BYTE = 0x40000000
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510

PROBE = f"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, {SHARED_SIZE}, {SHARED_FIRST})
except OSError:
    print("locked")
else:
    print("free")
"""


def shared_range_is_locked(db: Path) -> bool:
    """Whether some other process holds a lock on SQLite's SHARED range (asked from a
    child process: fcntl locks never conflict within one process)."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(db)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip() == "locked"


def test_a_second_open_keeps_the_first_connections_locks(db_path: Path) -> None:
    first = open_db(db_path)
    first.execute("BEGIN")
    first.execute("SELECT count(*) FROM records").fetchone()     # a read transaction: SHARED lock
    assert shared_range_is_locked(db_path)
    second = open_db(db_path, write=False)                       # e.g. a server's embedder thread
    assert shared_range_is_locked(db_path), "opening a second connection dropped the first one's locks"
    first.execute("COMMIT")
    second.close()
    first.close()
