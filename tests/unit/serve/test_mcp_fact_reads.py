"""memo-mcp's fact list is a read: it runs on the read connection (``read_conn`` under
``_read_lock``), so it answers while a long add holds the write connection's lock."""

from __future__ import annotations

import threading

from memo.serve.mcp_tools import MemoTools


def test_fact_list_never_waits_behind_the_write_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))    # no model: nothing embeds
    tools = MemoTools(tmp_path / "m.db")
    try:
        rid = tools.add("the proxy log shows resets every hour", namespace="ops")["record_id"]
        fid = tools.fact_add("clients see ERR_CONN_RESET", [rid], namespace="ops")["fact_id"]
        done = threading.Event()
        out: dict = {}

        def list_facts() -> None:
            out.update(tools.fact_list(namespaces=["ops"]))
            done.set()

        with tools._lock:                    # a long add holds the write connection
            t = threading.Thread(target=list_facts)
            t.start()
            assert done.wait(10), "memory_fact_list waited for the write lock"
        t.join()
        assert out["count"] == 1 and out["facts"][0]["id"] == fid
    finally:
        tools.close()
