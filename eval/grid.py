"""Run specifications: profiles x a cartesian grid of constant overrides.

``--set fusion.k=20,60,100 --set weights.semantic=0.3,0.5,0.7`` gives 9 points; with two
``--profile`` s, 18 runs.  Values are parsed as int, float, bool or string, in that order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memo.errors import ValidationError
from memo.profile import load_profile


@dataclass(frozen=True, slots=True)
class RunSpec:
    profile: str                                  # name (profiles/<name>.toml) or path
    overrides: tuple[tuple[str, Any], ...] = ()   # dotted key -> value, in --set order
    mode: str = "auto"

    @property
    def label(self) -> str:
        if not self.overrides:
            return self.profile if self.mode == "auto" else f"{self.profile}[{self.mode}]"
        sets = ",".join(f"{k}={v}" for k, v in self.overrides)
        return f"{self.profile}[{self.mode}]({sets})" if self.mode != "auto" else f"{self.profile}({sets})"

    @property
    def key(self) -> str:
        doc = json.dumps([self.profile, list(self.overrides), self.mode], default=str)
        return hashlib.sha256(doc.encode()).hexdigest()[:6]

    def load(self):
        """The validated Profile (raises ProfileError naming the bad key)."""
        base = load_profile(self.profile)
        return base.with_overrides(dict(self.overrides)) if self.overrides else base


def parse_value(text: str) -> Any:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t


def parse_set(option: str) -> tuple[str, list[Any]]:
    """``"fusion.k=20,60,100"`` -> ``("fusion.k", [20, 60, 100])``."""
    key, sep, values = option.partition("=")
    key = key.strip()
    if not sep or not key or not values.strip():
        raise ValidationError(f"--set {option!r}: expected KEY=V1[,V2...]", hint="e.g. --set fusion.k=20,60,100")
    # aging_kinds is itself a comma list: take it whole.
    vals = [values.strip()] if key == "recency.aging_kinds" else [parse_value(v) for v in values.split(",") if v.strip()]
    return key, vals


def expand(profiles: Sequence[str], sets: Sequence[str], mode: str = "auto") -> list[RunSpec]:
    """Cartesian product; every spec is validated now so a typo fails before any work."""
    axes = [parse_set(s) for s in sets]
    keys = [k for k, _ in axes]
    if len(set(keys)) != len(keys):
        raise ValidationError("the same key is given twice with --set")
    specs = []
    for prof in profiles or ["rrf"]:
        for combo in itertools.product(*[vals for _, vals in axes]) if axes else [()]:
            spec = RunSpec(profile=prof, overrides=tuple(zip(keys, combo, strict=True)), mode=mode)
            spec.load()
            specs.append(spec)
    return specs
