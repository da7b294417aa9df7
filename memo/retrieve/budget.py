"""Stage 8, token budget: pack results into ``max_tokens`` (seed section 6).

Greedy in rank order: a result goes in if its tokens (``passages.tokens``, the
deterministic ``memo.text.tokens.count_tokens`` of section + text) still fit; one that
does not fit is skipped and counted in ``truncated``, and packing goes on, so one long
passage does not hide shorter ones ranked below it.  The total never exceeds max_tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.retrieve.types import Candidate, Meta


def pack(ranked: Sequence[Candidate], meta: Mapping[int, Meta], max_tokens: int) -> tuple[list[Candidate], list[int], int]:
    """(kept in order, skipped pks, tokens used)."""
    used = 0
    kept, skipped = [], []
    for c in ranked:
        m = meta.get(c.pk)
        tokens = m.tokens if m is not None else 0
        if used + tokens <= max_tokens:
            kept.append(c)
            used += tokens
        else:
            skipped.append(c.pk)
    return kept, skipped, used
