"""Deterministic token count used for the token budget.

Why not the model tokenizer: the budget must be exact and reproducible with no model
loaded (degraded mode, tests).  The count is words plus standalone punctuation, scaled
by 4/3, which tracks BPE/WordPiece counts of English prose closely enough for packing.
Chinese, Japanese and Korean are written without spaces between words: each CJK
character counts as a piece (LLM tokenizers spend about one token or more per
character), not a whole run as one word.
"""

from __future__ import annotations

import math
import re

from memo.text.cjk import CJK_CHARS, has_cjk

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# Slower (a look-ahead per character): only for text that holds CJK.
_PIECE_CJK = re.compile(f"[{CJK_CHARS}]|(?:(?![{CJK_CHARS}])\\w)+|[^\\w\\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    pieces = len((_PIECE_CJK if has_cjk(text) else _PIECE).findall(text))
    return math.ceil(pieces * 4 / 3) if pieces else 0
