"""Fact vectors: the ``fact_vectors`` table and its in-memory index, kept exactly like
passage vectors (memo/embed/vectors.py, index.py, backfill.py):

* same model ids, never mixed across models; a fact without a vector for the model is
  *pending* (the queue), embedded after its commit or by ``memo backfill`` / server start;
* writes are one short ``BEGIN IMMEDIATE`` per batch, ``INSERT OR IGNORE`` (two backfills
  only duplicate work), skipping facts deleted meanwhile;
* the in-memory matrix loads new rows by ``seq`` and reloads fully when the shared
  ``vectors_epoch`` moves (a purge bumps it).

The text embedded is the fact text alone, as a passage (no query prefix).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import numpy as np

from memo.embed.index import VectorIndex, db_key
from memo.embed.vectors import write_vectors


def write_fact_vectors(conn: sqlite3.Connection, model_id: str, pks: Sequence[int], vecs: np.ndarray) -> int:
    return write_vectors(conn, model_id, pks, vecs, of="fact")


def pending_fact_count(conn: sqlite3.Connection, model_id: str) -> int:
    return int(conn.execute(
        "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS "
        "(SELECT 1 FROM fact_vectors v WHERE v.model_id = ? AND v.fact_pk = f.pk)", (model_id,)).fetchone()[0])


def pending_fact_batch(conn: sqlite3.Connection, model_id: str, after_pk: int, limit: int,
                       only: Sequence[int] | None = None) -> list[tuple[int, str]]:
    """The next ``limit`` pending facts with pk > ``after_pk``: (pk, text)."""
    if only is not None:
        chunk = [int(p) for p in only if int(p) > after_pk][:500]
        if not chunk:
            return []
        rows = conn.execute(
            f"SELECT f.pk, f.text FROM facts f WHERE f.pk IN ({','.join('?' * len(chunk))}) AND NOT EXISTS "
            "(SELECT 1 FROM fact_vectors v WHERE v.model_id = ? AND v.fact_pk = f.pk) ORDER BY f.pk LIMIT ?",
            (*chunk, model_id, limit)).fetchall()
    else:
        rows = conn.execute(
            "SELECT f.pk, f.text FROM facts f WHERE f.pk > ? AND NOT EXISTS "
            "(SELECT 1 FROM fact_vectors v WHERE v.model_id = ? AND v.fact_pk = f.pk) ORDER BY f.pk LIMIT ?",
            (after_pk, model_id, limit)).fetchall()
    return [(int(r[0]), r[1]) for r in rows]


def backfill_facts(conn: sqlite3.Connection, embedder, model_id: str, batch_size: int,
                   only: Sequence[int] | None = None) -> tuple[int, int]:
    """Embed pending facts (all, or just ``only``); returns (embedded, skipped).  Reads
    in autocommit, embeds outside any transaction, writes one short tx per batch."""
    embedded = skipped = 0
    after = 0
    remaining = sorted(int(p) for p in only) if only is not None else None
    while True:
        window = pending_fact_batch(conn, model_id, after, batch_size * 8, remaining)
        if not window:
            break
        after = window[-1][0]
        vecs = embedder.embed_passages([text for _, text in window], batch_size)
        for s in range(0, len(window), batch_size):
            pks = [pk for pk, _ in window[s:s + batch_size]]
            added = write_fact_vectors(conn, model_id, pks, vecs[s:s + batch_size])
            embedded += added
            skipped += len(pks) - added
    return embedded, skipped


class FactVectorIndex(VectorIndex):
    """The in-memory matrix of one model's fact vectors (rows are fact pks; always exact,
    never a sidecar: facts are few)."""

    table = "fact_vectors"

    def _probe(self, conn: sqlite3.Connection) -> tuple[str, int]:
        row = conn.execute(
            "SELECT (SELECT value FROM memo_meta WHERE key = 'vectors_epoch'), "
            "(SELECT COALESCE(MAX(seq), 0) FROM fact_vectors)").fetchone()
        return str(row[0]), int(row[1])

    def _load_since(self, conn: sqlite3.Connection, seq: int, max_seq: int) -> None:
        # ``+model_id``: the rowid range over the rows after ``seq`` (as VectorIndex._read_since)
        rows = conn.execute("SELECT seq, fact_pk, vec FROM fact_vectors WHERE +model_id = ? AND seq > ? "
                            "ORDER BY seq", (self.model_id, seq)).fetchall()
        self.loads += 1
        if rows:
            new = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4")
            if new.size != len(rows) * self.dimensions:
                raise ValueError(f"fact vectors of model {self.model_id} are not {self.dimensions}-d")
            self._append(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
                         new.reshape(len(rows), self.dimensions))
        self._last_seq = max(self._last_seq, int(rows[-1][0]) if rows else 0, max_seq)

    def scope_pks(self, conn: sqlite3.Connection, where: str, params: tuple) -> np.ndarray:
        raise NotImplementedError("the fact arm computes the allowed facts itself")


_lock = threading.Lock()
_indexes: dict[tuple[str, str], FactVectorIndex] = {}


def get_fact_index(conn: sqlite3.Connection, model_id: str, dimensions: int) -> FactVectorIndex:
    """One fact matrix per (database file, model id) per process, like ``get_index``."""
    key = (db_key(conn), model_id)
    with _lock:
        idx = _indexes.get(key)
        if idx is None or idx.dimensions != dimensions:
            idx = _indexes[key] = FactVectorIndex(model_id, dimensions)
        return idx


def clear_fact_indexes() -> None:
    with _lock:
        _indexes.clear()
