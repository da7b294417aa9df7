import sqlite3

import pytest

from memo.errors import StoreBusy, StoreCorrupt, StoreError
from memo.ops.guard import store_errors


@pytest.mark.parametrize(("msg", "cls"), [("database disk image is malformed", StoreCorrupt),
                                          ("file is not a database", StoreCorrupt),
                                          ("database is locked", StoreBusy), ("disk I/O error", StoreError)])
def test_sqlite_errors_become_store_errors(msg, cls):
    with pytest.raises(cls, match="add failed"), store_errors("add"):
        raise sqlite3.OperationalError(msg)


def test_other_errors_pass_through():
    with pytest.raises(KeyError), store_errors("add"):
        raise KeyError("x")
