"""What the arms share besides the connection and the request: one typed, frozen value
(issue 11.8) instead of the old ``services: dict[str, Any]``.

* ``semantic``: the semantic service (``memo.embed.service.SemanticService``: model status,
  in-memory vector index, embedder, fact index) or a test fake with the same methods;
  ``None``: no meaning (the semantic arm reports "no embedding model configured", the fact
  arm matches facts by keyword only).
* ``query_vector``: a precomputed unit query vector (eval replay embeds every query of a
  data set once); ``None``: the semantic arm embeds the query (once per search).
* ``graph_cache``: where the graph arm keeps mention graphs (``memo.graph.cache.GraphCache``);
  ``None``: the process-wide cache.
* ``arm_cache``: reuse an arm's hits for a repeated (query, scope, constants...) within a
  connection (``memo.retrieve.run_arms``: eval replay's grids); interactive searches leave it
  off so their latency stays real.

``ArmServices.of(value)`` accepts an ``ArmServices``, ``None`` or, for the transition, the
old dict (keys ``semantic``, ``query_vector``, ``graph_cache``, ``arm_cache``; any other
key is an error).  ``get`` / ``in`` read it the way the dict was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:                    # numpy loads only for searches that use meaning
    import numpy as np

    from memo.graph.cache import GraphCache


@dataclass(frozen=True, slots=True)
class ArmServices:
    semantic: Any = None
    query_vector: np.ndarray | None = None
    graph_cache: GraphCache | None = None
    arm_cache: bool = False

    @classmethod
    def of(cls, value: ArmServices | Mapping[str, Any] | None) -> ArmServices:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            names = {f.name for f in fields(cls)}
            unknown = sorted(str(k) for k in value if k not in names)
            if unknown:
                raise ValueError(f"unknown arm service(s): {', '.join(unknown)} (known: {', '.join(sorted(names))})")
            return cls(**{k: v for k, v in value.items() if v is not None})
        raise TypeError(f"services must be ArmServices, a mapping or None, not {type(value).__name__}")

    def with_(self, **changes: Any) -> ArmServices:
        """A copy with these fields replaced (``with_(query_vector=v)``)."""
        return replace(self, **changes)

    # The old dict's reads, for callers not moved yet.
    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in _NAMES else None
        return default if value is None or value is False else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


_NAMES = frozenset(f.name for f in fields(ArmServices))
