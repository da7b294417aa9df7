"""A piece of code (a symbol, a module's top-level code) as passages that fit the model.

Every code splitter (``memo.ingest.split_code``, ``python_parse``, ``code_parse``) hands
its pieces here, so code is sized like documents: each passage, section line included,
fits the embedding model's window in word pieces (``memo.ingest.split_markdown``'s
packing, the text treated as a code block: a piece too long is cut between lines, a line
too long between words), where a count of words would let code, several word pieces a
word, run past what the model reads.  A passage without a letter or digit (``;``, ``}``
of a minified file or one that does not parse) is no passage: nothing can find it and it
would only take a place in the results.
"""

from __future__ import annotations

import re

from memo.ingest.markdown_parse import Block
from memo.ingest.split_markdown import pack_blocks, text_budget
from memo.stored import PassageDraft

_WORD = re.compile(r"\w")


def has_words(text: str) -> bool:
    return _WORD.search(text) is not None


def fit_code(section: str, *texts: str) -> list[PassageDraft]:
    """``texts`` (say a docstring and code) packed in order into passages of ``section``."""
    stored, budget = text_budget(section)
    blocks = [Block(path=(), text=t, kind="fence") for t in texts if has_words(t)]
    return [PassageDraft(text=t, section=stored) for t in pack_blocks(blocks, budget) if has_words(t)]
