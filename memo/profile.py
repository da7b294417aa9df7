"""Search profiles: every constant of the search pipeline, loaded from TOML into one frozen
``Profile`` (seed: "Tuning these constants: Profiles and constants").

* ``profiles/base.toml`` holds every key at the seed's value with every extra off.  Every
  other profile is an overlay: ``extends = "<name or path>"`` (``base`` when absent) and only
  the keys it changes.  A file that lacks keys (an older user profile) is completed by its
  parent, so it still loads; keys of older files under another name (``[vectors]``,
  ``retrieve.keyword_index``) are read as their new names (``memo.profile_keys.RENAMED``).
* ``memo.profile_keys.KEYS`` is the one table of keys (type, range, doc line, group, extra):
  it drives the section classes (``profile.fusion.k``), validation and docs/profiles.md.
* ``load_profile("rrf")`` (no argument: the default profile) reads ``rrf.toml`` from the
  user's profile folder (``user_profile_dir()``: ``$MEMO_PROFILES_DIR``, else
  ``<user config dir>/memo/profiles``) if it is there, else from the profiles shipped inside
  the package (``memo/profiles``, the folder beside this module).  A path is read as
  is.  Cached by (path, mtime) of every file of the chain.
* Unknown keys and bad values raise ``ProfileError`` naming the file that holds them (a
  parent: with the files whose ``extends`` reached it) and the dotted key.
* ``profile.with_overrides({"fusion.k": 20})`` returns a new, validated profile;
  ``profile.flat()`` returns ``{dotted key: scalar}``; ``profile.without_extra("context")``
  switches one extra off (its keys at base's values).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import platformdirs

from memo import profile_keys
from memo.errors import ProfileError
from memo.profile_keys import BAND_KEYS, FUSION_METHODS, KEYWORD_INDEXES, WEIGHT_RANGE, Key
from memo.types import ARM_NAMES, KINDS, PROFILE_ENV, default_profile

__all__ = ["FUSION_METHODS", "KEYWORD_INDEXES", "LIST_KEYS", "BASE", "ModelBands", "Profile", "diff_profiles",
           "load_profile", "profile_dirs", "profile_names", "resolve_profile_path", "shipped_profile_dir",
           "user_profile_dir"]

BASE = "base"                     # the profile every chain ends in
LIST_KEYS = profile_keys.LIST_KEYS
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_MAX_CHAIN = 8


@dataclass(frozen=True, slots=True)
class ModelBands:
    """Cosine thresholds of one embedding model (relevance bands + abstention floor)."""

    semantic_floor: float
    weak: float
    moderate: float
    strong: float

    def band(self, cosine: float | None) -> str | None:
        if cosine is None:
            return None
        if cosine >= self.strong:
            return "strong"
        if cosine >= self.moderate:
            return "moderate"
        if cosine >= self.weak:
            return "weak"
        return "below"


class _Section:
    """One profile section's values (``profile.fusion.k``): immutable, slotted, equal when
    the values are.  Each section's class is made from the key table
    (``_section_types``) by ``type()``: ``make_dataclass(frozen=True, slots=True)`` made
    the same thing for 16 sections in ~7 ms of code generation at a process's first profile
    load, a twentieth of a cold ``memo search`` (issue 31.2)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init__(self, **values: Any) -> None:
        missing = [f for f in self._fields if f not in values]
        extra = sorted(set(values) - set(self._fields))
        if missing or extra:
            raise TypeError(f"{type(self).__name__}: missing {missing}, unknown {extra}")
        for f in self._fields:
            object.__setattr__(self, f, values[f])

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __getstate__(self) -> tuple[Any, ...]:      # copy, deepcopy
        return self._values()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for f, v in zip(self._fields, state, strict=True):
            object.__setattr__(self, f, v)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._fields)})"


@lru_cache(maxsize=8)
def _section_types(keys: tuple[Key, ...]) -> dict[str, type]:
    """One section class per section, its fields in table order."""
    fields: dict[str, list[str]] = {}
    for k in keys:
        fields.setdefault(k.section, []).append(k.field)
    return {s: type(f"{s.title()}Cfg", (_Section,), {"__slots__": tuple(f), "_fields": tuple(f)})
            for s, f in fields.items()}


def _keys() -> tuple[Key, ...]:
    return profile_keys.KEYS     # read at call time: a test may extend the table


class Profile:
    """A validated profile: ``name``, ``source``, ``extends`` (the chain, nearest first),
    ``weights`` (arm -> weight), ``models`` (model id -> ``ModelBands``) and one attribute per
    section of ``memo.profile_keys.KEYS`` (``profile.fusion.k``).  Immutable."""

    def __init__(self, *, name: str, source: str, extends: tuple[str, ...], values: Mapping[str, Any],
                 weights: Mapping[str, float], models: Mapping[str, ModelBands]) -> None:
        keys = _keys()
        types = _section_types(keys)
        per: dict[str, dict[str, Any]] = {}
        for k in keys:
            per.setdefault(k.section, {})[k.field] = values[k.name]
        d = self.__dict__
        d.update(name=name, source=source, extends=extends, weights=MappingProxyType(dict(weights)),
                 models=MappingProxyType(dict(models)), _values=MappingProxyType(dict(values)))
        for section, vals in per.items():
            d[section] = types[section](**vals)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Profile is immutable: use with_overrides")

    def __repr__(self) -> str:
        return f"Profile({self.name!r}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Profile) and self.flat() == other.flat()

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, str(v)) for k, v in self.flat().items())))

    def value(self, dotted: str) -> Any:
        """One key's value (``"fusion.k"``)."""
        return self._values[dotted]

    def flat(self) -> dict[str, Any]:
        """Dotted key -> scalar (lists become comma-joined strings)."""
        out: dict[str, Any] = {"name": self.name}
        for k in _keys():
            v = self._values[k.name]
            out[k.name] = ",".join(v) if isinstance(v, tuple) else v
        for arm in ARM_NAMES:
            out[f"weights.{arm}"] = self.weights[arm]
        for model_id in sorted(self.models):
            for band in BAND_KEYS:
                out[f"models.{model_id}.{band}"] = getattr(self.models[model_id], band)
        return out

    def with_overrides(self, overrides: Mapping[str, Any], *, name: str | None = None) -> Profile:
        """A new profile with dotted keys replaced (validated like a file)."""
        doc = _to_nested(self)
        for dotted, value in overrides.items():
            dotted = profile_keys.RENAMED.get(str(dotted), str(dotted))
            parts = _split_key(dotted)
            if parts is None or (parts[0] not in ("weights", "models") and dotted not in _by_name()):
                raise ProfileError(f"override {dotted!r}: unknown key")
            if parts[0] == "weights" and parts[1] not in ARM_NAMES:
                raise ProfileError(f"override {dotted!r}: unknown key (arms: {', '.join(ARM_NAMES)})")
            node = doc
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            if dotted in LIST_KEYS and isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            node[parts[-1]] = value
        return _build(doc, name=name or self.name, source=f"{self.source} + overrides", extends=self.extends)

    def extras_on(self) -> tuple[str, ...]:
        """The extras (``memo.profile_keys.EXTRAS``) whose keys differ from base's (off) values."""
        base = load_profile(BASE)
        return tuple(e for e in profile_keys.EXTRAS
                     if any(self._values[k] != base._values[k] for k in profile_keys.extra_keys(e)))

    def without_extra(self, extra: str) -> Profile:
        """This profile with one extra switched off: its keys at base's values."""
        base = load_profile(BASE)
        try:
            keys = profile_keys.extra_keys(extra)
        except KeyError:
            raise ProfileError(f"unknown extra {extra!r} (extras: {', '.join(profile_keys.EXTRAS)})") from None
        overrides = {k: base._values[k] for k in keys}
        return self.with_overrides({k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
                                   name=f"{self.name}-no-{extra}")

    def overlay(self, parent: Profile) -> dict[str, Any]:
        """Dotted key -> value for every key where this profile differs from ``parent``."""
        mine, theirs = self.flat(), parent.flat()
        return {k: v for k, v in mine.items() if k != "name" and theirs.get(k) != v}


_by_name_cache: tuple[tuple[Key, ...], dict[str, Key]] | None = None


def _by_name() -> dict[str, Key]:
    """Name -> key of the table, built again only when the table is another object (a test
    may extend it).  Not an lru_cache: that hashed all the table's keys at every call,
    ~100 calls per profile load."""
    global _by_name_cache
    keys = _keys()
    if _by_name_cache is None or _by_name_cache[0] is not keys:
        _by_name_cache = (keys, {k.name: k for k in keys})
    return _by_name_cache[1]


def _split_key(dotted: str) -> list[str] | None:
    if dotted.startswith("models."):
        rest = dotted[len("models."):]
        if "." not in rest:
            return None
        model_id, band = rest.rsplit(".", 1)
        return ["models", model_id, band]
    parts = dotted.split(".")
    return parts if len(parts) == 2 else None


def _to_nested(p: Profile) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for k in _keys():
        value = p.value(k.name)
        doc.setdefault(k.section, {})[k.field] = list(value) if isinstance(value, tuple) else value
    doc["weights"] = dict(p.weights)
    doc["models"] = {m: {b: getattr(bands, b) for b in BAND_KEYS} for m, bands in p.models.items()}
    return doc


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
def _number(where: str, key: str, value: Any, lo: float, hi: float, *, integer: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProfileError(f"{where}: key '{key}' must be a number, got {value!r}")
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        raise ProfileError(f"{where}: key '{key}' must be an integer, got {value!r}")
    if not math.isfinite(float(value)) or not (lo <= value <= hi):
        raise ProfileError(f"{where}: key '{key}' must be in [{lo}, {hi}], got {value!r}")
    return int(value) if integer else float(value)


def _check(where: str, k: Key, value: Any) -> Any:
    name, kind = k.name, k.kind
    if kind == "int":
        return _number(where, name, value, k.lo, k.hi, integer=True)  # type: ignore[arg-type]
    if kind == "float":
        return _number(where, name, value, k.lo, k.hi, integer=False)  # type: ignore[arg-type]
    if kind == "float_pos":
        v = _number(where, name, value, 0.0, k.hi, integer=False)  # type: ignore[arg-type]
        if v <= 0:
            raise ProfileError(f"{where}: key '{name}' must be > 0, got {value!r}")
        return v
    if kind == "gap":
        v = _number(where, name, value, 0.0, 1.0, integer=False)
        if v <= 0:
            raise ProfileError(f"{where}: key '{name}' must be in (0, 1] (1.0 = never cut), got {value!r}")
        return v
    if kind == "float_open":
        v = _number(where, name, value, 0.0, 1.0, integer=False)
        if not 0.0 < v < 1.0:
            raise ProfileError(f"{where}: key '{name}' must be in (0, 1) (exclusive), got {value!r}")
        return v
    if kind == "choice":
        if value not in k.choices:
            raise ProfileError(f"{where}: key '{name}' must be one of {', '.join(k.choices)}, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProfileError(f"{where}: key '{name}' must be true or false, got {value!r}")
        return value
    if kind == "words":
        if not isinstance(value, list | tuple) or any(not isinstance(w, str) or not w.strip() for w in value):
            raise ProfileError(f"{where}: key '{name}' must be a list of non-empty strings, got {value!r}")
        return tuple(dict.fromkeys(" ".join(w.casefold().split()) for w in value))
    if kind == "kinds":
        if not isinstance(value, list | tuple) or any(x not in KINDS for x in value):
            raise ProfileError(f"{where}: key '{name}' must be a list of kinds from {', '.join(KINDS)}, "
                               f"got {value!r}")
        return tuple(dict.fromkeys(value))
    raise AssertionError(kind)  # pragma: no cover - the key table is closed


def _normalise(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A file's tables with older key names renamed and retired keys dropped (refused when
    they hold a value other than the one that switched them off)."""
    out: dict[str, Any] = {}
    for section, table in doc.items():
        if section in ("extends",):
            continue
        if not isinstance(table, Mapping):
            raise ProfileError(f"{where}: key '{section}' must be a table")
        if section in ("weights", "models"):
            out[section] = dict(table)
            continue
        for field, value in table.items():
            dotted = f"{section}.{field}"
            if dotted in profile_keys.RETIRED:
                neutral = profile_keys.RETIRED[dotted]
                if neutral is not None and value != neutral:
                    raise ProfileError(f"{where}: key '{dotted}' was removed (it never left {neutral!r}); "
                                       "delete it from the file")
                continue
            dotted = profile_keys.RENAMED.get(dotted, dotted)
            if dotted not in _by_name():
                raise ProfileError(f"{where}: unknown key '{dotted}'")
            s, f = dotted.split(".", 1)
            out.setdefault(s, {})[f] = value
    return out


def _merge(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """The parent's nested doc with the child's keys over it (models merge per model id)."""
    out = {s: (dict(t) if isinstance(t, Mapping) else t) for s, t in parent.items()}
    for section, table in child.items():
        if section == "models":
            models = {m: dict(b) for m, b in out.get("models", {}).items()}
            for model_id, bands in table.items():
                if not isinstance(bands, Mapping):
                    raise ProfileError(f"key 'models.{model_id}' must be a table")
                models[model_id] = {**models.get(model_id, {}), **bands}
            out["models"] = models
        else:
            out[section] = {**out.get(section, {}), **table}
    return out


def _build(doc: Mapping[str, Any], *, name: str, source: str, extends: tuple[str, ...] = ()) -> Profile:
    where = source
    if not isinstance(doc, Mapping):
        raise ProfileError(f"{where}: not a TOML table")
    keys = _keys()
    sections = {k.section for k in keys} | {"weights", "models"}
    for section in doc:
        if section not in sections:
            raise ProfileError(f"{where}: unknown key '{section}'")
    values: dict[str, Any] = {}
    for k in keys:
        table = doc.get(k.section)
        if not isinstance(table, Mapping) or k.field not in table:
            raise ProfileError(f"{where}: missing key '{k.name}' (the base profile defines every key)")
        values[k.name] = _check(where, k, table[k.field])
    for section in sections - {"weights", "models"}:
        for present in doc.get(section, {}):
            if f"{section}.{present}" not in _by_name():
                raise ProfileError(f"{where}: unknown key '{section}.{present}'")
    weights_doc = doc.get("weights")
    if not isinstance(weights_doc, Mapping):
        raise ProfileError(f"{where}: missing table '[weights]'")
    for arm in weights_doc:
        if arm not in ARM_NAMES:
            raise ProfileError(f"{where}: unknown key 'weights.{arm}' (arms: {', '.join(ARM_NAMES)})")
    weights = {}
    for arm in ARM_NAMES:
        if arm not in weights_doc:
            raise ProfileError(f"{where}: missing key 'weights.{arm}'")
        weights[arm] = _number(where, f"weights.{arm}", weights_doc[arm], *WEIGHT_RANGE, integer=False)
    models_doc = doc.get("models", {})
    if not isinstance(models_doc, Mapping):
        raise ProfileError(f"{where}: key 'models' must be a table of [models.\"<model id>\"]")
    models = {}
    for model_id, bands_doc in models_doc.items():
        if not isinstance(bands_doc, Mapping):
            raise ProfileError(f"{where}: key 'models.{model_id}' must be a table")
        for present in bands_doc:
            if present not in BAND_KEYS:
                raise ProfileError(f"{where}: unknown key 'models.{model_id}.{present}'")
        vals = {}
        for band in BAND_KEYS:
            if band not in bands_doc:
                raise ProfileError(f"{where}: missing key 'models.{model_id}.{band}'")
            vals[band] = _number(where, f"models.{model_id}.{band}", bands_doc[band], -1.0, 1.0, integer=False)
        if not (vals["weak"] <= vals["moderate"] <= vals["strong"]):
            raise ProfileError(f"{where}: key 'models.{model_id}': bands must satisfy weak <= moderate <= strong")
        models[model_id] = ModelBands(**vals)
    if values["limit.default"] > values["limit.max"]:
        raise ProfileError(f"{where}: key 'limit.default' ({values['limit.default']}) exceeds 'limit.max'")
    return Profile(name=name, source=source, extends=extends, values=values, weights=weights, models=models)


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------
def user_profile_dir() -> Path:
    """The user's profile folder: ``$MEMO_PROFILES_DIR`` if set, else
    ``<user config dir>/memo/profiles`` (``~/.config/memo/profiles`` on Linux)."""
    env = os.environ.get("MEMO_PROFILES_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir("memo")) / "profiles"


def shipped_profile_dir() -> Path:
    """The profiles inside the installed package (``memo/profiles/*.toml``): a folder beside
    this module (memo is installed as files; ``importlib.resources`` cost a cold search ~4 ms
    of imports to say the same)."""
    return Path(__file__).with_name("profiles")


def profile_dirs() -> tuple[Path, ...]:
    """Where a profile name is looked up, first match wins: the user's folder, then the
    shipped profiles."""
    return (user_profile_dir(), shipped_profile_dir())


def profile_names() -> list[str]:
    names: set[str] = set()
    for d in profile_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.toml"))
    return sorted(names)


def _is_file(path: Path, what: str) -> bool:
    """``path.is_file()``, with the errors it lets through (a name longer than the file
    system allows, a path through a file...) as a ProfileError naming the problem: a
    300-character name was a bare "File name too long" (issue 33.5)."""
    try:
        return path.is_file()
    except OSError as exc:
        raise ProfileError(f"{what} cannot be used: {exc.strerror or exc}",
                           hint="give a profile name (letters, digits, _ . -) or the path of a .toml file") from None


def resolve_profile_path(name_or_path: str | Path, *, relative_to: Path | None = None) -> Path:
    text = str(name_or_path)
    if len(text) > 1024:
        raise ProfileError(f"profile name or path is {len(text)} characters long; give a name or a file path")
    if text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(text).expanduser()
        if relative_to is not None and not path.is_absolute():
            path = relative_to / path
        if not _is_file(path, f"profile file {path}"):
            raise ProfileError(f"profile file {path} does not exist")
        return path
    if not _NAME.fullmatch(text):
        raise ProfileError(f"profile name {text!r} is not valid (letters, digits, _ . -)")
    for d in profile_dirs():
        path = d / f"{text}.toml"
        if _is_file(path, f"profile name {text[:40]!r}{'…' if len(text) > 40 else ''}"):
            return path
    # A name no command gave came from $MEMO_PROFILE (memo.types.default_profile): say so, or a
    # typo there reads as a missing profile the user never asked for.
    env = os.environ.get(PROFILE_ENV)
    origin = f" (from ${PROFILE_ENV})" if env and env == text else ""
    raise ProfileError(f"no profile named {text!r}{origin} (known: {', '.join(profile_names()) or 'none'})",
                       hint=(f"fix or unset ${PROFILE_ENV}" if origin else
                             f"put NAME.toml in {user_profile_dir()} or pass a path (docs/profiles.md)"))


_CACHE: dict[tuple, Profile] = {}


_PARSED: dict[tuple[str, int], dict[str, Any]] = {}


def _read(path: Path) -> dict[str, Any]:
    """A profile file's TOML, parsed once per (path, mtime): every search loads its profile."""
    try:
        key = (str(path), path.stat().st_mtime_ns)
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    doc = _PARSED.get(key)
    if doc is None:
        if len(_PARSED) > 256:
            _PARSED.clear()
        doc = _PARSED[key] = _parse(path)
    return doc


def _parse(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from exc


def _chain(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """[(path, doc)] from this file to the root (base), nearest first."""
    out: list[tuple[Path, dict[str, Any]]] = []
    seen: set[Path] = set()
    while True:
        if path in seen:
            raise ProfileError(f"{path}: 'extends' makes a cycle ({' -> '.join(p.stem for p, _ in out)})")
        if len(out) >= _MAX_CHAIN:
            raise ProfileError(f"{path}: 'extends' chain longer than {_MAX_CHAIN}")
        seen.add(path)
        doc = _read(path)
        out.append((path, doc))
        parent = doc.get("extends")
        if parent is None:
            if path.stem == BASE:
                return out
            parent = BASE
        if not isinstance(parent, str) or not parent:
            raise ProfileError(f"{path}: key 'extends' must be a profile name or path, got {parent!r}")
        path = resolve_profile_path(parent, relative_to=path.parent).resolve()


def load_profile(name_or_path: str | Path | Profile | None = None) -> Profile:
    """Load a profile by name (``<name>.toml`` in ``profile_dirs()``) or path; a Profile
    passes through; None = the default profile (``memo.types.default_profile``)."""
    if isinstance(name_or_path, Profile):
        return name_or_path
    if name_or_path is None:
        name_or_path = default_profile()
    path = resolve_profile_path(name_or_path).resolve()
    chain = _chain(path)
    key = (tuple((str(p), id(d)) for p, d in chain), id(_keys()))   # a parsed doc is per (path, mtime)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    # From the root (base) down: levels[j] = (the j-th file, its name in errors, base .. it merged)
    levels: list[tuple[Path, str, dict[str, Any]]] = []
    for i in reversed(range(len(chain))):
        p, where = chain[i][0], _where(chain, i)
        levels.append((p, where, _merge(levels[-1][2] if levels else {}, _normalise(chain[i][1], where))))
    try:
        profile = _build(levels[-1][2], name=path.stem, source=str(path),
                         extends=tuple(p.stem for p, _ in chain[1:]))
    except ProfileError:
        # Name the file that made the profile invalid (the first, from base, whose keys over
        # its parents' give an invalid profile), not the file asked for: a bad key in the file
        # a child extends was reported in the child.
        for p, where, doc in levels[:-1]:
            _build(doc, name=p.stem, source=where)
        raise
    _CACHE[key] = profile
    return profile


def _where(chain: list[tuple[Path, dict[str, Any]]], i: int) -> str:
    """How errors name the i-th file of a chain (nearest first): its path, and for a parent the
    files whose ``extends`` led to it."""
    path = str(chain[i][0])
    if i == 0:
        return path
    return f"{path} (reached through 'extends' of {' -> '.join(p.name for p, _ in chain[:i])})"


def diff_profiles(a: Profile, b: Profile) -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (value in a, value in b) for every key that differs (None = absent)."""
    fa, fb = a.flat(), b.flat()
    return {k: (fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)}
