"""The in-memory vector index: one float32 matrix per (database, model), kept in step with
the ``vectors`` table without reloading per query.

Freshness costs one cheap query per search (``_probe``): the ``vectors_epoch`` in
``memo_meta`` and ``MAX(seq)`` of ``vectors``.
* epoch changed -> rows went away (passages deleted, vectors dropped): reload fully.
* max(seq) grew -> load only rows with ``seq > last_seen`` (AUTOINCREMENT: seq only grows,
  and SQLite's single writer commits them in order, so a reader never skips one).

Search is brute force (exact): scores = M @ q over the rows the scope allows, then
``argpartition`` for the top k.  At 10k passages that is well under a millisecond; at 100k
about 10-15 ms on the target machine (docs/design performance anchors).  The scope filter is
a mask applied *before* top-k, so a filtered search never loses a result to a candidate
that was filtered out afterwards.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

_SCOPE_CACHE = 16  # distinct (generation, where, params) entries kept per index


def db_key(conn: sqlite3.Connection) -> str:
    """The main database file of ``conn`` ('' for in-memory: then keyed by the object): the
    key of the per-process matrices (passages: ``memo.embed.service``, facts:
    ``memo.embed.fact_vectors``)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    path = row[2] if row is not None else ""
    return path or f"memory:{id(conn)}"


class VectorIndex:
    def __init__(self, model_id: str, dimensions: int) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        self._lock = threading.RLock()
        self._mat = np.zeros((0, dimensions), dtype=np.float32)   # capacity rows; first _n used
        self._pks = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._last_seq = 0
        self._epoch: str | None = None
        self._scope: OrderedDict[tuple, tuple[Any, np.ndarray]] = OrderedDict()
        self._mask_for: tuple[int, int, int] | None = None   # (id(allowed), n, epoch-ish)
        self._mask_rows: np.ndarray | None = None
        self._mask_ref: np.ndarray | None = None
        self.reloads = 0           # full reloads (tests check that appends don't reload)
        self.loads = 0             # incremental loads
        self.load_ms = 0.0         # time spent reading vectors into the matrix (trace: matrix_load)

    def __len__(self) -> int:
        return self._n

    # -- keeping in step -------------------------------------------------------------------

    def _probe(self, conn: sqlite3.Connection) -> tuple[str, int]:
        row = conn.execute(
            "SELECT (SELECT value FROM memo_meta WHERE key = 'vectors_epoch'), "
            "(SELECT COALESCE(MAX(seq), 0) FROM vectors)").fetchone()
        return str(row[0]), int(row[1])

    def refresh(self, conn: sqlite3.Connection) -> None:
        epoch, max_seq = self._probe(conn)
        with self._lock:
            if epoch != self._epoch:
                self._reset()
                self._epoch = epoch
                self.reloads += 1
            if max_seq > self._last_seq:
                self._load_since(conn, self._last_seq, max_seq)
            elif max_seq < self._last_seq:
                # seq went backwards without an epoch bump (a restored or rebuilt file).
                self._reset()
                self._load_since(conn, 0, max_seq)
                self.reloads += 1

    def _reset(self) -> None:
        self._mat = np.zeros((0, self.dimensions), dtype=np.float32)
        self._pks = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._last_seq = 0
        self._mask_for = None

    def _load_since(self, conn: sqlite3.Connection, seq: int, max_seq: int) -> None:
        t0 = time.perf_counter()
        try:
            self._read_since(conn, seq, max_seq)
        finally:
            self.load_ms += (time.perf_counter() - t0) * 1000.0

    def _read_since(self, conn: sqlite3.Connection, seq: int, max_seq: int) -> None:
        rows = conn.execute("SELECT seq, passage_pk, vec FROM vectors WHERE model_id = ? AND seq > ? "
                            "ORDER BY seq", (self.model_id, seq)).fetchall()
        self.loads += 1
        if rows:
            blob = b"".join(r[2] for r in rows)
            new = np.frombuffer(blob, dtype="<f4")
            if new.size != len(rows) * self.dimensions:
                raise ValueError(f"vectors of model {self.model_id} are not {self.dimensions}-d")
            self._append(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
                         new.reshape(len(rows), self.dimensions))
        # Rows of other models also advance seq; remember the highest seen so the next
        # probe does not keep reloading them.
        self._last_seq = max(self._last_seq, int(rows[-1][0]) if rows else 0, max_seq)

    def _append(self, pks: np.ndarray, vecs: np.ndarray) -> None:
        need = self._n + len(pks)
        if need > self._mat.shape[0]:
            cap = max(need, int(self._mat.shape[0] * 1.5) + 1024)   # amortised growth
            mat = np.zeros((cap, self.dimensions), dtype=np.float32)
            mat[: self._n] = self._mat[: self._n]
            ids = np.zeros(cap, dtype=np.int64)
            ids[: self._n] = self._pks[: self._n]
            self._mat, self._pks = mat, ids
        self._mat[self._n:need] = vecs
        self._pks[self._n:need] = pks
        self._n = need
        self._mask_for = None

    # -- scope -----------------------------------------------------------------------------

    def scope_pks(self, conn: sqlite3.Connection, where: str, params: tuple) -> np.ndarray:
        """Passage pks the scope filter allows.  Cached per (connection, data generation,
        where, params): the generation is ``PRAGMA data_version`` (changes when another
        connection commits) plus ``total_changes`` (changes when this one writes), so an
        eval replay of 300 queries under one scope runs the filter once, and any write
        anywhere invalidates it."""
        gen = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        key = (id(conn), gen, where, tuple(params))
        with self._lock:
            hit = self._scope.get(key)
            if hit is not None and hit[0] is conn:
                self._scope.move_to_end(key)
                return hit[1]
        sql = "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE " + (where or "1")
        rows = conn.execute(sql, tuple(params)).fetchall()
        pks = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        with self._lock:
            self._scope[key] = (conn, pks)   # the connection itself guards against id() reuse
            while len(self._scope) > _SCOPE_CACHE:
                self._scope.popitem(last=False)
        return pks

    def _rows_allowed(self, allowed: np.ndarray) -> np.ndarray:
        """Row indices of the matrix whose pk is in ``allowed`` (cached per allowed array)."""
        key = (id(allowed), self._n, len(allowed))
        if self._mask_for == key and self._mask_ref is allowed:
            return self._mask_rows  # type: ignore[return-value]
        rows = np.flatnonzero(np.isin(self._pks[: self._n], allowed))
        self._mask_for, self._mask_ref, self._mask_rows = key, allowed, rows
        return rows

    # -- search ----------------------------------------------------------------------------

    def search(self, conn: sqlite3.Connection, query_vec: np.ndarray, allowed_pks: np.ndarray | None,
               k: int) -> list[tuple[int, float]]:
        """Top ``k`` (pk, cosine) among the allowed passages, best first."""
        self.refresh(conn)
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        with self._lock:
            n = self._n
            if n == 0 or k <= 0:
                return []
            mat, pks = self._mat[:n], self._pks[:n]
            if allowed_pks is None:
                scores = mat @ q
                cand = np.arange(n)
            else:
                cand = self._rows_allowed(allowed_pks)
                if cand.size == 0:
                    return []
                # Gather only when the scope is narrow; otherwise one contiguous matvec is
                # cheaper than copying most of the matrix.
                scores = mat[cand] @ q if cand.size * 2 < n else (mat @ q)[cand]
        kk = min(k, scores.size)
        top = np.argpartition(-scores, kk - 1)[:kk] if kk < scores.size else np.arange(scores.size)
        # Sort by score, ties by pk so results are deterministic.
        order = np.lexsort((pks[cand[top]], -scores[top]))
        top = top[order]
        return [(int(pks[cand[i]]), float(scores[i])) for i in top]
