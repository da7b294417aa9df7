"""The mention graph of one database as sparse matrices, cached per database file and
brought up to date after writes without a full rebuild.

``mention_graph(conn)`` returns a ``MentionGraph`` (``W``: passages x entities, 1 where a
passage mentions an entity, its own text or a live fact's; ``WT``; the pk <-> index maps).
State is (``memo_meta.mentions_epoch``, ``max(mentions.seq)``), read in the caller's read
snapshot (two indexed lookups):

* same state: the cached graph;
* same epoch, higher seq (rows were only added: adds, imports, new facts): the new rows
  (``seq`` above the cached one) are merged into the CSR matrices (``_merge``: the new
  keys inserted into the sorted old ones, linear in the graph; no full sort, no read of
  the table again);
* another epoch (rows went away: forget, fact forget/supersede, reindex, purge): the
  sidecar if it is current, else a full reload.

The sidecar (``memo.graph.sidecar``, ``index.graph_sidecar_min``): a graph this big is
written to a file beside the database, which a new process maps (then merges the rows
added since) instead of reading every mention row: the first graph search of a CLI
process at 1M passages spent 11.6 s reading and sorting 12M rows.

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
from dataclasses import dataclass, replace

import numpy as np

from memo.graph import sidecar
from memo.graph.csr import CSR, distinct, unit_weights
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
    order: np.ndarray             # passage indices sorted by pk
    passage_sorted: np.ndarray    # passage_pks[order] (pk -> index lookups)
    entity_order: np.ndarray      # entity indices sorted by pk
    entity_sorted: np.ndarray     # entity_pks[entity_order]
    db_path: str | None = None    # the database file its sidecars sit beside (None: none kept)
    sidecar_edges: int = 0        # edges of the sidecar this graph was mapped from or wrote (0: none)

    @property
    def edges(self) -> int:
        return int(self.W.nnz)

    def passage_indices(self, pks: np.ndarray) -> np.ndarray:
        """The index of each passage pk (-1 where the graph has none)."""
        return _positions(self.passage_sorted, self.order, pks)

    def entity_indices(self, pks: np.ndarray) -> np.ndarray:
        """The index of each entity pk (-1 where the graph has none)."""
        return _positions(self.entity_sorted, self.entity_order, pks)

    def passage_at(self, pk: int) -> int | None:
        i = int(self.passage_indices(np.asarray([pk], dtype=np.int64))[0])
        return i if i >= 0 else None

    def entity_at(self, pk: int) -> int | None:
        i = int(self.entity_indices(np.asarray([pk], dtype=np.int64))[0])
        return i if i >= 0 else None

    def passage_mask(self, pks: np.ndarray) -> np.ndarray:
        """Boolean mask over passage indices for these passage pks (absent pks ignored)."""
        mask = np.zeros(len(self.passage_pks), dtype=bool)
        idx = self.passage_indices(pks)
        mask[idx[idx >= 0]] = True
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
        idx = self.entity_indices(pks)
        mask[idx[idx >= 0]] = True
        return mask


def _positions(sorted_pks: np.ndarray, order: np.ndarray, pks: np.ndarray) -> np.ndarray:
    pks = np.asarray(pks, dtype=np.int64).reshape(-1)
    out = np.full(len(pks), -1, dtype=np.int64)
    if len(sorted_pks) and len(pks):
        pos = np.minimum(np.searchsorted(sorted_pks, pks), len(sorted_pks) - 1)
        hit = sorted_pks[pos] == pks
        out[hit] = order[pos[hit]]
    return out


MAX_GRAPHS = 8


class GraphCache:
    """Mention graphs by database file (at most ``MAX_GRAPHS``, oldest dropped first),
    thread-safe.  ``DEFAULT`` is the process-wide one; ``memo.retrieve.services.ArmServices``
    may carry another (tests, a server that wants its own)."""

    def __init__(self, max_graphs: int = MAX_GRAPHS) -> None:
        self.max_graphs = max_graphs
        self._lock = threading.Lock()
        self._graphs: dict[str, MentionGraph] = {}
        self.sidecar_note = ""       # why the last graph was (not) mapped or written (benches, tests)

    def graph(self, conn: sqlite3.Connection, sidecar_min: int = 0, sidecar_tail: float = 0.05) -> MentionGraph:
        """The current mention graph of ``conn``'s database (see the module docstring).
        ``sidecar_min`` (``index.graph_sidecar_min``; 0 = never): a graph of at least this
        many edges is kept in a sidecar file (``memo.graph.sidecar``) that a new process
        maps, rewritten once the edges added since pass ``sidecar_tail`` of it."""
        key = db_key(conn)
        epoch, seq = sidecar.db_state(conn)
        with self._lock:
            cached = self._graphs.get(key)
        if cached is not None and cached.epoch == epoch and cached.seq == seq:
            return cached
        path = db_file(conn) if sidecar_min > 0 and not is_postgres(conn) else None
        if cached is not None and cached.epoch == epoch and cached.seq < seq:
            graph = _append(cached, epoch, seq, _read(conn, cached.seq, seq))
        else:
            graph = self._mapped(conn, path, epoch, seq) if path else None
            if graph is None:
                graph = _append(None, epoch, seq, _read(conn, 0, seq))
        if path:
            graph = self._keep(conn, graph, path, sidecar_min, sidecar_tail)
        with self._lock:
            if key not in self._graphs and len(self._graphs) >= self.max_graphs:
                del self._graphs[next(iter(self._graphs))]
            self._graphs[key] = graph
        return graph

    def _mapped(self, conn: sqlite3.Connection, path: str, epoch: int, seq: int) -> MentionGraph | None:
        """The graph mapped from the database's sidecar and brought up to ``seq``; None
        when there is no valid one."""
        found, self.sidecar_note = sidecar.open_valid(conn, sidecar.sidecar_path(path), (epoch, seq))
        if found is None:
            return None
        _, at, a = found
        shape = (len(a["passage_pks"]), len(a["entity_pks"]))
        W = CSR(a["w_indptr"], a["w_indices"], unit_weights(len(a["w_indices"])), shape)
        WT = CSR(a["wt_indptr"], a["wt_indices"], unit_weights(len(a["wt_indices"])), (shape[1], shape[0]))
        graph = MentionGraph(epoch, at, W, WT, a["passage_pks"], a["entity_pks"], a["order"], a["passage_sorted"],
                             a["entity_order"], a["entity_sorted"], path, W.nnz)
        return graph if at == seq else _append(graph, epoch, seq, _read(conn, at, seq))

    def _keep(self, conn: sqlite3.Connection, graph: MentionGraph, path: str, sidecar_min: int,
              sidecar_tail: float) -> MentionGraph:
        """``graph``, its sidecar written first when it is big enough and has none, or has
        grown past ``sidecar_tail`` of the one it came from."""
        if graph.db_path != path:
            graph = replace(graph, db_path=path)
        grown = graph.edges - graph.sidecar_edges
        if graph.edges < sidecar_min or (graph.sidecar_edges and grown <= sidecar_tail * graph.sidecar_edges):
            return graph
        try:
            sidecar.write_graph(conn, sidecar.sidecar_path(path), graph.epoch, graph.seq, {
                "passage_pks": graph.passage_pks, "entity_pks": graph.entity_pks, "order": graph.order,
                "passage_sorted": graph.passage_sorted, "entity_order": graph.entity_order,
                "entity_sorted": graph.entity_sorted, "w_indptr": graph.W.indptr, "w_indices": graph.W.indices,
                "wt_indptr": graph.WT.indptr, "wt_indices": graph.WT.indices})
        except (OSError, ValueError) as exc:      # a read-only folder: searches go on without it
            self.sidecar_note = f"sidecar not written: {exc}"
            return graph
        self.sidecar_note = "written"
        return replace(graph, sidecar_edges=graph.edges)

    def clear(self) -> None:
        with self._lock:
            self._graphs.clear()


DEFAULT = GraphCache()


def db_key(conn: sqlite3.Connection) -> str:
    if is_postgres(conn):   # one graph per server database
        return conn.url
    return db_file(conn) or f":memory:{id(conn)}"


def _build(epoch: int, seq: int, passage_pks: np.ndarray, entity_pks: np.ndarray, rows: np.ndarray,
           cols: np.ndarray) -> MentionGraph:
    shape = (len(passage_pks), len(entity_pks))
    W = CSR.from_edges(rows, cols, shape)    # unweighted: duplicates (own + fact mentions) are one edge
    WT = W.transpose()
    order = np.argsort(passage_pks, kind="stable")
    entity_order = np.argsort(entity_pks, kind="stable")
    return MentionGraph(epoch, seq, W, WT, passage_pks, entity_pks, order, passage_pks[order],
                        entity_order, entity_pks[entity_order])


def _merge(m: CSR, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> CSR:
    """``m`` grown to ``shape`` with 1.0 at every (row, col) given: ``CSR.from_edges`` of
    its edges and these, by merging the few new keys into the sorted old ones (linear in
    the graph, not a sort of it: a write's mentions are added in milliseconds)."""
    width = max(shape[1], 1)
    old = m.row_of() * width + m.indices            # ascending: canonical row-major order
    new = np.sort(np.asarray(rows, dtype=np.int64) * width + np.asarray(cols, dtype=np.int64))
    new = new[distinct(new)]
    if len(old) and len(new):
        pos = np.searchsorted(old, new)
        fresh = old[np.minimum(pos, len(old) - 1)] != new
        fresh |= pos == len(old)
        keys = np.insert(old, pos[fresh], new[fresh])
    else:
        keys = new if len(new) else old
    r, c = np.divmod(keys, width)
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
    return CSR(indptr, c, unit_weights(len(c)), shape)


def _grow(sorted_pks: np.ndarray, order: np.ndarray, pks: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, sorted pks) with ``pks`` (indices ``first``.. onward, none known) merged in."""
    by_pk = np.argsort(pks, kind="stable")
    pos = np.searchsorted(sorted_pks, pks[by_pk])
    return np.insert(order, pos, first + by_pk), np.insert(sorted_pks, pos, pks[by_pk])


def _index(known: np.ndarray, new: np.ndarray, sorter: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The index of every pk of ``new`` among ``known`` (index -> pk; ``sorter``: its
    argsort, when the caller holds it), the pks not known yet appended in the order they
    first appear in ``new``: (indices, the pks extended)."""
    idx = np.empty(len(new), dtype=np.int64)
    found = np.zeros(len(new), dtype=bool)
    if len(known) and len(new):
        if sorter is None:
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
    pks: ``_read``, ``_pairs``) added: built in one sort, or merged into ``base``."""
    empty = np.zeros(0, dtype=np.int64)
    ppks, epks = new
    if base is None:
        rows, passage_pks = _index(empty, ppks)
        cols, entity_pks = _index(empty, epks)
        return _build(epoch, seq, passage_pks, entity_pks, rows, cols)
    if not len(ppks):
        return replace(base, epoch=epoch, seq=seq)
    rows, passage_pks = _index(np.asarray(base.passage_pks), ppks, base.order)
    cols, entity_pks = _index(np.asarray(base.entity_pks), epks, base.entity_order)
    shape = (len(passage_pks), len(entity_pks))
    order, passage_sorted = _grow(base.passage_sorted, base.order, passage_pks[len(base.passage_pks):],
                                  len(base.passage_pks))
    entity_order, entity_sorted = _grow(base.entity_sorted, base.entity_order, entity_pks[len(base.entity_pks):],
                                        len(base.entity_pks))
    return MentionGraph(epoch, seq, _merge(base.W, rows, cols, shape), _merge(base.WT, cols, rows, shape[::-1]),
                        passage_pks, entity_pks, order, passage_sorted, entity_order, entity_sorted,
                        base.db_path, base.sidecar_edges)


def mention_graph(conn: sqlite3.Connection, cache: GraphCache | None = None, sidecar_min: int = 0,
                  sidecar_tail: float = 0.05) -> MentionGraph:
    """The current mention graph of ``conn``'s database, from ``cache`` (default: the
    process-wide ``DEFAULT``); ``sidecar_*``: ``GraphCache.graph``."""
    return (cache or DEFAULT).graph(conn, sidecar_min, sidecar_tail)


def forget_graphs() -> None:
    """Drop every graph of the process-wide cache (tests, benchmarks)."""
    DEFAULT.clear()
