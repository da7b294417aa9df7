"""Stage 3, fusion: one algorithm per file, chosen by name (``profile.fusion.method``).

Each fusion is its per-hit contribution formula plus the formula that orders its ties: the
other fusion (rrf ties by min-max evidence, min-max and z-score ties by rrf;
docs/architecture.md section 5).  ``tally`` does the one pass both share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memo.errors import ProfileError
from memo.retrieve.fusion.minmax import minmax_contributions
from memo.retrieve.fusion.rrf import rrf_contributions
from memo.retrieve.fusion.tally import Contributions, tally
from memo.retrieve.fusion.zscore import zscore_contributions
from memo.retrieve.types import ArmRun, Candidate

# name -> (score, tiebreak)
FUSIONS: dict[str, tuple[Contributions, Contributions]] = {
    "rrf": (rrf_contributions, minmax_contributions),
    "minmax": (minmax_contributions, rrf_contributions),
    "zscore": (zscore_contributions, rrf_contributions),
}


def fusion_switch(name: str) -> tuple[Contributions, Contributions]:
    try:
        return FUSIONS[name]
    except KeyError:
        raise ProfileError(f"unknown fusion method {name!r} (known: {', '.join(FUSIONS)})") from None


def fuse(runs: Sequence[ArmRun], method: str, weights: Mapping[str, float], k: int) -> list[Candidate]:
    """Fused candidates, unordered (the pipeline sorts them best first)."""
    score, tiebreak = fusion_switch(method)
    return tally(runs, weights, k, score, tiebreak)
