"""Why a search returned nothing: every cause once, with its reason and hint.

An empty answer is not an error (exit 0), but each cause is told apart, so a tiny
``max_tokens`` or a missing model never reads as "not in the knowledge base".  Only
``abstained`` (the abstention stage dropped every candidate: each for weak semantic
evidence only, or the whole query for weak evidence, ``memo.retrieve.abstention``) sets ``SearchResponse.abstained``: the seed's deliberate "not in the
knowledge base".  ``SearchResponse.cause`` carries the key; docs/cli-json.md lists the
table; tests/unit/retrieve/test_empty_causes.py has one test per cause.

``empty_cause`` decides in this order (the first that holds wins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The causes are defined in memo.types (the metrics count one series per cause from the
# start, and memo.metrics sits below the pipeline).
from memo.types import EMPTY_CAUSES, NOT_FOUND_HINT  # noqa: F401  (re-exported)


def empty_cause(*, in_scope: int, mode: str, runs: Sequence[Any], n_fused: int, n_abstained: int,
                n_after_abstention: int, pending: int = 0, no_vectors: bool = False) -> str:
    """The cause of an empty result list (keys of ``EMPTY_CAUSES``).  ``pending``: in-scope
    passages the semantic arm could not see (no vector yet): an abstention then cannot say
    "not in the knowledge base", the answer may be one of them."""
    if in_scope == 0:
        return "no_scope"
    semantic = next((r for r in runs if r.name == "semantic"), None)
    if mode == "semantic" and semantic is not None and not semantic.ran and semantic.degraded:
        return "no_vectors" if no_vectors else "model_unavailable"
    if n_fused == 0:
        if any(not r.ran and r.reason.startswith("not run:") for r in runs):
            return "no_searchable_word"
        if not any(r.ran for r in runs):
            return "no_arm"
        return "no_match"
    if n_abstained and n_after_abstention == 0:
        return "vectors_pending" if pending else "abstained"
    if n_after_abstention > 0:
        return "budget"     # cutoff keeps min_results and limit >= 1: only the budget empties it
    return "dropped"


def describe(cause: str, **values: Any) -> tuple[str, str]:
    """(reason, hint) of ``cause`` with its fields filled in."""
    reason, hint = EMPTY_CAUSES[cause]
    return reason.format_map(_Blank(values)), hint.format_map(_Blank(values))


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"
