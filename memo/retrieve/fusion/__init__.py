"""Stage 3, fusion: one algorithm per file, chosen by name (``profile.fusion.method``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memo.errors import ProfileError
from memo.retrieve.fusion.minmax import minmax
from memo.retrieve.fusion.rrf import rrf
from memo.retrieve.types import ArmRun, Candidate

FusionFn = Callable[[Sequence[ArmRun], Mapping[str, float], int], list[Candidate]]
FUSIONS: dict[str, FusionFn] = {"rrf": rrf, "minmax": minmax}


def fusion_switch(name: str) -> FusionFn:
    try:
        return FUSIONS[name]
    except KeyError:
        raise ProfileError(f"unknown fusion method {name!r} (known: {', '.join(FUSIONS)})") from None


def fuse(runs: Sequence[ArmRun], method: str, weights: Mapping[str, float], k: int) -> list[Candidate]:
    """Fused candidates, unordered (recency re-orders them anyway)."""
    return fusion_switch(method)(runs, weights, k)
