"""memo-mcp imports the MCP SDK only once its main thread has opened the database and is
about to read the first request (``memo.serve.mcp._load_server`` waits on an event; issue
31.2: the two threads share one GIL, and the import beside the early answer to
``initialize`` stretched it past 300 ms on a busy machine).  Checked in a fresh interpreter:
this one has the SDK imported already."""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import sys, threading, time
from memo.serve import mcp
box, go = {}, threading.Event()
t = threading.Thread(target=mcp._load_server, args=(box, go), daemon=True)
t.start()
time.sleep(0.3)
held = "memo.serve.mcp_server" not in sys.modules and "mcp" not in sys.modules
go.set()
t.join(60)
print(held, "server" in box, "error" in box)
"""


def test_the_sdk_import_waits_for_the_main_thread() -> None:
    res = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True", "False"]


def test_the_sdk_import_starts_anyway_after_the_hold() -> None:
    child = CHILD.replace("from memo.serve import mcp\n", "from memo.serve import mcp\nmcp.IMPORT_HOLD_S = 0.05\n")
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "True", "False"]     # imported before go was set
