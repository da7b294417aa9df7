"""memo-mcp's list tools cap one page at ``memo.text.limits.MAX_PAGE_ROWS``, defined once:
the schema's ``maximum``, the description's range and the refusal all follow it (they were
literals, 1..1000, in each tool).  In process: the server is built with the constant
changed, as a new value would reach it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from memo.serve import mcp_server
from memo.serve.mcp_tools import MemoTools
from memo.text.limits import MAX_PAGE_ROWS

LIST_TOOLS = ("memory_list", "memory_fact_list")


def _limits(tools: MemoTools) -> dict[str, Any]:
    server = mcp_server.build_server(tools, backfill=False)

    async def main() -> dict[str, Any]:
        listed = {t.name: t.input_schema["properties"]["limit"] for t in await server.list_tools()
                  if t.name in LIST_TOOLS}
        calls = {}
        for name in LIST_TOOLS:
            top = listed[name]["maximum"]
            calls[name] = (await server.call_tool(name, {"limit": top}), await server.call_tool(name, {"limit": top + 1}))
        return {"schemas": listed, "calls": calls}

    return anyio.run(main)


@pytest.mark.parametrize("cap", [MAX_PAGE_ROWS, 7])
def test_list_tools_take_the_one_page_cap(cap: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "MAX_PAGE_ROWS", cap)
    tools = MemoTools(tmp_path / "m.db")
    try:
        got = _limits(tools)
    finally:
        tools.close()
    for name in LIST_TOOLS:
        schema = got["schemas"][name]
        assert (schema["minimum"], schema["maximum"]) == (1, cap), (name, schema)
        assert schema["description"].endswith(f" to return, 1..{cap}."), (name, schema)
        at_cap, over = got["calls"][name]
        assert not at_cap.is_error, at_cap.content[0].text
        assert over.is_error and over.content[0].text.startswith("ValidationError: "), over.content[0].text
        assert f"less than or equal to {cap}" in over.content[0].text, over.content[0].text
