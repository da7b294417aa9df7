"""Deterministic token count used for the token budget.

Why not the model tokenizer: the budget must be exact and reproducible with no model
loaded (degraded mode, tests).  The count is words plus standalone punctuation, scaled
by 4/3, which tracks BPE/WordPiece counts of English prose closely enough for packing.
"""

from __future__ import annotations

import math
import re

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    pieces = len(_PIECE.findall(text))
    return math.ceil(pieces * 4 / 3) if pieces else 0
