"""int8 quantisation of unit vectors and the int8 dot-product scan (issue 16.3).

Each row is scaled on its own: ``x8 = round(x / s)`` with ``s = max|x| / 127``, so a dot
product ``x8 . q8 * s * s_q`` approximates the cosine to about 1e-3 and keeps the ranking
of well-separated candidates.  The scan only *shortlists*: the semantic index rescores the
shortlist with the exact float32 vectors (``memo.embed.index``), so the scores a search
returns are the exact cosines.

numpy has no BLAS kernel for int8 (an int8 matvec over 1M x 384 takes seconds), so the scan
uses NumKong's SIMD kernels (``numkong.cdist``, AVX-512 VNNI / AVX2 / NEON, picked at run
time; the successor of SimSIMD, which is accepted too).  Without either library
``kernel()`` is None and the index keeps the exact float32 scan: slower and more memory
at 1M, never different answers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

_QMAX = 127.0
# Rows quantised per step when building: bounds the float32 temporaries (a step of 65,536
# x 384 rows is 100 MB of float32).
CHUNK_ROWS = 65_536

# An unpacked scan of at least this many rows is split in two, the second half on a helper
# thread: the kernel releases the GIL, so the halves run on both cores (a fresh process's
# one-shot search scans unpacked; figures in docs/scale.md, "The int8 scan on both cores").
# Below it a thread's start costs more than half a scan saves.
SPLIT_ROWS = 262_144

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]
_kernel: Kernel | None = None
_kernel_name = ""
_loaded = False


def quantise_rows(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 per-row scale) of a float32 matrix."""
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim != 2:
        raise ValueError("quantise_rows wants a 2-d matrix")
    peak = np.abs(mat).max(axis=1) if mat.shape[0] else np.zeros(0, dtype=np.float32)
    scale = np.where(peak > 0, peak / _QMAX, 1.0).astype(np.float32)
    q = np.rint(mat / scale[:, None])
    np.clip(q, -_QMAX, _QMAX, out=q)
    return q.astype(np.int8), scale


def quantise_query(vec: np.ndarray) -> tuple[np.ndarray, float]:
    rows, scale = quantise_rows(np.asarray(vec, dtype=np.float32).reshape(1, -1))
    return rows[0], float(scale[0])


def _load_kernel() -> None:
    global _kernel, _kernel_name, _loaded
    _loaded = True
    if os.environ.get("MEMO_NO_INT8_KERNEL"):      # tests and benches: force the fallback
        return
    try:
        import numkong as lib  # type: ignore[import-not-found]
        _kernel_name = f"numkong {getattr(lib, '__version__', '?')}"
    except ImportError:
        try:
            import simsimd as lib  # type: ignore[import-not-found,no-redef]
            _kernel_name = f"simsimd {getattr(lib, '__version__', '?')}"
        except ImportError:
            return

    def scan(q8: np.ndarray, rows8: np.ndarray) -> np.ndarray:
        out = lib.cdist(q8.reshape(1, -1), rows8, metric="dot", out_dtype="float32")
        return np.asarray(out, dtype=np.float32).reshape(-1)

    _kernel = scan


def pack(rows8: np.ndarray) -> object | None:
    """The int8 rows in NumKong's packed layout (``numkong.dots_pack``), or None when the
    installed library has no packed kernel.  A packed scan reads the same bytes in an order
    its SIMD / AMX kernels stream well and releases the GIL while it runs: about half
    ``cdist``'s time at 1M x 384, after a one-off packing (docs/results-log.md "Vectors at
    scale").  The scores are the same integers ``cdist`` returns."""
    if kernel() is None:                   # no int8 kernel at all (or MEMO_NO_INT8_KERNEL)
        return None
    try:
        import numkong as lib  # type: ignore[import-not-found]
    except ImportError:
        return None
    if not hasattr(lib, "dots_pack") or not hasattr(lib, "dots_packed"):
        return None
    return lib.dots_pack(np.ascontiguousarray(rows8))


def kernel() -> Kernel | None:
    """The int8 dot-product scan ``(q8 (d,), rows8 (n, d)) -> (n,) float32``, or None."""
    if not _loaded:
        _load_kernel()
    return _kernel


def kernel_name() -> str:
    """Which library scans (for traces and benches): '' when none is installed."""
    kernel()
    return _kernel_name


def reset_kernel() -> None:
    """Forget the loaded kernel (tests toggle MEMO_NO_INT8_KERNEL)."""
    global _kernel, _kernel_name, _loaded
    _kernel, _kernel_name, _loaded = None, "", False


def approx_scores(q: np.ndarray, rows8: np.ndarray, scale: np.ndarray, packed: object | None = None) -> np.ndarray:
    """Approximate cosines of ``q`` with every int8 row (float32, same order).  ``packed``:
    ``pack(rows8)`` of these very rows, scanned instead of ``rows8`` (same scores)."""
    scan = kernel()
    if scan is None:
        raise RuntimeError("no int8 kernel installed (numkong or simsimd)")
    q8, _ = quantise_query(q)
    if rows8.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    if packed is not None:
        import numkong as lib  # type: ignore[import-not-found]

        raw = np.asarray(lib.dots_packed(q8.reshape(1, -1), packed), dtype=np.float32).reshape(-1)
    elif rows8.shape[0] >= SPLIT_ROWS and (os.cpu_count() or 1) > 1:
        raw = _halves(scan, q8, rows8)
    else:
        raw = scan(q8, rows8)
    raw *= scale
    return raw


def _halves(scan: Kernel, q8: np.ndarray, rows8: np.ndarray) -> np.ndarray:
    """``scan(q8, rows8)``, its second half scanned on a helper thread meanwhile: the same
    per-row integers, concatenated in row order."""
    half = rows8.shape[0] // 2
    got: list[np.ndarray | BaseException | None] = [None]

    def second() -> None:
        try:
            got[0] = scan(q8, rows8[half:])
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            got[0] = exc

    helper = threading.Thread(target=second, name="memo-int8-scan")
    helper.start()
    try:
        first = scan(q8, rows8[:half])
    finally:
        helper.join()
    if isinstance(got[0], BaseException):
        raise got[0]
    return np.concatenate([first, got[0]])
