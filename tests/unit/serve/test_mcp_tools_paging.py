"""``MemoTools``' list methods ask the library for one row more than ``limit`` to fill
``next_offset``; at the largest limit SQL binds (``MAX_PAGE_INT``) there is no row more to
ask for, and a limit out of range still reaches the library, which refuses it."""

from __future__ import annotations

import pytest

from memo.errors import ValidationError
from memo.ops.paging import MAX_PAGE_INT
from memo.serve.mcp_tools import MemoTools


def test_paging_at_the_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))    # no model: nothing embeds
    tools = MemoTools(tmp_path / "m.db")
    try:
        rid = tools.add("the proxy log shows resets every hour")["record_id"]
        tools.fact_add("clients see ERR_CONN_RESET", [rid])
        for listed, key in ((tools.list_records, "records"), (tools.fact_list, "facts")):
            assert listed(limit=MAX_PAGE_INT)["next_offset"] is None
            assert listed(limit=1, offset=MAX_PAGE_INT) == {"count": 0, key: [], "next_offset": None}
            for limit in (0, MAX_PAGE_INT + 1):
                with pytest.raises(ValidationError, match="limit must be"):
                    listed(limit=limit)
    finally:
        tools.close()
