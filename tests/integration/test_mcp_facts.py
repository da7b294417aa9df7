"""memo-mcp fact tools end to end (issue 10.2): memory_fact_add / list / forget over stdio
with the SDK's client, the fact's vote visible in memory_search explain, typed errors."""

from __future__ import annotations

from pathlib import Path

import anyio
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


def test_fact_supersede(tmp_path: Path) -> None:
    """memory_fact_supersede as `memo fact supersede`: the evidence is copied unless given; the
    old version gets superseded_by and leaves the live list; a superseded, forgotten or unknown
    fact is refused with a one-line error and nothing changes.  The new version's vector is
    embedded as memory_fact_add's: by the server's embedder after the answer (embedded
    false), or before it with wait."""
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        ann = tools["memory_fact_supersede"].annotations
        assert (ann.read_only_hint, ann.destructive_hint, ann.idempotent_hint) == (False, False, False)

        rid = doc(await s.call_tool("memory_add", {"text": "The proxy log shows resets every hour.",
                                                   "namespace": "ops"}))["record_id"]
        rid2 = doc(await s.call_tool("memory_add", {"text": "The proxy was replaced by haproxy in May.",
                                                    "namespace": "ops"}))["record_id"]
        old = doc(await s.call_tool("memory_fact_add", {"text": "Clients see ERR_CONN_RESET.", "evidence": [rid],
                                                        "namespace": "ops", "author": "oncall"}))["fact_id"]

        rep = doc(await s.call_tool("memory_fact_supersede", {"id": old, "text": "Clients saw ERR_CONN_RESET hourly."}))
        assert set(rep) == {"old_id", "new_id", "superseded_at", "evidence", "embedded", "dropped",
                            "stale_evidence"}, rep
        assert rep["embedded"] is False                     # queued: the answer did not wait for the model
        assert rep["old_id"] == old and rep["new_id"] != old and rep["evidence"] == [f"{rid}:0"]   # copied
        live = doc(await s.call_tool("memory_fact_list", {"namespaces": ["ops"]}))["facts"]
        assert [(f["id"], f["text"], f["namespace"], f["author"]) for f in live] == [
            (rep["new_id"], "Clients saw ERR_CONN_RESET hourly.", "ops", "oncall")]
        every = {f["id"]: f for f in doc(await s.call_tool("memory_fact_list", {"include_superseded": True}))["facts"]}
        assert every[old]["superseded_by"] == rep["new_id"] and every[old]["superseded_at"] == rep["superseded_at"]
        assert every[rep["new_id"]]["superseded_by"] is None

        # evidence given: it replaces the old version's
        newer = doc(await s.call_tool("memory_fact_supersede", {"id": rep["new_id"], "text": "haproxy fixed the resets.",
                                                                "evidence": [rid2], "wait": True}))
        assert newer["evidence"] == [f"{rid2}:0"] and newer["embedded"] is True, newer

        # refused: already superseded (names the newest version), forgotten, unknown id
        line = error_line(await s.call_tool("memory_fact_supersede", {"id": old, "text": "Another try."}))
        assert line.startswith("ValidationError: ") and f"already superseded by {rep['new_id']}" in line, line
        doc(await s.call_tool("memory_fact_forget", {"ids": [newer["new_id"]]}))
        line = error_line(await s.call_tool("memory_fact_supersede", {"id": newer["new_id"], "text": "Again."}))
        assert line.startswith("ValidationError: ") and "is forgotten" in line, line
        line = error_line(await s.call_tool("memory_fact_supersede", {"id": "fnope", "text": "x"}))
        assert line.startswith("NotFound: ") and "fnope" in line, line

        # strict arguments: a misspelt name and a wrong type are refused before the library
        line = error_line(await s.call_tool("memory_fact_supersede", {"id": old, "txt": "x"}))
        assert "unknown argument txt (did you mean text?)" in line, line
        line = error_line(await s.call_tool("memory_fact_supersede", {"id": old, "text": "x", "evidence": 5}))
        assert line.startswith("ValidationError: ") and "evidence: " in line, line
        facts = doc(await s.call_tool("memory_fact_list", {"include_superseded": True, "include_forgotten": True}))
        assert facts["count"] == 3                          # the refused calls stored nothing
        with anyio.fail_after(15):                          # the queued vectors land
            while any(doc(await s.call_tool("memory_stats", {}))["pending_fact_vectors"].values()):
                await anyio.sleep(0.1)

    run_session(tmp_path, scenario)
