"""Stage 7, limit: keep the first ``limit`` results (default 10, at most 100; profile)."""

from __future__ import annotations

from collections.abc import Sequence

from memo.retrieve.types import Candidate


def limit(ranked: Sequence[Candidate], n: int) -> tuple[list[Candidate], list[int]]:
    """(kept, dropped pks)."""
    return list(ranked[:n]), [c.pk for c in ranked[n:]]
