"""The model registry: which embedding models memo knows, where their files are, how to
run them and how to read their cosines.

Sources, later ones override earlier ones model by model:
1. ``memo/embed/models.toml`` (built in; the default model).
2. The user's file: ``$MEMO_MODELS`` if set, else ``<user config dir>/memo/models.toml``
   when it exists.  That is how a user points memo at another ONNX model
   (docs/models.md shows granite-embedding-small-english-r2).

The model in use is ``$MEMO_MODEL`` if set, else the last file's ``default``.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from memo.errors import ModelUnavailable, ValidationError

BUILTIN = Path(__file__).with_name("models.toml")
POOLINGS = ("mean", "cls")
_BAND_KEYS = ("semantic_floor", "weak", "moderate", "strong")
_KNOWN_KEYS = {"description", "onnx", "sha256", "tokenizer", "tokenizer_sha256", "dimensions", "pooling",
               "max_tokens", "output", "query_prefix", "passage_prefix", "url", "tokenizer_url", "bands"}


@dataclass(frozen=True, slots=True)
class Bands:
    """How to read a raw cosine of this model: ``relevance`` bands and the abstention floor."""

    semantic_floor: float
    weak: float
    moderate: float
    strong: float


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    onnx: Path                 # resolved path (may not exist: missing / not fetched yet)
    sha256: str
    tokenizer: Path
    tokenizer_sha256: str | None
    dimensions: int
    pooling: str               # mean | cls
    max_tokens: int
    bands: Bands
    output: str = ""           # ONNX output holding token states; "" = the first output
    query_prefix: str = ""
    passage_prefix: str = ""
    url: str | None = None     # download source for `memo models fetch` (never used implicitly)
    tokenizer_url: str | None = None
    description: str = ""
    source: str = ""           # the TOML file that defined it
    extra: dict[str, object] = field(default_factory=dict)


def user_models_file() -> Path | None:
    env = os.environ.get("MEMO_MODELS")
    if env:
        return Path(env).expanduser()
    candidate = Path(platformdirs.user_config_dir("memo")) / "models.toml"
    return candidate if candidate.exists() else None


def cache_dir(model_id: str) -> Path:
    """Where ``memo models fetch`` puts a model's files."""
    return Path(platformdirs.user_cache_dir("memo")) / "models" / model_id


def _package_path(spec: str) -> Path:
    """``package:<pkg>/<rel>`` -> a filesystem path, without importing the package."""
    pkg, _, rel = spec.removeprefix("package:").partition("/")
    found = importlib.util.find_spec(pkg)
    if found is None or not found.submodule_search_locations:
        # Not installed: point at a path that does not exist so status() can say so.
        return Path(f"<package {pkg} not installed>") / rel
    return Path(next(iter(found.submodule_search_locations))) / rel


def _resolve(value: object, base: Path, model_id: str, default_name: str, has_url: bool) -> Path:
    if not value:
        if has_url:
            return cache_dir(model_id) / default_name
        raise ValidationError(f"model {model_id!r}: no {default_name} path and no url")
    text = str(value)
    if text.startswith("package:"):
        return _package_path(text)
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path)


def _spec(model_id: str, raw: dict, base: Path, source: str) -> ModelSpec:
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise ValidationError(f"{source}: model {model_id!r} has unknown keys {sorted(unknown)}")
    bands_raw = raw.get("bands") or {}
    missing = [k for k in _BAND_KEYS if k not in bands_raw]
    if missing:
        raise ValidationError(f"{source}: model {model_id!r} needs bands {missing}")
    bands = Bands(**{k: float(bands_raw[k]) for k in _BAND_KEYS})
    if not (-1 <= bands.weak <= bands.moderate <= bands.strong <= 1):
        raise ValidationError(f"{source}: model {model_id!r} bands must satisfy weak <= moderate <= strong")
    pooling = str(raw.get("pooling", "mean"))
    if pooling not in POOLINGS:
        raise ValidationError(f"{source}: model {model_id!r} pooling {pooling!r} not in {POOLINGS}")
    sha = str(raw.get("sha256", "")).lower()
    if len(sha) != 64:
        raise ValidationError(f"{source}: model {model_id!r} needs a sha256 (64 hex digits)")
    url = raw.get("url") or None
    tok_url = raw.get("tokenizer_url") or None
    return ModelSpec(
        id=model_id,
        onnx=_resolve(raw.get("onnx"), base, model_id, "model.onnx", bool(url)),
        sha256=sha,
        tokenizer=_resolve(raw.get("tokenizer"), base, model_id, "tokenizer.json", bool(tok_url)),
        tokenizer_sha256=(str(raw["tokenizer_sha256"]).lower() if raw.get("tokenizer_sha256") else None),
        dimensions=int(raw.get("dimensions", 384)),
        pooling=pooling,
        max_tokens=int(raw.get("max_tokens", 256)),
        bands=bands,
        output=str(raw.get("output", "")),
        query_prefix=str(raw.get("query_prefix", "")),
        passage_prefix=str(raw.get("passage_prefix", "")),
        url=url,
        tokenizer_url=tok_url,
        description=str(raw.get("description", "")),
        source=source,
    )


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ValidationError(f"models file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"models file {path} is not valid TOML: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Registry:
    models: dict[str, ModelSpec]
    default: str

    def get(self, model_id: str | None = None) -> ModelSpec:
        mid = model_id or self.default
        if mid not in self.models:
            raise ModelUnavailable(f"unknown embedding model {mid!r}",
                                   hint=f"known models: {', '.join(sorted(self.models))} (`memo models list`)")
        return self.models[mid]


def load_registry(user_file: Path | None = None) -> Registry:
    """Built-in models plus the user's file (``user_file`` overrides the env lookup)."""
    models: dict[str, ModelSpec] = {}
    default = ""
    files = [BUILTIN]
    extra = user_file if user_file is not None else user_models_file()
    if extra is not None:
        files.append(extra)
    for path in files:
        doc = _read(path)
        for mid, raw in (doc.get("models") or {}).items():
            models[mid] = _spec(mid, raw, path.parent, str(path))
        default = str(doc.get("default", default))
    default = os.environ.get("MEMO_MODEL") or default
    return Registry(models=models, default=default)


def default_model_id() -> str:
    return load_registry().default


def memo_resource(rel: str) -> Path:
    """A file shipped inside the memo package (the tokenizer)."""
    return Path(__file__).resolve().parents[1].joinpath(rel)
