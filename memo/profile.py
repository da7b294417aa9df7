"""Search profiles: every constant of the search pipeline, loaded from a TOML file into one
frozen ``Profile`` (seed: "Tuning these constants: Profiles and constants").

A profile is data, not flags: fusion method, k, arm weights, recency, relevance bands per
embedding model, cutoff, limit and token budget.  ``docs/profiles.md`` lists every key.

* ``load_profile("rrf")`` (no argument: the default profile) reads ``rrf.toml`` from the user's profile folder
  (``user_profile_dir()``: ``$MEMO_PROFILES_DIR``, else ``<user config dir>/memo/profiles``,
  ``~/.config/memo/profiles`` on Linux) if it is there, else from the profiles shipped
  inside the package (``memo/profiles``, read through ``importlib.resources``; in a checkout
  that is a link to the top-level ``profiles/`` folder, the one copy of each file).  A path
  (``./my.toml``) is read as is.  Loaded profiles are cached by (path, mtime): the eval
  harness calls this per run.
* Unknown keys, missing keys and bad values raise ``ProfileError`` naming the file and
  the dotted key.
* ``profile.with_overrides({"fusion.k": 20})`` returns a new, validated profile;
  ``profile.flat()`` returns ``{dotted key: scalar}`` (Parquet run tables, ``profiles diff``).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import Any

import platformdirs

from memo.errors import ProfileError
from memo.types import ARM_NAMES, KINDS, default_profile

FUSION_METHODS = ("rrf", "minmax", "zscore")
KEYWORD_INDEXES = ("impact", "fts5")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


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


@dataclass(frozen=True, slots=True)
class RetrieveCfg:
    fetch_depth: int
    keyword_index: str                    # "impact": the derived impact index may serve the keyword arm; "fts5": never
    impact_min_passages: int              # ... when the database holds at least this many passages
    keyword_section_weight: float         # keyword arm: bm25 weight of passages_fts's section column (text: 1.0)


@dataclass(frozen=True, slots=True)
class FusionCfg:
    method: str
    k: int


@dataclass(frozen=True, slots=True)
class RecencyCfg:
    floor: float
    half_life_days: float
    aging_kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CutoffCfg:
    min_results: int
    gap: float


@dataclass(frozen=True, slots=True)
class LimitCfg:
    default: int
    max: int


@dataclass(frozen=True, slots=True)
class BudgetCfg:
    max_tokens: int


@dataclass(frozen=True, slots=True)
class EntitiesCfg:
    """Query entities and the routing of the entity and graph arms (docs/architecture.md section 2)."""

    max_words: int                        # longest alias matched in the query, in words
    common_share: float                   # an entity in more than this share of the in-scope passages is common
    common_min_passages: int              # ... when at least this many passages are in scope
    relational_cues: tuple[str, ...]      # words / phrases that make a 1-entity query relational
    name_share: float                     # a one-word name counts if >= this share of the passages holding the word name it
    identifier_share: float               # an identifier counts for routing if in at most this share of the passages
    min_shared: int                       # entity arm: passages naming at least min(this, counted entities) of them
    min_query_share: float                # route only when counted entities cover at least this share of the query's words
    strip_common: bool                    # the semantic arm embeds the query without the common entities it names


@dataclass(frozen=True, slots=True)
class GraphCfg:
    """Personalised PageRank over the mention graph (docs/architecture.md section 5)."""

    damping: float                        # probability a walk goes on (1 - damping: back to its seed)
    iterations: int                       # at most this many power iterations
    tolerance: float                      # stop when the L1 change of every walk is below this
    report_floor: float                   # report a passage only if its mass >= this x the largest passage mass
    epsilon: float                        # local push tolerance (0: exact power iteration)


@dataclass(frozen=True, slots=True)
class AbstentionCfg:
    """Weak-query abstention (memo.retrieve.abstention rule 2; docs/architecture.md section 5)."""

    keyword_floor: float                  # a keyword match covering less than this idf share of the query is
                                          # weak evidence (memo.retrieve.evidence); 0 = off
    joint_floor: float                    # weak coverage and weak similarity that add up to this (each as a
                                          # share of its floor) answer the query (memo.retrieve.abstention); 0 = off


@dataclass(frozen=True, slots=True)
class FactCfg:
    """How the fact arm ranks passages from matched facts (docs/architecture.md section 5)."""

    merge: str                            # "minmax": Σ of min-max normalised list scores | "rrf": Σ 1/(k + rank)
    vote: str                             # "best": a passage's raw = its best voting fact | "sum": decayed sum
    decay: float                          # vote "sum": the i-th best vote (0-based) counts decay ** i
    spread: float                         # a fact also votes for the turns next to its evidence, times this (0: off)
    meaning_weight: float                 # weight of the meaning fact list against the keyword list's 1.0
    top: int                              # only the best this many facts of the merged ranking vote (0: all)


@dataclass(frozen=True, slots=True)
class VectorCfg:
    """How the semantic index scans and stores vectors (memo/embed/index.py; docs/architecture.md
    "Vectors at scale")."""

    quantised_min: int                    # at least this many vectors of a model: int8 scan + float32 rescoring
    shortlist: float                      # the int8 scan keeps shortlist x fetch_depth rows for rescoring
    sidecar_min: int                      # at least this many vectors: memory-mapped sidecar file (0: never)
    sidecar_tail: float                   # rewrite the sidecar when rows read since exceed this share of it
    ann_min: int                          # PostgreSQL: in-scope vectors from which the server's HNSW index answers
    ann_overfetch: float                  # PostgreSQL: HNSW candidates = ann_overfetch x fetch_depth, then the scope


@dataclass(frozen=True, slots=True)
class SpeakerCfg:
    """Passages said by someone the query names (memo.retrieve.speaker; docs/architecture.md section 5)."""

    boost: float                          # their score x (1 + boost); 0 = off


@dataclass(frozen=True, slots=True)
class DatesCfg:
    """Passages dated in a period the query names (memo.retrieve.dated; docs/architecture.md section 4)."""

    boost: float                          # their score x (1 + boost); 0 = off
    window_days: int                      # a named day is widened by this many days on both sides


@dataclass(frozen=True, slots=True)
class HeadingCfg:
    """Passages whose heading names an identifier the query names (memo.retrieve.heading)."""

    boost: float                          # their score x (1 + boost); 0 = off
    min_share: float                      # only when code-shaped words are at least this share of the query's words


@dataclass(frozen=True, slots=True)
class ContextCfg:
    """Passages whose record's other passages rank near the top (memo.retrieve.context)."""

    boost: float                          # score x (1 + boost x record mass / largest record mass); 0 = off
    top: int                              # the context: the best this many candidates
    kinds: tuple[str, ...]                # kinds whose passages are lifted


FACT_MERGES = ("minmax", "rrf")
FACT_VOTES = ("best", "sum")


# ---------------------------------------------------------------------------------------
# Key specification: (section, key) -> (kind, lo, hi).  One table drives validation,
# docs/profiles.md and the unknown-key check.
# ---------------------------------------------------------------------------------------
_SCALARS: dict[str, tuple[str, float | None, float | None]] = {
    "retrieve.fetch_depth": ("int", 1, 1000),
    "retrieve.keyword_index": ("keyword_index", None, None),
    "retrieve.impact_min_passages": ("int", 0, 1_000_000_000),
    "retrieve.keyword_section_weight": ("float_pos", 0.0, 100.0),
    "fusion.method": ("method", None, None),
    "fusion.k": ("int", 1, 10_000),
    "recency.floor": ("float", 0.0, 1.0),
    "recency.half_life_days": ("float_pos", 0.0, 1e6),
    "recency.aging_kinds": ("kinds", None, None),
    "cutoff.min_results": ("int", 0, 1000),
    "cutoff.gap": ("float_gap", 0.0, 1.0),
    "limit.default": ("int", 1, 10_000),
    "limit.max": ("int", 1, 10_000),
    "budget.max_tokens": ("int", 1, 10_000_000),
    "entities.max_words": ("int", 1, 10),
    "entities.common_share": ("float_pos", 0.0, 1.0),
    "entities.common_min_passages": ("int", 1, 1_000_000_000),
    "entities.relational_cues": ("words", None, None),
    "entities.name_share": ("float_pos", 0.0, 1.0),
    "entities.identifier_share": ("float_pos", 0.0, 1.0),
    "entities.min_shared": ("int", 1, 10),
    "entities.min_query_share": ("float", 0.0, 1.0),
    "entities.strip_common": ("bool", None, None),
    "graph.damping": ("float_open", 0.0, 1.0),
    "graph.iterations": ("int", 1, 1000),
    "graph.tolerance": ("float_pos", 0.0, 1.0),
    "graph.report_floor": ("float", 0.0, 1.0),
    "graph.epsilon": ("float", 0.0, 1.0),
    "fact.merge": ("fact_merge", None, None),
    "fact.vote": ("fact_vote", None, None),
    "fact.decay": ("float", 0.0, 1.0),
    "fact.spread": ("float", 0.0, 1.0),
    "fact.meaning_weight": ("float", 0.0, 100.0),
    "fact.top": ("int", 0, 100_000),
    "speaker.boost": ("float", 0.0, 100.0),
    "dates.boost": ("float", 0.0, 100.0),
    "dates.window_days": ("int", 0, 366),
    "heading.boost": ("float", 0.0, 100.0),
    "heading.min_share": ("float", 0.0, 1.0),
    "context.boost": ("float", 0.0, 100.0),
    "context.top": ("int", 2, 1000),
    "context.kinds": ("kinds", None, None),
    "abstention.keyword_floor": ("float", 0.0, 1.0),
    "abstention.joint_floor": ("float", 0.0, 2.0),
    "vectors.quantised_min": ("int", 1, 1_000_000_000),
    "vectors.shortlist": ("float", 1.0, 1000.0),
    "vectors.sidecar_min": ("int", 0, 1_000_000_000),
    "vectors.sidecar_tail": ("float_pos", 0.0, 100.0),
    "vectors.ann_min": ("int", 0, 1_000_000_000),
    "vectors.ann_overfetch": ("float", 1.0, 100.0),
}
# The keys whose value is a list (a comma list on the command line and in Profile.flat).
LIST_KEYS = frozenset(k for k, (kind, _, _) in _SCALARS.items() if kind in ("kinds", "words"))
_WEIGHT_RANGE = (0.0, 100.0)
_BAND_KEYS = ("semantic_floor", "weak", "moderate", "strong")


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    source: str
    retrieve: RetrieveCfg
    fusion: FusionCfg
    weights: Mapping[str, float]
    recency: RecencyCfg
    models: Mapping[str, ModelBands]
    cutoff: CutoffCfg
    limit: LimitCfg
    budget: BudgetCfg
    entities: EntitiesCfg
    graph: GraphCfg
    fact: FactCfg
    abstention: AbstentionCfg
    speaker: SpeakerCfg
    dates: DatesCfg
    heading: HeadingCfg
    context: ContextCfg
    vectors: VectorCfg

    def flat(self) -> dict[str, Any]:
        """Dotted key -> scalar (lists become comma-joined strings)."""
        out: dict[str, Any] = {"name": self.name}
        for key in _SCALARS:
            section, field = key.split(".")
            value = getattr(getattr(self, section), field)
            out[key] = ",".join(value) if isinstance(value, tuple) else value
        for arm in ARM_NAMES:
            out[f"weights.{arm}"] = self.weights[arm]
        for model_id in sorted(self.models):
            for band in _BAND_KEYS:
                out[f"models.{model_id}.{band}"] = getattr(self.models[model_id], band)
        return out

    def with_overrides(self, overrides: Mapping[str, Any], *, name: str | None = None) -> Profile:
        """A new profile with dotted keys replaced (validated like a file)."""
        doc = _to_nested(self)
        for dotted, value in overrides.items():
            parts = _split_key(str(dotted))
            if parts is None:
                raise ProfileError(f"override {dotted!r}: unknown key")
            node = doc
            for part in parts[:-1]:
                if part not in node:
                    if parts[0] == "models" and len(parts) == 3:
                        node[part] = {}
                    else:
                        raise ProfileError(f"override {dotted!r}: unknown key")
                node = node[part]
            if parts[-1] not in node and parts[0] != "models":
                raise ProfileError(f"override {dotted!r}: unknown key")
            if dotted in LIST_KEYS and isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            node[parts[-1]] = value
        return _build(doc, name=name or self.name, source=f"{self.source} + overrides")


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
    for key in _SCALARS:
        section, field = key.split(".")
        value = getattr(getattr(p, section), field)
        doc.setdefault(section, {})[field] = list(value) if isinstance(value, tuple) else value
    doc["weights"] = dict(p.weights)
    doc["models"] = {m: {b: getattr(bands, b) for b in _BAND_KEYS} for m, bands in p.models.items()}
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


def _scalar(where: str, key: str, value: Any) -> Any:
    kind, lo, hi = _SCALARS[key]
    if kind == "int":
        return _number(where, key, value, lo, hi, integer=True)  # type: ignore[arg-type]
    if kind == "float":
        return _number(where, key, value, lo, hi, integer=False)  # type: ignore[arg-type]
    if kind == "float_pos":
        v = _number(where, key, value, 0.0, hi, integer=False)  # type: ignore[arg-type]
        if v <= 0:
            raise ProfileError(f"{where}: key '{key}' must be > 0, got {value!r}")
        return v
    if kind == "float_gap":
        v = _number(where, key, value, 0.0, 1.0, integer=False)
        if v <= 0:
            raise ProfileError(f"{where}: key '{key}' must be in (0, 1] (1.0 = never cut), got {value!r}")
        return v
    if kind == "method":
        if value not in FUSION_METHODS:
            raise ProfileError(f"{where}: key '{key}' must be one of {', '.join(FUSION_METHODS)}, got {value!r}")
        return value
    if kind == "keyword_index":
        if value not in KEYWORD_INDEXES:
            raise ProfileError(f"{where}: key '{key}' must be one of {', '.join(KEYWORD_INDEXES)}, got {value!r}")
        return value
    if kind in ("fact_merge", "fact_vote"):
        allowed = FACT_MERGES if kind == "fact_merge" else FACT_VOTES
        if value not in allowed:
            raise ProfileError(f"{where}: key '{key}' must be one of {', '.join(allowed)}, got {value!r}")
        return value
    if kind == "float_open":
        v = _number(where, key, value, 0.0, 1.0, integer=False)
        if not 0.0 < v < 1.0:
            raise ProfileError(f"{where}: key '{key}' must be in (0, 1) (exclusive), got {value!r}")
        return v
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProfileError(f"{where}: key '{key}' must be true or false, got {value!r}")
        return value
    if kind == "words":
        if not isinstance(value, list | tuple) or any(not isinstance(w, str) or not w.strip() for w in value):
            raise ProfileError(f"{where}: key '{key}' must be a list of non-empty strings, got {value!r}")
        return tuple(dict.fromkeys(" ".join(w.casefold().split()) for w in value))
    if kind == "kinds":
        if not isinstance(value, list | tuple) or any(k not in KINDS for k in value):
            raise ProfileError(f"{where}: key '{key}' must be a list of kinds from {', '.join(KINDS)}, got {value!r}")
        return tuple(dict.fromkeys(value))
    raise AssertionError(kind)  # pragma: no cover - the spec table is closed


def _build(doc: Mapping[str, Any], *, name: str, source: str) -> Profile:
    where = source
    if not isinstance(doc, Mapping):
        raise ProfileError(f"{where}: not a TOML table")
    sections = {k.split(".")[0] for k in _SCALARS} | {"weights", "models"}
    for section in doc:
        if section not in sections:
            raise ProfileError(f"{where}: unknown key '{section}'")
    values: dict[str, Any] = {}
    for key in _SCALARS:
        section, field = key.split(".")
        table = doc.get(section)
        if not isinstance(table, Mapping):
            raise ProfileError(f"{where}: missing table '[{section}]'")
        for present in table:
            if f"{section}.{present}" not in _SCALARS:
                raise ProfileError(f"{where}: unknown key '{section}.{present}'")
        if field not in table:
            raise ProfileError(f"{where}: missing key '{key}'")
        values[key] = _scalar(where, key, table[field])
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
        weights[arm] = _number(where, f"weights.{arm}", weights_doc[arm], *_WEIGHT_RANGE, integer=False)
    models_doc = doc.get("models", {})
    if not isinstance(models_doc, Mapping):
        raise ProfileError(f"{where}: key 'models' must be a table of [models.\"<model id>\"]")
    models = {}
    for model_id, bands_doc in models_doc.items():
        if not isinstance(bands_doc, Mapping):
            raise ProfileError(f"{where}: key 'models.{model_id}' must be a table")
        for present in bands_doc:
            if present not in _BAND_KEYS:
                raise ProfileError(f"{where}: unknown key 'models.{model_id}.{present}'")
        vals = {}
        for band in _BAND_KEYS:
            if band not in bands_doc:
                raise ProfileError(f"{where}: missing key 'models.{model_id}.{band}'")
            vals[band] = _number(where, f"models.{model_id}.{band}", bands_doc[band], -1.0, 1.0, integer=False)
        if not (vals["weak"] <= vals["moderate"] <= vals["strong"]):
            raise ProfileError(f"{where}: key 'models.{model_id}': bands must satisfy weak <= moderate <= strong")
        models[model_id] = ModelBands(**vals)
    if values["limit.default"] > values["limit.max"]:
        raise ProfileError(f"{where}: key 'limit.default' ({values['limit.default']}) exceeds 'limit.max'")
    return Profile(
        name=name, source=source,
        retrieve=RetrieveCfg(values["retrieve.fetch_depth"], values["retrieve.keyword_index"],
                             values["retrieve.impact_min_passages"], values["retrieve.keyword_section_weight"]),
        fusion=FusionCfg(values["fusion.method"], values["fusion.k"]),
        weights=MappingProxyType(weights),
        recency=RecencyCfg(values["recency.floor"], values["recency.half_life_days"],
                           values["recency.aging_kinds"]),
        models=MappingProxyType(models),
        cutoff=CutoffCfg(values["cutoff.min_results"], values["cutoff.gap"]),
        limit=LimitCfg(values["limit.default"], values["limit.max"]),
        budget=BudgetCfg(values["budget.max_tokens"]),
        entities=EntitiesCfg(values["entities.max_words"], values["entities.common_share"],
                             values["entities.common_min_passages"], values["entities.relational_cues"],
                             values["entities.name_share"], values["entities.identifier_share"],
                             values["entities.min_shared"], values["entities.min_query_share"],
                             values["entities.strip_common"]),
        graph=GraphCfg(values["graph.damping"], values["graph.iterations"], values["graph.tolerance"],
                       values["graph.report_floor"], values["graph.epsilon"]),
        fact=FactCfg(values["fact.merge"], values["fact.vote"], values["fact.decay"], values["fact.spread"],
                     values["fact.meaning_weight"], values["fact.top"]),
        abstention=AbstentionCfg(values["abstention.keyword_floor"], values["abstention.joint_floor"]),
        speaker=SpeakerCfg(values["speaker.boost"]),
        dates=DatesCfg(values["dates.boost"], values["dates.window_days"]),
        heading=HeadingCfg(values["heading.boost"], values["heading.min_share"]),
        context=ContextCfg(values["context.boost"], values["context.top"], values["context.kinds"]),
        vectors=VectorCfg(values["vectors.quantised_min"], values["vectors.shortlist"],
                          values["vectors.sidecar_min"], values["vectors.sidecar_tail"],
                          values["vectors.ann_min"], values["vectors.ann_overfetch"]),
    )


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------
def user_profile_dir() -> Path:
    """The user's profile folder: ``$MEMO_PROFILES_DIR`` if set, else
    ``<user config dir>/memo/profiles`` (``~/.config/memo/profiles`` on Linux)."""
    env = os.environ.get("MEMO_PROFILES_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir("memo")) / "profiles"


def shipped_profile_dir() -> Path:
    """The profiles inside the installed package (``memo/profiles/*.toml``)."""
    return Path(str(files("memo") / "profiles"))


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


def resolve_profile_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ProfileError(f"profile file {path} does not exist")
        return path
    if not _NAME.fullmatch(text):
        raise ProfileError(f"profile name {text!r} is not valid (letters, digits, _ . -)")
    for d in profile_dirs():
        path = d / f"{text}.toml"
        if path.is_file():
            return path
    raise ProfileError(f"no profile named {text!r} (known: {', '.join(profile_names()) or 'none'})",
                       hint=f"put NAME.toml in {user_profile_dir()} or pass a path (docs/profiles.md)")


_CACHE: dict[tuple[str, float], Profile] = {}


def load_profile(name_or_path: str | Path | Profile | None = None) -> Profile:
    """Load a profile by name (``<name>.toml`` in ``profile_dirs()``) or path; a Profile
    passes through; None = the default profile (``memo.types.default_profile``)."""
    if isinstance(name_or_path, Profile):
        return name_or_path
    if name_or_path is None:
        name_or_path = default_profile()
    path = resolve_profile_path(name_or_path).resolve()
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from exc
    profile = _build(doc, name=path.stem, source=str(path))
    _CACHE[key] = profile
    return profile


def diff_profiles(a: Profile, b: Profile) -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (value in a, value in b) for every key that differs (None = absent)."""
    fa, fb = a.flat(), b.flat()
    return {k: (fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)}
