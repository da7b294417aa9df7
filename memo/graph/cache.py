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

Speed (issue 29.5, the first search of a process): the matrices are ``memo.graph.csr.CSR``
(numpy only: importing scipy.sparse cost more than the rest of a first search on 10k
passages) and the rows read are indexed in bulk (``_index``: numpy sorts and searches
instead of a dict lookup per edge); indices are still given in first-seen order, so the
graph is the one the per-edge loop built.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memo.graph.csr import CSR, distinct
from memo.store.connect import db_file
from memo.store.dialect import is_postgres


@dataclass(frozen=True, slots=True)
class MentionGraph:
    epoch: int
    seq: int
    W: CSR                        # (passages, entities), 1.0 per mention edge
    WT: CSR                       # (entities, passages)
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

    def passage_mask_except(self, pks: np.ndarray) -> np.ndarray:
        """Boolean mask over passage indices: every passage but these pks (absent pks
        ignored).  The graph holds existing passages only (a deletion of mention rows bumps
        the epoch and the graph reloads), so for a scope that rules out few passages this
        is ``passage_mask`` of its in-scope pks without listing them."""
        return ~self.passage_mask(pks)

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
            graph = _append(cached, epoch, seq, _read(conn, cached.seq, seq))
        else:
            graph = _append(None, epoch, seq, _read(conn, 0, seq))
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
    return db_file(conn) or f":memory:{id(conn)}"


def _build(epoch: int, seq: int, passage_pks: np.ndarray, entity_pks: np.ndarray, rows: np.ndarray,
           cols: np.ndarray) -> MentionGraph:
    shape = (len(passage_pks), len(entity_pks))
    W = CSR.from_edges(rows, cols, shape)    # unweighted: duplicates (own + fact mentions) are one edge
    WT = W.transpose()
    p_list, e_list = passage_pks.tolist(), entity_pks.tolist()
    return MentionGraph(epoch, seq, W, WT, passage_pks, entity_pks, {pk: i for i, pk in enumerate(p_list)},
                        {pk: i for i, pk in enumerate(e_list)}, rows, cols, np.argsort(passage_pks, kind="stable"))


def _index(known: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index of every pk of ``new`` among ``known`` (index -> pk), the pks not known
    yet appended in the order they first appear in ``new``: (indices, the pks extended)."""
    idx = np.empty(len(new), dtype=np.int64)
    found = np.zeros(len(new), dtype=bool)
    if len(known) and len(new):
        sorter = np.argsort(known, kind="stable")
        pos = np.minimum(np.searchsorted(known, new, sorter=sorter), len(known) - 1)
        found = known[sorter[pos]] == new
        idx[found] = sorter[pos[found]]
    unseen = new[~found]
    if not len(unseen):
        return idx, known
    by_pk = np.argsort(unseen, kind="stable")        # equal pks in the order they appear
    start = distinct(unseen[by_pk])
    first = by_pk[start]                              # where each distinct pk first appears
    group = np.empty(len(unseen), dtype=np.int64)
    group[by_pk] = np.cumsum(start) - 1               # each row's distinct pk (in pk order)
    order = np.argsort(first, kind="stable")          # the distinct pks in first-seen order
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    idx[~found] = len(known) + rank[group]
    return idx, np.concatenate([known, unseen[first[order]]])


def _pairs(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(passage pks, entity pks) of (passage pk, entity pk) rows."""
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows))
    return flat[0::2], flat[1::2]


READ_CHUNK = 1_000_000      # mention rows (seq values) per read of SQLite


def _read(conn: sqlite3.Connection, after: int, upto: int) -> tuple[np.ndarray, np.ndarray]:
    """(passage pks, entity pks) of the mentions with ``after < seq <= upto``, in seq order.
    SQLite hands them over as two comma-separated strings per ``READ_CHUNK`` seq values,
    which numpy parses: half the time of building a Python tuple per row."""
    if is_postgres(conn):
        return _pairs(conn.execute("SELECT passage_pk, entity_pk FROM mentions WHERE seq > ? AND seq <= ? "
                                   "ORDER BY seq", (after, upto)).fetchall())
    ps, es = [], []
    for lo in range(after, upto, READ_CHUNK):
        p, e = conn.execute("SELECT group_concat(passage_pk, ','), group_concat(entity_pk, ',') FROM "
                            "(SELECT passage_pk, entity_pk FROM mentions WHERE seq > ? AND seq <= ? ORDER BY seq)",
                            (lo, min(lo + READ_CHUNK, upto))).fetchone()
        if p:
            ps.append(np.fromstring(p, dtype=np.int64, sep=","))
            es.append(np.fromstring(e, dtype=np.int64, sep=","))
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(ps), np.concatenate(es)) if ps else (empty, empty)


def _append(base: MentionGraph | None, epoch: int, seq: int, new: tuple[np.ndarray, np.ndarray]) -> MentionGraph:
    """``base`` (None: an empty graph) with the mention rows ``new`` (passage pks, entity
    pks: ``_read``, ``_pairs``) added."""
    empty = np.zeros(0, dtype=np.int64)
    known_p, known_e = (empty, empty) if base is None else (base.passage_pks, base.entity_pks)
    old_rows, old_cols = (empty, empty) if base is None else (base.rows, base.cols)
    ppks, epks = new
    rows, passage_pks = _index(known_p, ppks)
    cols, entity_pks = _index(known_e, epks)
    return _build(epoch, seq, passage_pks, entity_pks, np.concatenate([old_rows, rows]),
                  np.concatenate([old_cols, cols]))


def mention_graph(conn: sqlite3.Connection, cache: GraphCache | None = None) -> MentionGraph:
    """The current mention graph of ``conn``'s database, from ``cache`` (default: the
    process-wide ``DEFAULT``)."""
    return (cache or DEFAULT).graph(conn)


def forget_graphs() -> None:
    """Drop every graph of the process-wide cache (tests, benchmarks)."""
    DEFAULT.clear()
