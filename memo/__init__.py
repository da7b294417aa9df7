"""memo: a local-first memory and knowledge base for AI agents.

The library is the product; the CLI (``memo``), the MCP server and the web UI are skins.
"""

__version__ = "0.1.0"
