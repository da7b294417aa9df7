"""A compressed sparse row matrix in plain numpy: what the graph arm needs of one (issue
29.5: ``scipy.sparse`` took 160-200 ms to import, more than the whole first search of a
process on a 10k-passage database may take).

Same layout as scipy's CSR in canonical form (``indptr``, ``indices`` ascending within each
row, no duplicate, ``data``), so the walks read the same neighbours in the same order and
add the same numbers in the same order (``memo.graph.ppr``; tests/unit/entities/
test_graph_fast.py compares the results with scipy's bit for bit).  ``to_scipy`` hands the
same arrays to scipy where a caller wants its products (the exact power iteration,
``graph.epsilon = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def distinct(sorted_values: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array starts (bool mask).  ``np.unique``
    does the same but its first call imports numpy.ma (60 ms of a process's first search)."""
    start = np.ones(len(sorted_values), dtype=bool)
    start[1:] = sorted_values[1:] != sorted_values[:-1]
    return start


def unit_weights(n: int) -> np.ndarray:
    """``n`` weights of 1.0 (a mention edge's), as a read-only view of one number: allocating
    and first touching 8 bytes per edge cost a cold process 10-15 ms per matrix at 100k
    passages (1.2M edges), while the model's session was being built beside it."""
    return np.broadcast_to(np.float64(1.0), (n,))


@dataclass(frozen=True, slots=True)
class CSR:
    indptr: np.ndarray       # (rows + 1,) int64
    indices: np.ndarray      # (nnz,) int64, ascending within each row
    data: np.ndarray         # (nnz,) float64
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return int(len(self.indices))

    def row_of(self) -> np.ndarray:
        """The row of every stored entry (nnz,)."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """The column indices of these rows, concatenated in the order given."""
        rows = np.asarray(rows, dtype=np.int64)
        lens = self.indptr[rows + 1] - self.indptr[rows]
        total = int(lens.sum())
        offsets = np.repeat(self.indptr[rows] - (np.cumsum(lens) - lens), lens) + np.arange(total)
        return self.indices[offsets]

    def row_sums(self, x: np.ndarray) -> np.ndarray:
        """``self @ x`` for a vector ``x`` whose products with ``data`` are small integers
        (masks, counts): exact whatever the order of the additions."""
        return np.bincount(self.row_of(), weights=self.data * x[self.indices], minlength=self.shape[0])

    def transpose(self) -> CSR:
        """The transpose, canonical (indices ascending within each row)."""
        rows = self.row_of()                          # ascending: a stable sort by column keeps
        order = np.argsort(self.indices, kind="stable")   # each column's rows ascending
        counts = np.bincount(self.indices, minlength=self.shape[1])
        indptr = np.zeros(self.shape[1] + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return CSR(indptr, rows[order], self.data[order], (self.shape[1], self.shape[0]))

    def keep(self, entries: np.ndarray, data: np.ndarray | None = None) -> CSR:
        """The entries where ``entries`` (bool, nnz) is True, in order; ``data`` replaces
        the values (nnz,) before the selection."""
        values = self.data if data is None else data
        kept = np.bincount(self.row_of()[entries], minlength=self.shape[0])
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum(kept, out=indptr[1:])
        return CSR(indptr, self.indices[entries], values[entries], self.shape)

    def to_scipy(self) -> Any:
        from scipy import sparse

        # scipy gets arrays of its own (``data`` may be a read-only view: ``unit_weights``)
        return sparse.csr_matrix((np.array(self.data), self.indices, self.indptr), shape=self.shape)

    @classmethod
    def from_edges(cls, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> CSR:
        """1.0 at every (row, col) given, duplicates counted once (canonical)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        keys = np.sort(rows * max(shape[1], 1) + cols)
        keys = keys[distinct(keys)]
        r, c = np.divmod(keys, max(shape[1], 1))
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
        return cls(indptr, c, unit_weights(len(c)), shape)

    @classmethod
    def of(cls, m: Any) -> CSR:
        """A CSR of this one or of a scipy sparse matrix (canonical form)."""
        if isinstance(m, CSR):
            return m
        m = m.tocsr().copy()                          # sum_duplicates sorts in place
        m.sum_duplicates()
        return cls(np.asarray(m.indptr, dtype=np.int64), np.asarray(m.indices, dtype=np.int64),
                   np.asarray(m.data, dtype=np.float64), (int(m.shape[0]), int(m.shape[1])))
