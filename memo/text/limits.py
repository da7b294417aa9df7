"""Size caps on text coming in: one definition each, used by every skin.

* ``MAX_QUERY_CHARS`` (10,000 characters): a longer query is cut (at the last whitespace
  before the cap, so no word is cut in half) once, at the top of the search pipeline
  (``memo.retrieve.validate.check_request``), and every arm sees the cut text; the
  response's ``trace.notes`` says so.  No error: a pasted page still searches.  Why: a
  10 MB query over MCP lifted the server's RSS to 922 MB because the semantic arm's
  tokenizer tokenised all of it (the model reads only its first 256 tokens anyway), and
  the keyword arm keeps at most 64 terms.  ``memo.text.fts_query`` clips the same way for
  callers that compile a query without the pipeline.
* ``MAX_BODY_CHARS`` (5 MiB = 5,242,880 characters): the text of one record
  (``memo.store.records.validate_draft``: ``memo add``, MCP ``add``, web add, and each
  record of ``memo import``).  Over it, the add is refused with a ``ValidationError`` whose
  hint points to ``memo import`` (a folder of files, or JSONL with one record per line,
  committed in batches).  The number equals ``memo import``'s default per-file cap
  (``--max-bytes`` 5 MiB; a character is at least one byte), so any file that import
  accepts by default also passes this check.
* ``RELEASE_AFTER_CHARS`` (1 MiB): a long-running server (memo-mcp, memo web) that stored
  a text longer than this gives the memory the write used back to the OS afterwards
  (``memo.store.connect.release_memory``); smaller writes keep their caches warm.
"""

from __future__ import annotations

MAX_QUERY_CHARS = 10_000
MAX_BODY_CHARS = 5 * 1024 * 1024
RELEASE_AFTER_CHARS = 1024 * 1024


def clip_query(query: str, cap: int = MAX_QUERY_CHARS) -> str:
    """``query`` cut to at most ``cap`` characters, at the last whitespace before the cap
    when the cut would fall inside a word (unchanged, not copied, when short enough)."""
    if len(query) <= cap:
        return query
    head = query[:cap]
    if not query[cap].isspace():   # do not search for half a word
        cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if cut > 0:
            head = head[:cut]
    return head
