"""memo-mcp's tool arguments over stdio with the SDK's own client: each tool takes exactly
the arguments tools/list publishes, with their JSON types.  An unknown name or a wrong type
is a ValidationError tool result (and nothing is stored); hints fit the error; a long
non-ASCII text over the line cap is a protocol error the server survives (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from memo.serve.mcp_server import MAX_MESSAGE_BYTES, SCHEMA_HINT
from tests.integration.test_mcp_stdio import TOOLS, doc, error_line, run_session

INVALID_REQUEST = -32600


def refusal(result: Any) -> dict[str, Any]:
    """The error document of a refused call (one line with its hint, as every memo error)."""
    error_line(result)
    return result.structured_content


def schema_refusal(result: Any, *needles: str) -> str:
    """A schema failure: ValidationError, exit code 2, the schema's hint, ``needles`` in the message."""
    err = refusal(result)
    assert (err["error"], err["exit_code"], err["hint"]) == ("ValidationError", 2, SCHEMA_HINT), err
    assert all(n in err["message"] for n in needles), (needles, err["message"])
    return err["message"]


def test_schemas_forbid_unknown_arguments(tmp_path: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        schemas = {t.name: t.input_schema for t in (await s.list_tools()).tools}
        assert set(schemas) == TOOLS
        assert {name: schema.get("additionalProperties") for name, schema in schemas.items()} == dict.fromkeys(
            TOOLS, False)

    run_session(tmp_path, scenario)


def test_unknown_argument_is_refused_by_every_tool_and_nothing_is_stored(tmp_path: Path) -> None:
    """The probe's calls: ``namespace`` searched every namespace, ``explain`` was ignored, and
    ``tag`` / ``entity`` / ``event_date`` stored a record without them."""
    async def scenario(s: ClientSession) -> None:
        rid = doc(await s.call_tool("memory_add", {"text": "Back up the ops database nightly.",
                                                    "namespace": "ops"}))["record_id"]
        fid = doc(await s.call_tool("memory_fact_add", {"text": "The ops database is backed up.",
                                                         "evidence": [rid]}))["fact_id"]

        res = await s.call_tool("memory_search", {"query": "backup the database", "namespace": "ops"})
        schema_refusal(res, "unknown argument namespace (did you mean namespaces?)")
        schema_refusal(await s.call_tool("memory_search", {"query": "backup the database", "explain": True}),
                       "unknown argument explain", "response_format")
        msg = schema_refusal(await s.call_tool("memory_add", {
            "text": "Kestrel's runbook: restart the queue first.", "tag": ["runbook"], "entity": ["Kestrel"],
            "event_date": "2024-01-01"}),
            "tag (did you mean tags?)", "entity (did you mean entities?)", "event_date (did you mean event_at?)")
        assert msg.count("unknown arguments") == 1

        # Every tool, called with valid arguments plus one it does not take.
        valid = {"memory_search": {"query": "database"}, "memory_add": {"text": "A second note."},
                 "memory_get": {"id": rid}, "memory_list": {}, "memory_supersede": {"id": rid, "text": "New text."},
                 "memory_forget": {"ids": [rid]}, "memory_fact_add": {"text": "Another fact.", "evidence": [rid]},
                 "memory_fact_list": {}, "memory_fact_supersede": {"id": fid, "text": "A newer fact."},
                 "memory_fact_forget": {"ids": [fid]}, "memory_stats": {}}
        assert set(valid) == TOOLS
        for tool, args in valid.items():
            schema_refusal(await s.call_tool(tool, {**args, "bogus_arg": 1}), "unknown argument bogus_arg")

        stats = doc(await s.call_tool("memory_stats", {}))
        assert (stats["records"], stats["live"], stats["superseded"], stats["forgotten"]) == (1, 1, 0, 0)
        assert [f["id"] for f in doc(await s.call_tool("memory_fact_list", {}))["facts"]] == [fid]

    run_session(tmp_path, scenario)


WRONG_TYPES = [   # (tool, arguments, the argument named, the type named)
    ("memory_search", {"query": "x", "limit": True}, "limit", "integer"),
    ("memory_search", {"query": "x", "limit": "3"}, "limit", "integer"),
    ("memory_search", {"query": "x", "limit": 5.0}, "limit", "without a decimal point"),
    ("memory_search", {"query": "x", "limit": 5.5}, "limit", "integer"),
    ("memory_search", {"query": "x", "max_tokens": False}, "max_tokens", "integer"),
    ("memory_search", {"query": "x", "min_trust": True}, "min_trust", "number"),
    ("memory_search", {"query": "x", "min_trust": "0.5"}, "min_trust", "number"),
    ("memory_search", {"query": 5}, "query", "string"),
    ("memory_list", {"limit": "10"}, "limit", "integer"),
    ("memory_list", {"include_forgotten": "true"}, "include_forgotten", "boolean"),
    ("memory_list", {"include_superseded": 1}, "include_superseded", "boolean"),
    ("memory_forget", {"ids": ["r1", "r2"], "confirm": True}, "confirm", "integer"),
    ("memory_add", {"text": "typed", "trust": "1"}, "trust", "number"),
    ("memory_add", {"text": "typed", "wait": "false"}, "wait", "boolean"),
    ("memory_fact_list", {"offset": 1.0}, "offset", "without a decimal point"),
]


def test_wrong_json_types_are_refused_not_coerced(tmp_path: Path) -> None:
    """``limit: true`` ran as limit 1, ``"3"`` and ``5.0`` as 3 and 5; an integer is still a number."""
    async def scenario(s: ClientSession) -> None:
        for tool, args, name, expected in WRONG_TYPES:
            schema_refusal(await s.call_tool(tool, args), f"{name}: ", expected)
        assert doc(await s.call_tool("memory_stats", {}))["records"] == 0        # the adds stored nothing
        added = doc(await s.call_tool("memory_add", {"text": "Trust given as an integer.", "trust": 1}))
        assert doc(await s.call_tool("memory_get", {"id": added["record_id"]}))["trust"] == 1.0
        res = doc(await s.call_tool("memory_search", {"query": "trust integer", "min_trust": 1, "limit": 3}))
        assert [r["record_id"] for r in res["results"]] == [added["record_id"]]

    run_session(tmp_path, scenario)


def test_hints_fit_the_error(tmp_path: Path) -> None:
    """The schema's hint only for schema failures; the library's rules get advice that fits."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "short.toml").write_text('extends = "zscore"\n\n[limit]\ndefault = 3\nmax = 5\n')

    async def scenario(s: ClientSession) -> None:
        err = refusal(await s.call_tool("memory_search", {"query": "x", "profile": "nope"}))
        assert err["error"] == "ProfileError" and "nope" in err["message"], err
        assert "pass a path" not in err["hint"] and "--profile option" in err["hint"], err["hint"]
        assert str(profiles) in err["hint"], err["hint"]

        doc(await s.call_tool("memory_add", {"text": "Limits are per profile."}))
        err = refusal(await s.call_tool("memory_search", {"query": "limits", "profile": "short", "limit": 10}))
        assert err["error"] == "ValidationError" and "from 1 to 5" in err["message"], err
        assert err["hint"] and err["hint"] != SCHEMA_HINT and "schema" not in err["hint"], err

        rid = doc(await s.call_tool("memory_add", {"text": "The VPN gateway is vpn1."}))["record_id"]
        err = refusal(await s.call_tool("memory_supersede", {"id": rid, "text": "The VPN gateway is vpn1."}))
        assert "same as the current version" in err["message"] and "schema" not in err["hint"], err
        doc(await s.call_tool("memory_forget", {"ids": [rid]}))
        err = refusal(await s.call_tool("memory_supersede", {"id": rid, "text": "The VPN gateway is vpn2."}))
        assert "is forgotten" in err["message"] and "schema" not in err["hint"], err

        schema_refusal(await s.call_tool("memory_search", {"query": "limits", "limit": 0}), "limit")

    run_session(tmp_path, scenario, {"MEMO_PROFILES_DIR": str(profiles)})


def test_a_long_non_ascii_text_over_the_line_cap_is_a_protocol_error(tmp_path: Path) -> None:
    """docs/mcp.md: the cap counts bytes of the line, memory_add's limit characters.  3,000,000
    CJK characters (under the 5 MiB-character limit) are 9 MB of UTF-8: refused at the
    transport (-32600), not a tool result; nothing is stored and the server goes on."""
    text = "数据库备份" * 600_000
    assert len(text.encode("utf-8")) > MAX_MESSAGE_BYTES > len(text)

    async def scenario(s: ClientSession) -> None:
        with pytest.raises(MCPError) as refused:
            await s.call_tool("memory_add", {"text": text})
        assert refused.value.code == INVALID_REQUEST and "bytes" in refused.value.message, refused.value
        assert doc(await s.call_tool("memory_stats", {}))["records"] == 0
        doc(await s.call_tool("memory_add", {"text": text[:1000]}))

    run_session(tmp_path, scenario)
