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

import pytest

from memo.errors import StoreCorrupt, StoreError
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


def test_a_file_written_over_a_checked_database_is_still_not_a_memo_database(tmp_path: Path) -> None:
    """The header is read once per (device, inode), and a file system reuses the inode of a
    deleted database for the next file (CI met it: a text file written in a later test came
    out "damaged").  Text written over a database whose header this process passed, same
    inode, must still be reported as not a memo database, with its hint, not as damage."""
    path = tmp_path / "x.db"
    open_db(path).close()
    inode = path.stat().st_ino
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with open(path, "r+b") as fh:
        fh.write(b"plain text notes\n" * 20)
        fh.truncate()
    assert path.stat().st_ino == inode
    with pytest.raises(StoreError) as caught:
        open_db(path)
    assert not isinstance(caught.value, StoreCorrupt)
    assert "not a memo database" in str(caught.value)
