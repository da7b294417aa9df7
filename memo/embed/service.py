"""The semantic service the search pipeline receives in ``ArmServices.semantic`` (``memo.retrieve.services``).

Contract (docs/architecture, TEAM brief): ``model_id``, ``status() -> (available, reason)``,
``embed_query(text) -> (dim,) float32 unit vector`` and ``index`` with
``search(conn, query_vec, allowed_pks, k) -> [(pk, cosine)]``.

* Lazy: building a service costs nothing; the model loads on the first ``status()`` or
  ``embed_query``.  A CLI command that never searches never pays for it.
* Process-level caches: one loaded model per model id, one in-memory index per
  (database file, model id).  The MCP/web servers therefore load the model once and keep
  the matrix resident across requests.
* A model that failed to load is not retried on every search: the failure is remembered
  per (path, size, mtime) of the file, so fixing or fetching the file is picked up at once.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

from memo.embed import NO_VECTORS_YET
from memo.embed.fact_vectors import clear_fact_indexes, get_fact_index
from memo.embed.index import VectorIndex, db_key
from memo.embed.integrity import file_key
from memo.embed.model import OnnxEmbedder, preload_tokenizer
from memo.embed.registry import ModelSpec, Registry, load_registry
from memo.errors import MemoError, ModelUnavailable

_lock = threading.Lock()
_models: dict[str, OnnxEmbedder] = {}
_failures: dict[str, tuple[object, str]] = {}          # model id -> ((spec, file state), reason)
_indexes: dict[tuple[str, str], VectorIndex] = {}


def _file_state(spec: ModelSpec) -> object:
    try:
        return (file_key(spec.onnx), file_key(spec.tokenizer) if spec.tokenizer.exists() else None)
    except OSError:
        return None


def _held(spec: ModelSpec) -> OnnxEmbedder | None:
    """This process's loaded model for ``spec``, if any (caller holds ``_lock``)."""
    model = _models.get(spec.id)
    return model if model is not None and model.spec == spec else None


def model_loaded(spec: ModelSpec) -> bool:
    """Whether this process holds ``spec``'s model already."""
    with _lock:
        return _held(spec) is not None


def load_model(spec: ModelSpec) -> OnnxEmbedder:
    """The process's loaded model for ``spec`` (hash-checked, loaded once)."""
    with _lock:
        model = _held(spec)
        if model is not None:
            return model
        state = (spec, _file_state(spec))
        failed = _failures.get(spec.id)
        if failed is not None and failed[0] == state and state[1] is not None:
            raise ModelUnavailable(failed[1])
        try:
            model = OnnxEmbedder(spec)
        except MemoError as exc:
            _failures[spec.id] = (state, str(exc))
            raise
        _failures.pop(spec.id, None)
        _models[spec.id] = model
        return model


def get_index(conn: sqlite3.Connection, model_id: str, dimensions: int) -> VectorIndex:
    key = (db_key(conn), model_id)
    with _lock:
        idx = _indexes.get(key)
        if idx is None or idx.dimensions != dimensions:
            idx = _indexes[key] = VectorIndex(model_id, dimensions, db_path=key[0])
        return idx


def clear_caches() -> None:
    """Forget loaded models, failures and indexes (tests)."""
    with _lock:
        _models.clear()
        _failures.clear()
        _indexes.clear()
    clear_fact_indexes()


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    available: bool
    reason: str


class SemanticService:
    def __init__(self, conn: sqlite3.Connection, spec: ModelSpec, embedder: object | None = None) -> None:
        self.conn = conn
        self.spec = spec
        self.model_id = spec.id
        self.bands = spec.bands
        self.index = get_index(conn, spec.id, spec.dimensions)
        self.fact_index = get_fact_index(conn, spec.id, spec.dimensions)   # the fact arm's matrix
        self._embedder = embedder      # tests inject a fake; else loaded lazily
        self._model_load_ms = 0.0
        self._matrix_seen_ms = self.index.load_ms + self.fact_index.load_ms

    @property
    def embedder(self) -> OnnxEmbedder:
        if self._embedder is None:
            t0 = time.perf_counter()
            try:
                self._embedder = load_model(self.spec)
            finally:
                self._model_load_ms += (time.perf_counter() - t0) * 1000.0
        return self._embedder  # type: ignore[return-value]

    def prepare_model(self) -> None:
        """Before the model is asked for (the semantic arm's prepare): when this process has
        not loaded it yet, its tokenizer is parsed now, while the session builds."""
        if self._embedder is None and not model_loaded(self.spec):
            preload_tokenizer(self.spec)

    def take_startup_ms(self) -> dict[str, float]:
        """Model and matrix load time (ms) since the last call: the pipeline reports it in
        ``trace.stage_ms`` as ``model_load`` / ``matrix_load``, apart from the search."""
        out: dict[str, float] = {}
        if self._model_load_ms:
            out["model_load"] = round(self._model_load_ms, 3)
            self._model_load_ms = 0.0
        matrix = self.index.load_ms + self.fact_index.load_ms
        if matrix > self._matrix_seen_ms:
            out["matrix_load"] = round(matrix - self._matrix_seen_ms, 3)
        self._matrix_seen_ms = matrix
        return out

    def pending_in_scope(self, conn: sqlite3.Connection, where: str, params: tuple[object, ...]) -> int:
        """In-scope passages without a vector for this model (the pipeline reports them as
        a partial degradation: ``memo backfill`` embeds them)."""
        from memo.embed.vectors import pending_in_scope
        return pending_in_scope(conn, self.model_id, where, params)

    def model_status(self) -> tuple[bool, str]:
        try:
            _ = self.embedder
        except MemoError as exc:
            return False, str(exc)
        return True, f"model {self.model_id} loaded"

    def status(self) -> tuple[bool, str]:
        """(available, reason).  Unavailable when the model is missing, corrupt or fails
        to load, or when no passage has a vector for it yet."""
        ok, why = self.model_status()
        if not ok:
            return False, why
        if len(self.index) == 0:
            # One indexed look-up, not a load: the first search loads the matrix with its
            # profile's [index] settings (sidecar or table).
            if self.conn.execute("SELECT 1 FROM vectors WHERE model_id = ? LIMIT 1",
                                 (self.model_id,)).fetchone() is None:
                # An empty database (new, or purged) lacks nothing: nothing is degraded.
                if self.conn.execute("SELECT 1 FROM passages LIMIT 1").fetchone() is None:
                    return True, f"model {self.model_id}; no passage stored yet"
                return False, f"{NO_VECTORS_YET} for model {self.model_id} (run `memo backfill`)"
            return True, f"model {self.model_id}"
        return True, f"model {self.model_id}, {len(self.index)} vectors"

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)


def semantic_services(conn: sqlite3.Connection, model_id: str | None = None,
                      registry: Registry | None = None) -> dict[str, object]:
    """``services`` for ``memo.retrieve.search``: ``{"semantic": SemanticService}``.

    Never raises for a broken model (search must degrade, not fail): an unknown model id
    or an unreadable registry yields a service stub whose ``status()`` explains why."""
    try:
        spec = (registry or load_registry()).get(model_id)
    except MemoError as exc:
        return {"semantic": UnavailableService(model_id or "?", str(exc))}
    return {"semantic": SemanticService(conn, spec)}


class UnavailableService:
    """Stands in when not even the model's registry entry could be resolved."""

    def __init__(self, model_id: str, reason: str) -> None:
        self.model_id = model_id
        self._reason = reason
        self.index = None
        self.fact_index = None

    def status(self) -> tuple[bool, str]:
        return False, self._reason

    def embed_query(self, text: str) -> np.ndarray:
        raise ModelUnavailable(self._reason)
