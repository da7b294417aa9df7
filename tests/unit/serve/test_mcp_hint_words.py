"""Over MCP the library's advice names the tools, not memo's commands (an agent reading
"`memo supersede r…`" has no shell to type it in)."""

from memo.errors import ValidationError
from memo.serve.mcp_server import error_result, mcp_words


def test_commands_with_a_tool_are_named_as_the_tool():
    assert mcp_words("supersede the newest version: `memo supersede r26a`") == \
        "supersede the newest version: `memory_supersede` (id r26a)"
    assert mcp_words("`memo fact list` shows the fact ids that exist") == "`memory_fact_list` shows the fact ids that exist"
    assert mcp_words("see `memo get r1:2`; run `memo stats`") == "see `memory_get` (id r1:2); run `memory_stats`"


def test_commands_without_a_tool_stay():
    for text in ("run `memo stats --migrate`", "`memo reindex` rebuilds derived indexes", "memo supersede"):
        assert mcp_words(text) == text


def test_an_error_result_says_the_tool():
    err = ValidationError("record r1 is already superseded by r2", hint="supersede the newest version: `memo supersede r2`")
    doc = error_result(err).structured_content
    assert doc["hint"] == "supersede the newest version: `memory_supersede` (id r2)"
