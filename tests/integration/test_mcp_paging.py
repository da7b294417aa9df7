"""memo-mcp's list tools say when more rows exist past ``limit`` (as ``memo list --json`` and
``memo fact list --json`` do): ``next_offset`` is the ``offset`` of the next page, ``null`` on
the last one, with the SDK's own client over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from tests.integration.test_mcp_stdio import doc, error_line, run_session

NOTES = ("The build cache lives in /var/cache/build-farm.", "Payroll runs on the last Friday of the month.",
         "The VPN gateway is vpn1.example.net.", "Printer PR-7 needs A4 paper only.",
         "Standup moved to 09:45 on Mondays.")
FACTS = ("Build artefacts are cached on disk.", "Salaries are paid monthly.", "Remote access goes through vpn1.")


async def pages(s: ClientSession, tool: str, key: str, limit: int, **args: Any) -> list[list[str]]:
    """Every page of ``tool`` from offset 0, following next_offset until it is null."""
    out: list[list[str]] = []
    offset: int | None = 0
    while offset is not None:
        page = doc(await s.call_tool(tool, {**args, "limit": limit, "offset": offset}))
        assert page["count"] == len(page[key]) <= limit, page
        out.append([row["id"] for row in page[key]])
        assert page["next_offset"] in (None, offset + page["count"]), page
        offset = page["next_offset"]
        assert len(out) <= 10, "next_offset never became null"
    return out


def test_list_tools_say_when_more_rows_exist(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        rids = [doc(await s.call_tool("memory_add", {"text": t, "namespace": "ops"}))["record_id"] for t in NOTES]
        fids = [doc(await s.call_tool("memory_fact_add", {"text": t, "evidence": [rid], "namespace": "ops"}))["fact_id"]
                for t, rid in zip(FACTS, rids[:len(FACTS)], strict=True)]

        # records: more rows than the limit, then exactly the limit, then the offset walk
        first = doc(await s.call_tool("memory_list", {"limit": 2}))
        assert (first["count"], first["next_offset"]) == (2, 2), first
        exact = doc(await s.call_tool("memory_list", {"limit": len(NOTES)}))
        assert (exact["count"], exact["next_offset"]) == (len(NOTES), None), exact
        walked = await pages(s, "memory_list", "records", 2)
        assert [len(p) for p in walked] == [2, 2, 1]
        assert sorted(sum(walked, [])) == sorted(rids)                  # every record once
        past = doc(await s.call_tool("memory_list", {"limit": 2, "offset": 10}))
        assert (past["count"], past["records"], past["next_offset"]) == (0, [], None)

        # facts: the same rule
        first = doc(await s.call_tool("memory_fact_list", {"limit": 2}))
        assert (first["count"], first["next_offset"]) == (2, 2), first
        exact = doc(await s.call_tool("memory_fact_list", {"limit": len(FACTS), "namespaces": ["ops"]}))
        assert (exact["count"], exact["next_offset"]) == (len(FACTS), None), exact
        walked = await pages(s, "memory_fact_list", "facts", 1)
        assert [len(p) for p in walked] == [1, 1, 1]
        assert sorted(sum(walked, [])) == sorted(fids)

    run_session(tmp_path, scenario)


def test_memory_list_takes_a_date_range(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        day = {d: doc(await s.call_tool("memory_add", {"text": f"Worked on the ingest service, day {d}.",
                                                       "event_at": f"2024-03-0{d}"}))["record_id"] for d in (4, 5)}
        got = doc(await s.call_tool("memory_list", {"date_from": "2024-03-05", "date_to": "2024-03-05"}))
        assert [r["id"] for r in got["records"]] == [day[5]], got
        bad = await s.call_tool("memory_list", {"date_from": "2024-03-06", "date_to": "2024-03-05"})
        assert "date range is empty" in error_line(bad)

    run_session(tmp_path, scenario)
