"""Run specifications: profiles x a cartesian grid of constant overrides.

``--set fusion.k=20,60,100 --set weights.semantic=0.3,0.5,0.7`` gives 9 points; with two
``--profile`` s, 18 runs.  Values are parsed as int, float, bool or string, in that order;
an integer key takes integer literals only (``fusion.k=1e2`` is refused, not read as 100).
An empty value (``0.5,,0.7``) is refused, not dropped; an unknown key is refused with the
nearest known ones (``fusion.kk``: did you mean fusion.k?).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memo import profile_keys
from memo.errors import ProfileError, ValidationError
from memo.profile import LIST_KEYS, load_profile
from memo.types import ARM_NAMES, default_profile


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
    _check_key(option, key)
    # List keys (aging_kinds, relational_cues, context.kinds) are themselves comma lists: take them whole.
    if key in LIST_KEYS:
        vals = [values.strip()]
    else:
        parts = values.split(",")
        empty = [i for i, v in enumerate(parts, 1) if not v.strip()]
        if empty:
            kept = ",".join(v.strip() for v in parts if v.strip())
            raise ValidationError(f"--set {option!r}: value {empty[0]} of {len(parts)} is empty",
                                  hint=f"drop the extra comma: --set {key}={kept}")
        vals = [parse_value(v) for v in parts]
    # The profile schema takes 100.0 for an integer key (a TOML file may say so); on the
    # command line a float literal for one (1e2, 2.0) is a slip, refused like 1.5 is.
    kind = _KINDS.get(profile_keys.RENAMED.get(key, key))
    for v in vals:
        if kind == "int" and isinstance(v, float):
            raise ValidationError(f"--set {option!r}: {key} takes integers, got {v!r}",
                                  hint="write integers without a point or exponent: 100, not 1e2 or 100.0")
    return key, vals


_KINDS = {k.name: k.kind for k in profile_keys.KEYS}


def _check_key(option: str, key: str) -> None:
    """A ProfileError for a key no profile has, with the nearest known keys (``fusion.kk``:
    did you mean fusion.k?), before any profile is loaded.  ``models.<id>.<band>`` keys are
    left to the profile's own check (any model id may be given a band)."""
    known = [*(k.name for k in profile_keys.KEYS), *profile_keys.RENAMED, *(f"weights.{a}" for a in ARM_NAMES)]
    if key in known or key.startswith("models."):
        return
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.8)
    if close:
        hint = f"did you mean {' or '.join(close)}? docs/profiles.md lists every key"
    elif key.startswith("weights."):
        hint = f"weights.<arm> takes an arm: {', '.join(ARM_NAMES)}"
    else:
        hint = ProfileError.hint
    raise ProfileError(f"--set {option!r}: unknown key {key}", hint=hint)


# Modes that run no semantic arm (so no model band or semantic weight can matter).
_NO_SEMANTIC = ("keyword", "exact")


def no_effect(key: str, profile: Any, mode: str) -> str | None:
    """Why constant ``key`` cannot change what ``profile`` returns in ``mode`` (None: it may).

    * ``fusion.k`` under ``minmax``: min-max fusion has no k (k only orders exactly equal
      min-max scores, through the rrf tiebreak; the runs came out identical);
    * ``weights.semantic`` and ``models.*`` bands when the mode runs no semantic arm;
    * ``weights.<arm>`` in mode keyword / exact / semantic for another arm (one arm runs)."""
    method = profile.fusion.method
    fact = getattr(profile, "fact", None)
    k_used = method == "rrf" or getattr(fact, "merge", None) == "rrf"     # the fact arm's rrf merge reads k too
    if key == "fusion.k" and not k_used:
        return f"fusion.k has no effect under fusion.method = {method}"
    if mode in _NO_SEMANTIC and (key == "weights.semantic" or key.startswith("models.")):
        return f"{key} has no effect in mode {mode} (no semantic arm)"
    if mode in ("keyword", "exact", "semantic") and key.startswith("weights.") and key != f"weights.{mode}":
        return f"{key} has no effect in mode {mode} (only the {mode} arm runs)"
    return None


def _check_value(base: Any, prof: str, key: str, value: Any) -> None:
    """``key=value`` over profile ``base`` (named ``prof``): ProfileError naming both."""
    try:
        base.with_overrides({key: value})
    except ProfileError as exc:
        raise ProfileError(f"--set {key}={value} with profile {prof}: {exc}") from None


def expand(profiles: Sequence[str], sets: Sequence[str], mode: str = "auto",
           notes: list[str] | None = None) -> list[RunSpec]:
    """Cartesian product; every spec is validated now so a typo fails before any work.

    An axis with no effect on a profile (``no_effect``) is dropped for that profile (its
    own value is used) and ``notes`` gets one line saying so: ``--set fusion.k=20,60,100``
    with ``-p minmax`` runs minmax once, not three identical times.  Its values are still
    validated, each against that profile: a value refused alone is refused in a grid too."""
    axes = [parse_set(s) for s in sets]
    keys = [k for k, _ in axes]
    if len(set(keys)) != len(keys):
        raise ValidationError("the same key is given twice with --set")
    specs = []
    for prof in profiles or [default_profile()]:
        base = load_profile(prof)
        live = []
        for k, vals in axes:
            why = None if k == "fusion.k" and "fusion.method" in keys else no_effect(k, base, mode)
            if why is not None and len(vals) > 1:
                for v in vals:
                    _check_value(base, prof, k, v)
                if notes is not None:
                    notes.append(f"{prof}: {why}; skipped --set {k}={','.join(map(str, vals))}")
                continue
            live.append((k, vals))
        lkeys = [k for k, _ in live]
        for combo in itertools.product(*[vals for _, vals in live]) if live else [()]:
            spec = RunSpec(profile=prof, overrides=tuple(zip(lkeys, combo, strict=True)), mode=mode)
            spec.load()
            specs.append(spec)
    return list(dict.fromkeys(specs))
