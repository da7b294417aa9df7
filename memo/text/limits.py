"""Size caps on input coming in: one definition each, used by every skin.

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

Caps on the lists a write takes (issue 33.1).  Why: a write works through its lists while
it holds the writers' queue (memo.store.write_queue), so an unbounded list stalls every
other writer; 60,000 bogus evidence ids held the lock for 65 s and another process's add
failed with StoreBusy.  Each cap is checked by the library before any lock is taken
(``check_list``: a ``ValidationError`` naming the list, its length and the cap), so the
CLI, MCP (whose tool schemas carry the same numbers as ``maxItems``), the web API and
every line of ``memo import`` refuse the same requests.  Each is far above real use:

* ``MAX_EVIDENCE_IDS`` (100): evidence references of one fact (``memo fact add
  --evidence``, MCP ``memory_fact_add``/``evidence``, JSONL fact lines, ``fact
  supersede``).  LoCoMo's 2,541 observations cite at most 4 turns.
* ``MAX_EVIDENCE_PASSAGES`` (1,000): the passages those references resolve to (a record
  id stands for all its passages).  Every one gets an evidence row and its mentions inside
  the write; past a thousand the fact is about no passage in particular, cite the passages
  (``'<record>:<n>'``) that support it.
* ``MAX_TAGS`` (100): tags of one record (``memo add/supersede --tag``, MCP and web
  ``tags``, ``memo import --tag`` plus a JSONL line's own).
* ``MAX_ENTITIES`` (100): explicit entities of one record (``memo add --entity``, MCP
  ``entities``, ``meta.entities`` from any skin or JSONL line); each becomes a mention on
  every passage of the record.
* ``MAX_IDS`` (1,000): ids one forget takes (``memo forget``, ``memo fact forget``, MCP
  ``memory_forget``/``memory_fact_forget``); larger clean-ups go in several calls.

* ``MAX_NAMESPACE_CHARS`` (200): a namespace's length (``memo.text.namespaces``: every
  write).  A namespace is printed in every list line and named in every empty answer's
  reason ("the namespaces are ..."): a 5,000-character one added 10 kB to each of those
  answers over MCP.

* ``RELEASE_AFTER_CHARS`` (1 MiB): a long-running server (memo-mcp, memo web) that stored
  a text longer than this gives the memory the write used back to the OS afterwards
  (``memo.store.connect.release_memory``); smaller writes keep their caches warm.

A cap on what one answer returns:

* ``MAX_PAGE_ROWS`` (1,000): rows one page of memo-mcp's list tools returns
  (``memory_list``, ``memory_fact_list``: their ``limit``, whose schema says
  ``maximum`` and whose description names the range).  Why: the whole page goes into the
  agent's context in one tool result; longer lists are read page by page with
  ``next_offset``.  The CLI's lists (``memo list``, ``memo fact list``, ``memo entities
  list``) write to a terminal or a file and take any ``--limit`` SQL can bind
  (``memo.ops.paging.MAX_PAGE_INT``).
"""

from __future__ import annotations

from collections.abc import Sized

from memo.errors import ValidationError

MAX_QUERY_CHARS = 10_000
MAX_BODY_CHARS = 5 * 1024 * 1024
MAX_EVIDENCE_IDS = 100
MAX_EVIDENCE_PASSAGES = 1_000
MAX_TAGS = 100
MAX_ENTITIES = 100
MAX_IDS = 1_000
MAX_PAGE_ROWS = 1_000
MAX_NAMESPACE_CHARS = 200


def check_list(what: str, values: Sized, cap: int, hint: str | None = None) -> None:
    """Refuse a list over its cap (``ValidationError``), before anything is looked up."""
    if len(values) > cap:
        raise ValidationError(f"{len(values):,} {what} given, over the cap of {cap:,} per request",
                              hint=hint or f"send at most {cap:,} {what} per request (docs/cli-json.md, caps)")

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
