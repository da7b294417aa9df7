"""memo-mcp fact tools end to end (issue 10.2): memory_fact_add / list / forget over stdio
with the SDK's client, the fact's vote visible in memory_search explain, typed errors."""

from __future__ import annotations

from pathlib import Path

from mcp.client.session import ClientSession

from tests.integration.test_mcp_stdio import doc, error_line, run_session


def test_fact_tools(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        rid = doc(await s.call_tool("memory_add", {"text": "The proxy log shows resets every hour.",
                                                   "namespace": "ops"}))["record_id"]
        added = doc(await s.call_tool("memory_fact_add", {"text": "Clients see ERR_CONN_RESET.",
                                                          "evidence": [rid], "namespace": "ops"}))
        assert added["status"] == "added" and added["evidence"] == [f"{rid}:0"]
        assert added["near_duplicate_of"] is None
        # the same fact again with a small edit: stored and linked, said in the answer (issue 32)
        again = doc(await s.call_tool("memory_fact_add", {"text": "Clients see ERR_CONN_RESET!!",
                                                          "evidence": [rid], "namespace": "ops"}))
        assert again["status"] == "added" and again["near_duplicate_of"] == added["fact_id"]
        assert "near-identical" in again["note"]
        doc(await s.call_tool("memory_fact_forget", {"ids": [again["fact_id"]]}))
        line = error_line(await s.call_tool("memory_fact_add", {"text": "x", "evidence": ["nope"]}))
        assert line.startswith("ValidationError: ") and "nope" in line
        listed = doc(await s.call_tool("memory_fact_list", {"namespaces": ["ops"]}))
        assert listed["count"] == 1 and listed["facts"][0]["id"] == added["fact_id"]
        res = doc(await s.call_tool("memory_search", {"query": "ERR_CONN_RESET", "response_format": "explain"}))
        assert res["results"][0]["why"]["arms"]["fact"]["votes"][0]["fact_id"] == added["fact_id"]
        two = [added["fact_id"], "fnope"]
        line = error_line(await s.call_tool("memory_fact_forget", {"ids": two}))
        assert line.startswith("ConfirmationRequired: ")
        gone = doc(await s.call_tool("memory_fact_forget", {"ids": [added["fact_id"]]}))
        assert gone["forgotten"] == [added["fact_id"]]
        assert doc(await s.call_tool("memory_fact_list", {}))["count"] == 0

    run_session(tmp_path, scenario)
