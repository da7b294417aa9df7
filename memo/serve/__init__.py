"""Server skins over the memo library.

``memo.serve.mcp``: the MCP server (``memo-mcp``, stdio transport).  Skins only parse,
call ``memo.ops`` / ``memo.retrieve`` and serialise; every rule lives in the library.
"""
