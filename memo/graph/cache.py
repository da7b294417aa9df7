"""The mention graph of one database as sparse matrices, cached per database file and
brought up to date after writes without a full rebuild.

``mention_graph(conn)`` returns a ``MentionGraph`` (``W``: passages x entities, 1 where a
passage mentions an entity, its own text or a live fact's; ``WT``; the pk <-> index maps).
State is (``memo_meta.mentions_epoch``, ``max(mentions.seq)``), read in the caller's read
snapshot (two indexed lookups):

* same state: the cached graph;
* same epoch, higher seq (rows were only added: adds, imports, new facts): the new rows
  (``seq`` above the cached one) are appended to the edge lists and the CSR matrices
  rebuilt from them, without reading the table again;
* another epoch (rows went away: forget, fact forget/supersede, reindex, purge): full
  reload.

Edges are unweighted (a passage that names an entity three times is linked once):
``mentions.count`` is kept for ``memo entities show``, the walk does not use it.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from memo.store.dialect import is_postgres


@dataclass(frozen=True, slots=True)
class MentionGraph:
    epoch: int
    seq: int
    W: sparse.csr_matrix          # (passages, entities), 1.0 per mention edge
    WT: sparse.csr_matrix         # (entities, passages)
    passage_pks: np.ndarray       # index -> passages.pk
    entity_pks: np.ndarray        # index -> entities.pk
    passage_index: dict[int, int]
    entity_index: dict[int, int]
    rows: np.ndarray              # edge list (passage index, entity index), for incremental updates
    cols: np.ndarray
    order: np.ndarray             # passage indices sorted by pk (pk -> index lookups)

    @property
    def edges(self) -> int:
        return int(self.W.nnz)

    def passage_mask(self, pks: np.ndarray) -> np.ndarray:
        """Boolean mask over passage indices for these passage pks (absent pks ignored)."""
        mask = np.zeros(len(self.passage_pks), dtype=bool)
        if len(self.passage_pks) and len(pks):
            sorted_pks = self.passage_pks[self.order]
            pos = np.clip(np.searchsorted(sorted_pks, pks), 0, len(self.order) - 1)
            hit = sorted_pks[pos] == pks
            mask[self.order[pos[hit]]] = True
        return mask

    def entity_mask(self, pks: np.ndarray) -> np.ndarray:
        """Boolean mask over entity indices for these entity pks (absent pks ignored)."""
        mask = np.zeros(len(self.entity_pks), dtype=bool)
        for pk in pks.tolist():
            i = self.entity_index.get(int(pk))
            if i is not None:
                mask[i] = True
        return mask


MAX_GRAPHS = 8


class GraphCache:
    """Mention graphs by database file (at most ``MAX_GRAPHS``, oldest dropped first),
    thread-safe.  ``DEFAULT`` is the process-wide one; ``memo.retrieve.services.ArmServices``
    may carry another (tests, a server that wants its own)."""

    def __init__(self, max_graphs: int = MAX_GRAPHS) -> None:
        self.max_graphs = max_graphs
        self._lock = threading.Lock()
        self._graphs: dict[str, MentionGraph] = {}

    def graph(self, conn: sqlite3.Connection) -> MentionGraph:
        """The current mention graph of ``conn``'s database (see the module docstring)."""
        key = _db_key(conn)
        epoch, seq = _state(conn)
        with self._lock:
            cached = self._graphs.get(key)
        if cached is not None and cached.epoch == epoch and cached.seq == seq:
            return cached
        if cached is not None and cached.epoch == epoch and cached.seq < seq:
            new = conn.execute("SELECT passage_pk, entity_pk FROM mentions WHERE seq > ? AND seq <= ? ORDER BY seq",
                               (cached.seq, seq)).fetchall()
            graph = _append(cached, epoch, seq, new)
        else:
            rows = conn.execute("SELECT passage_pk, entity_pk FROM mentions WHERE seq <= ? ORDER BY seq",
                                (seq,)).fetchall()
            graph = _append(None, epoch, seq, rows)
        with self._lock:
            if key not in self._graphs and len(self._graphs) >= self.max_graphs:
                del self._graphs[next(iter(self._graphs))]
            self._graphs[key] = graph
        return graph

    def clear(self) -> None:
        with self._lock:
            self._graphs.clear()


DEFAULT = GraphCache()


def _state(conn: sqlite3.Connection) -> tuple[int, int]:
    row = conn.execute("SELECT value FROM memo_meta WHERE key = 'mentions_epoch'").fetchone()
    seq = conn.execute("SELECT max(seq) FROM mentions").fetchone()[0]
    return int(row[0]) if row else 0, int(seq or 0)


def _db_key(conn: sqlite3.Connection) -> str:
    if is_postgres(conn):   # one graph per server database
        return conn.url
    row = conn.execute("PRAGMA database_list").fetchone()
    path = row[2] if row is not None else ""
    return path or f":memory:{id(conn)}"


def _build(epoch: int, seq: int, passage_pks: list[int], entity_pks: list[int], p_index: dict[int, int],
           e_index: dict[int, int], rows: np.ndarray, cols: np.ndarray) -> MentionGraph:
    shape = (len(passage_pks), len(entity_pks))
    W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
    W.sum_duplicates()
    W.data[:] = 1.0                          # unweighted: duplicates (own + fact mentions) are one edge
    WT = W.T.tocsr()
    ppks = np.asarray(passage_pks, dtype=np.int64)
    return MentionGraph(epoch, seq, W, WT, ppks, np.asarray(entity_pks, dtype=np.int64), p_index, e_index,
                        rows, cols, np.argsort(ppks, kind="stable"))


def _append(base: MentionGraph | None, epoch: int, seq: int, new: list[tuple[int, int]]) -> MentionGraph:
    if base is None:
        passage_pks: list[int] = []
        entity_pks: list[int] = []
        p_index: dict[int, int] = {}
        e_index: dict[int, int] = {}
        old_rows = old_cols = np.zeros(0, dtype=np.int64)
    else:
        passage_pks, entity_pks = base.passage_pks.tolist(), base.entity_pks.tolist()
        p_index, e_index = dict(base.passage_index), dict(base.entity_index)
        old_rows, old_cols = base.rows, base.cols
    rows = np.empty(len(new), dtype=np.int64)
    cols = np.empty(len(new), dtype=np.int64)
    for i, (ppk, epk) in enumerate(new):
        r = p_index.get(ppk)
        if r is None:
            r = p_index[ppk] = len(passage_pks)
            passage_pks.append(ppk)
        c = e_index.get(epk)
        if c is None:
            c = e_index[epk] = len(entity_pks)
            entity_pks.append(epk)
        rows[i], cols[i] = r, c
    return _build(epoch, seq, passage_pks, entity_pks, p_index, e_index,
                  np.concatenate([old_rows, rows]), np.concatenate([old_cols, cols]))


def mention_graph(conn: sqlite3.Connection, cache: GraphCache | None = None) -> MentionGraph:
    """The current mention graph of ``conn``'s database, from ``cache`` (default: the
    process-wide ``DEFAULT``)."""
    return (cache or DEFAULT).graph(conn)


def forget_graphs() -> None:
    """Drop every graph of the process-wide cache (tests, benchmarks)."""
    DEFAULT.clear()
