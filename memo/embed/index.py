"""The in-memory vector index: one model's vectors per (database, model), kept in step with
the ``vectors`` table without reloading per query.

Rows live in two parts:
* the *base*: a memory-mapped sidecar file (``memo.embed.sidecar``: float32, int8 + scale,
  pks, seqs), validated against the database when opened, for models with at least
  ``vectors.sidecar_min`` vectors in a database file;
* the *tail*: rows read from the table into a growing float32 matrix (everything, when
  there is no sidecar).  When the tail passes ``vectors.sidecar_tail`` of the base, the
  index rewrites the sidecar from both (no database read) and maps it again.

Freshness costs one cheap query per search (``_probe``): the ``vectors_epoch`` in
``memo_meta`` and ``MAX(seq)`` of ``vectors``.
* epoch changed -> rows went away (passages deleted, vectors dropped): reload fully (the
  old sidecar is stale by the same test and is rebuilt).
* max(seq) grew -> load only rows with ``seq > last_seen`` (AUTOINCREMENT: seq only grows,
  and SQLite's single writer commits them in order, so a reader never skips one).

Search (``search``):
* exact (fewer than ``vectors.quantised_min`` vectors, or no int8 kernel installed):
  ``scores = M @ q`` over every row, float32;
* quantised: an int8 scan of the base (``memo.embed.quantise``) keeps the best
  ``vectors.shortlist x k`` rows, whose float32 vectors are then read from the sidecar
  file (pread, so they do not stay resident) and scored exactly; tail rows are scored
  exactly in memory.  The cosines returned are exact in both paths; the quantised one may miss a row
  whose int8 score fell out of the shortlist (recall@100 measured in bench/vectors_scale.py).
Either way the scope filter is a mask *before* top-k, and rows committed after the
search's snapshot (loaded by another thread's newer snapshot) are masked by their seq, so
a search never returns a vector its snapshot cannot see.
"""

from __future__ import annotations

import mmap
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from memo.embed import quantise, sidecar
from memo.store.connect import db_file
from memo.store.dialect import is_postgres

_SCOPE_CACHE = 16  # distinct (generation, where, params) entries kept per index
PACK_AFTER = 2     # full int8 scans of one base before it is packed (VectorIndex._packed_for)


def db_key(conn: sqlite3.Connection) -> str:
    """The main database file of ``conn`` ('' for in-memory: then keyed by the object): the
    key of the per-process matrices (passages: ``memo.embed.service``, facts:
    ``memo.embed.fact_vectors``).  PostgreSQL: keyed by its URL; its vectors are searched
    in the server (``memo.store.postgres.vectors``), never loaded into this index."""
    if is_postgres(conn):
        return f"memory:{conn.url}"
    return db_file(conn) or f"memory:{id(conn)}"


class VectorIndex:
    table = "vectors"          # FactVectorIndex reads fact_vectors and never keeps a sidecar

    def __init__(self, model_id: str, dimensions: int, db_path: str | None = None) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        self.db_path = db_path if db_path and not db_path.startswith("memory:") else None
        self.cfg: Any = None       # the profile's ``index`` section of the last search (None: exact, no sidecar)
        self._lock = threading.RLock()
        self._base: sidecar.Sidecar | None = None
        self._mat = np.zeros((0, dimensions), dtype=np.float32)   # tail: capacity rows; first _n used
        self._pks = np.zeros(0, dtype=np.int64)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._last_seq = 0
        self._epoch: str | None = None
        self._scope: OrderedDict[tuple, tuple[Any, np.ndarray]] = OrderedDict()
        self._mask_for: tuple | None = None
        self._mask_ref: np.ndarray | None = None
        self._mask_rows: tuple[np.ndarray, np.ndarray] | None = None
        self.reloads = 0           # full reloads (tests check that appends don't reload)
        self.loads = 0             # incremental loads
        self.load_ms = 0.0         # time spent reading vectors into the matrix (trace: matrix_load)
        self.sidecar_note = ""     # why the sidecar was (not) used, for benches and doctor-like tools
        self.last_path = ""        # "exact" | "int8" : how the last search scanned
        self._packed: object | None = None     # quantise.pack of _packed_base's int8 rows
        self._packed_base: sidecar.Sidecar | None = None
        self._full_scans = 0

    def __len__(self) -> int:
        return self._n + (self._base.rows if self._base is not None else 0)

    @property
    def base_rows(self) -> int:
        return self._base.rows if self._base is not None else 0

    # -- keeping in step -------------------------------------------------------------------

    def _probe(self, conn: sqlite3.Connection) -> tuple[str, int]:
        return sidecar.db_state(conn, "vectors")

    def _sidecar_wanted(self) -> bool:
        return self.db_path is not None and self.table == "vectors" and self.cfg is not None \
            and self.cfg.sidecar_min > 0

    def refresh(self, conn: sqlite3.Connection, cfg: Any = None) -> tuple[str, int]:
        """Bring the index up to the caller's snapshot; returns its (epoch, max seq)."""
        if cfg is not None:
            self.cfg = cfg
        epoch, max_seq = self._probe(conn)
        with self._lock:
            if epoch != self._epoch or max_seq < self._last_seq:
                # Rows went away (epoch), or seq went backwards without an epoch bump (a
                # restored or rebuilt file): start again from the sidecar or the table.
                self._reset()
                self._epoch = epoch
                self.reloads += 1
                t0 = time.perf_counter()
                try:
                    self._open_base(conn)
                finally:
                    self.load_ms += (time.perf_counter() - t0) * 1000.0
            if max_seq > self._last_seq:
                self._load_since(conn, self._last_seq, max_seq)
                self._maybe_write_sidecar(conn, epoch)
        return epoch, max_seq

    def _reset(self) -> None:
        self._base = None
        self._packed, self._packed_base, self._full_scans = None, None, 0
        self._mat = np.zeros((0, self.dimensions), dtype=np.float32)
        self._pks = np.zeros(0, dtype=np.int64)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._last_seq = 0
        self._mask_for = None

    def _open_base(self, conn: sqlite3.Connection) -> None:
        if not self._sidecar_wanted():
            return
        sc, why = sidecar.open_valid(conn, sidecar.sidecar_path(self.db_path, self.model_id),  # type: ignore[arg-type]
                                     self.model_id, self.dimensions)
        self.sidecar_note = why
        if sc is None:
            # Missing or stale: build it straight from the table, a chunk at a time, when
            # the model is big enough (loading 1M rows into memory first would hold them
            # twice).  Smaller models load from the table and may write it later.
            n = int(conn.execute("SELECT count(*) FROM vectors WHERE model_id = ?", (self.model_id,)).fetchone()[0])
            if n >= self.cfg.sidecar_min:
                try:
                    sc = sidecar.build(conn, sidecar.sidecar_path(self.db_path, self.model_id),  # type: ignore[arg-type]
                                       self.model_id, self.dimensions)
                    self.sidecar_note = "written"
                except (OSError, ValueError) as exc:
                    self.sidecar_note = f"sidecar not written: {exc}"
        if sc is not None:
            self._base = sc
            self._last_seq = sc.max_seq

    def _maybe_write_sidecar(self, conn: sqlite3.Connection, epoch: str) -> None:
        """Write the sidecar from the loaded rows when the model has ``sidecar_min`` vectors
        and the tail outgrew ``sidecar_tail`` of the base (or there is no base yet)."""
        if not self._sidecar_wanted() or len(self) < self.cfg.sidecar_min:
            return
        if self._base is not None and self._n <= self.cfg.sidecar_tail * self._base.rows:
            return
        base = self._base

        def chunks():
            if base is not None:
                for s in range(0, base.rows, quantise.CHUNK_ROWS):
                    e = min(base.rows, s + quantise.CHUNK_ROWS)
                    yield base.pks[s:e], base.seqs[s:e], base.f32[s:e]
            if self._n:
                yield self._pks[: self._n], self._seqs[: self._n], self._mat[: self._n]

        t0 = time.perf_counter()
        try:
            sc = sidecar.write(sidecar.sidecar_path(self.db_path, self.model_id),  # type: ignore[arg-type]
                               model_id=self.model_id, dims=self.dimensions, epoch=epoch,
                               max_seq=self._last_seq, rows=len(self), chunks=chunks())
        except (OSError, ValueError) as exc:   # a read-only folder, a full disk: keep the rows in memory
            self.sidecar_note = f"sidecar not written: {exc}"
            return
        finally:
            self.load_ms += (time.perf_counter() - t0) * 1000.0
        self._base = sc
        self._mat = np.zeros((0, self.dimensions), dtype=np.float32)
        self._pks = np.zeros(0, dtype=np.int64)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._mask_for = None
        self.sidecar_note = "written"

    def _load_since(self, conn: sqlite3.Connection, seq: int, max_seq: int) -> None:
        t0 = time.perf_counter()
        try:
            self._read_since(conn, seq, max_seq)
        finally:
            self.load_ms += (time.perf_counter() - t0) * 1000.0

    def _read_since(self, conn: sqlite3.Connection, seq: int, max_seq: int) -> None:
        # ``+model_id``: the rowid range over the rows after ``seq``, not the (model_id,
        # passage) index over every row of the model and a sort (82 ms for 10 rows at 1M)
        rows = conn.execute("SELECT seq, passage_pk, vec FROM vectors WHERE +model_id = ? AND seq > ? "
                            "ORDER BY seq", (self.model_id, seq)).fetchall()
        self._add_rows(rows, max_seq)

    def _add_rows(self, rows: list, max_seq: int) -> None:
        """Append (seq, pk, blob) rows read from the table to the tail."""
        self.loads += 1
        if rows:
            blob = b"".join(r[2] for r in rows)
            new = np.frombuffer(blob, dtype="<f4")
            if new.size != len(rows) * self.dimensions:
                raise ValueError(f"vectors of model {self.model_id} are not {self.dimensions}-d")
            self._append(np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
                         new.reshape(len(rows), self.dimensions),
                         np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        # Rows of other models also advance seq; remember the highest seen so the next
        # probe does not keep reloading them.
        self._last_seq = max(self._last_seq, int(rows[-1][0]) if rows else 0, max_seq)

    def _append(self, pks: np.ndarray, vecs: np.ndarray, seqs: np.ndarray | None = None) -> None:
        need = self._n + len(pks)
        if need > self._mat.shape[0]:
            cap = max(need, int(self._mat.shape[0] * 1.5) + 1024)   # amortised growth
            mat = np.zeros((cap, self.dimensions), dtype=np.float32)
            mat[: self._n] = self._mat[: self._n]
            ids = np.zeros(cap, dtype=np.int64)
            ids[: self._n] = self._pks[: self._n]
            sq = np.zeros(cap, dtype=np.int64)
            sq[: self._n] = self._seqs[: self._n]
            self._mat, self._pks, self._seqs = mat, ids, sq
        self._mat[self._n:need] = vecs
        self._pks[self._n:need] = pks
        self._seqs[self._n:need] = seqs if seqs is not None else 0
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

    def _rows_allowed(self, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(base row indices, tail row indices) whose pk is in ``allowed`` (cached per
        allowed array and index shape)."""
        key = (id(allowed), self.base_rows, self._n, len(allowed))
        if self._mask_for == key and self._mask_ref is allowed:
            return self._mask_rows  # type: ignore[return-value]
        base = (np.flatnonzero(np.isin(self._base.pks, allowed)) if self._base is not None
                else np.zeros(0, dtype=np.int64))
        tail = np.flatnonzero(np.isin(self._pks[: self._n], allowed))
        self._mask_for, self._mask_ref, self._mask_rows = key, allowed, (base, tail)
        return base, tail

    # -- search ----------------------------------------------------------------------------

    def _rows_not_excluded(self, excluded: frozenset[int]) -> tuple[np.ndarray, np.ndarray]:
        """(base rows, tail rows) whose pk is not in ``excluded`` (a few out-of-scope pks:
        ``memo.retrieve.scope.scope_stats``), cached per excluded set and index shape."""
        key = ("x", id(excluded), self.base_rows, self._n, len(excluded))
        if self._mask_for == key:
            return self._mask_rows  # type: ignore[return-value]
        ex = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
        base = (np.flatnonzero(~np.isin(self._base.pks, ex)) if self._base is not None
                else np.zeros(0, dtype=np.int64))
        tail = np.flatnonzero(~np.isin(self._pks[: self._n], ex))
        self._mask_for, self._mask_ref, self._mask_rows = key, None, (base, tail)
        return base, tail

    def _rows_in_scope(self, allowed_pks: np.ndarray | None, excluded: frozenset[int] | None,
                       snap_seq: int) -> tuple | None:
        """(base, base rows, tail rows, every row?, tail matrix, tail pks) a search under
        this scope may see in a snapshot whose last vector seq is ``snap_seq``; None when
        the index is empty.  Rows loaded for a newer snapshot (another thread's) are left out."""
        with self._lock:
            base, n = self._base, self._n
            if base is None and n == 0:
                return None
            if allowed_pks is None and not excluded:
                brows = np.arange(base.rows) if base is not None else np.zeros(0, dtype=np.int64)
                trows = np.arange(n)
                everything = True
            elif allowed_pks is None:
                brows, trows = self._rows_not_excluded(excluded)  # type: ignore[arg-type]
                everything = False
            else:
                brows, trows = self._rows_allowed(allowed_pks)
                everything = base is not None and brows.size == base.rows and trows.size == n
            tail_mat, tail_pks, tail_seqs = self._mat[:n], self._pks[:n], self._seqs[:n]
            newer = self._last_seq > snap_seq  # rows loaded for a newer snapshot than this one
        if newer:
            if base is not None:
                brows = brows[base.seqs[brows] <= snap_seq]
            trows = trows[tail_seqs[trows] <= snap_seq]
            everything = False
        return base, brows, trows, everything, tail_mat, tail_pks

    def visible_in_scope(self, conn: sqlite3.Connection, allowed_pks: np.ndarray | None,
                         excluded: frozenset[int] | None = None) -> int:
        """How many of this model's vectors a search under this scope sees in ``conn``'s
        snapshot: the in-scope passages that have a vector, counted on the matrix the
        search just masked (the masks are cached) instead of by a query over every passage
        (issue 31.2: a cold search at 1M spent 5 s counting them in SQL).  Exact while
        every vector row has its passage, which foreign keys keep (a file written with
        them off is repaired by ``memo reindex``)."""
        _, snap_seq = self.refresh(conn)
        rows = self._rows_in_scope(allowed_pks, excluded, snap_seq)
        return 0 if rows is None else int(rows[1].size + rows[2].size)

    def search(self, conn: sqlite3.Connection, query_vec: np.ndarray, allowed_pks: np.ndarray | None,
               k: int, cfg: Any = None, excluded: frozenset[int] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (pk, cosine) among the allowed passages, best first.  ``cfg``: the
        search profile's ``index`` section; None keeps the
        last one (or exact, without sidecar).  ``excluded`` (with ``allowed_pks`` None):
        the scope is everything but these pks, which spares reading every allowed pk."""
        _, snap_seq = self.refresh(conn, cfg)
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if k <= 0:
            return []
        rows = self._rows_in_scope(allowed_pks, excluded, snap_seq)
        if rows is None:
            return []
        base, brows, trows, everything, tail_mat, tail_pks = rows
        n = tail_mat.shape[0]
        cands: list[tuple[np.ndarray, np.ndarray]] = []       # (pks, exact scores)
        if trows.size:
            ts = tail_mat[trows] @ q if trows.size * 2 < n else (tail_mat @ q)[trows]
            cands.append((tail_pks[trows], ts))
        if base is not None and brows.size:
            cfg = self.cfg
            short = max(k, int(cfg.shortlist * k)) if cfg is not None else 0
            use_int8 = (cfg is not None and len(self) >= cfg.quantised_min and brows.size > short
                        and quantise.kernel() is not None)
            self.last_path = "int8" if use_int8 else "exact"
            if use_int8:
                cands.append(self._int8_shortlist(base, brows, everything, q, short))
            elif everything:
                cands.append((np.asarray(base.pks), base.f32 @ q))
            else:
                # Gather only when the scope is narrow; otherwise one contiguous matvec is
                # cheaper than copying most of the matrix.
                bs = base.f32[brows] @ q if brows.size * 2 < base.rows else (base.f32 @ q)[brows]
                cands.append((base.pks[brows], bs))
        else:
            self.last_path = "exact"
        if not cands:
            return []
        pks = np.concatenate([c[0] for c in cands])
        scores = np.concatenate([c[1] for c in cands]).astype(np.float32, copy=False)
        kk = min(k, scores.size)
        top = np.argpartition(-scores, kk - 1)[:kk] if kk < scores.size else np.arange(scores.size)
        # Sort by score, ties by pk so results are deterministic.
        order = np.lexsort((pks[top], -scores[top]))
        top = top[order]
        return [(int(pks[i]), float(scores[i])) for i in top]

    def warm(self) -> None:
        """Map the sidecar's int8 rows into this process ahead of its first full scan (the
        semantic arm's prepare, while a cold process's model loads): the scan then reads
        mapped memory instead of faulting in ~94k pages at 1M x 384 (~20 ms of its ~45).
        Nothing to do once a scan ran (the pages are mapped, or packed and dropped), for
        the exact path, or without an int8 kernel."""
        base = self._base
        cfg = self.cfg
        if (base is None or base.rows == 0 or self._full_scans or self._packed is not None or cfg is None
                or len(self) < cfg.quantised_min or quantise.kernel() is None):
            return
        flat = np.asarray(base.i8).reshape(-1)
        int(flat[::mmap.PAGESIZE].sum())        # one byte per page: the kernel maps them

    def _packed_for(self, base: sidecar.Sidecar) -> object | None:
        """The packed copy of ``base``'s int8 rows, made on its PACK_AFTER-th full scan:
        a one-shot CLI search never pays the packing (docs/results-log.md "Vectors at
        scale"), a server or an eval replay pays it once and scans in about half the time
        after.  Once packed, the mapped int8 rows are dropped from the process's resident set (the packed copy
        replaces them for full scans; narrow scopes read the few rows they need again)."""
        with self._lock:
            if self._packed_base is not base:
                self._packed_base, self._packed, self._full_scans = base, None, 0
            self._full_scans += 1
            if self._packed is None and self._full_scans >= PACK_AFTER:
                self._packed = quantise.pack(base.i8)
                if self._packed is not None:
                    _drop_resident(base.i8)
            return self._packed

    def _int8_shortlist(self, base: sidecar.Sidecar, brows: np.ndarray,
                        everything: bool, q: np.ndarray, short: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``short`` best base rows by int8 score, rescored with their exact float32
        vectors (read from the sidecar file): (pks, exact cosines).  ``brows`` already
        excludes rows the caller's snapshot cannot see (scope mask, seq mask); a base whose
        rows went away in this snapshot was replaced by ``refresh`` (the epoch moved)."""
        if everything:
            approx = quantise.approx_scores(q, base.i8, base.scale, self._packed_for(base))
            best = np.argpartition(-approx, short - 1)[:short]
        elif brows.size * 2 < base.rows:           # narrow scope: scan only its rows
            approx = quantise.approx_scores(q, base.i8[brows], base.scale[brows])
            best = brows[np.argpartition(-approx, short - 1)[:short]]
        else:                                      # broad scope: scan all, mask the rest
            approx = quantise.approx_scores(q, base.i8, base.scale, self._packed_for(base))
            masked = np.full(base.rows, -np.inf, dtype=np.float32)
            masked[brows] = approx[brows]
            best = np.argpartition(-masked, short - 1)[:short]
        best.sort()                                # file order: the reads go forward
        return base.pks[best], base.rows_f32(best) @ q


def _drop_resident(arr: np.ndarray) -> None:
    """Let the kernel drop a memory-mapped array's pages from this process (they stay in
    the page cache; a later read maps them again).  Linux; elsewhere a no-op."""
    advise = getattr(getattr(arr, "_mmap", None), "madvise", None)    # numpy.memmap's own map
    if advise is not None and hasattr(mmap, "MADV_DONTNEED"):
        try:
            advise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


def sidecar_file(db_path: str | Path, model_id: str) -> Path:
    """Where the sidecar of (database, model) lives (``memo reindex``, tests, benches)."""
    return sidecar.sidecar_path(db_path, model_id)
