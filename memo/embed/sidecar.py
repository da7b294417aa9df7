"""The vector sidecar: one model's vectors as memory-mapped arrays in a file beside the
database (``<db>-vectors-<model id>.bin``), so a process maps them instead of decoding
100k-1M blobs row by row (issue 16.5), and the int8 copy the quantised scan reads
(issue 16.3).

The ``vectors`` table stays canonical: the sidecar is a derived index, written from it
(``build``, ``memo reindex``) or from an index's loaded arrays (``write``), and trusted only
after ``open_valid`` checked it against the database:

* the format, model id and dimensions;
* ``vectors_epoch`` (``memo_meta``) equal to the one it was built at: any deletion of
  passages or vectors bumps the epoch, so a sidecar holding a row that is gone is stale;
* its ``max_seq`` not above the database's ``MAX(seq)`` (a restored or rebuilt file);
* the count of the model's rows with ``seq <= max_seq`` equal to its row count (from the
  count the schema's triggers keep, ``rows_up_to``: no scan of the table);
* up to ``_SAMPLES`` rows (first, last, evenly spaced) present in the table with the same
  passage pk and the same CRC-32 of the float32 blob (another database of the same shape).

Rows added after it (``seq > max_seq``) are read from the table by the index as usual.
A stale or unreadable sidecar is never used; the index rebuilds it or reads the table.

Layout: 8-byte magic, 4-byte header length, a JSON header (fields above + array offsets),
then the arrays, each aligned to 4 KiB: pks int64[n], seqs int64[n], scale float32[n],
i8 int8[n, d] (``memo.embed.quantise``), f32 float32[n, d].  Written under a temporary
name, fsynced, then ``os.replace`` d: a reader maps either the old file or the new one,
never half of one (a mapped old file stays valid after the rename).
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import weakref
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memo.embed.quantise import CHUNK_ROWS, quantise_rows
from memo.store.migrations import VECTOR_COUNTS_FROM, user_version
from memo.store.temp_names import temp_beside

MAGIC = b"MEMOVEC1"
FORMAT = 1
_ALIGN = 4096
_SAMPLES = 8


def sidecar_path(db_path: str | Path, model_id: str) -> Path:
    return Path(f"{db_path}-vectors-{model_id}.bin")


@dataclass(frozen=True)
class Sidecar:
    path: Path
    model_id: str
    dims: int
    rows: int
    max_seq: int
    epoch: str
    pks: np.ndarray            # int64 (n,), memory-mapped
    seqs: np.ndarray           # int64 (n,)
    scale: np.ndarray          # float32 (n,): int8 row i times scale[i] ~ float32 row i
    i8: np.ndarray             # int8 (n, d)
    f32: np.ndarray            # float32 (n, d)
    samples: tuple[tuple[int, int, int], ...] = ()   # (seq, passage pk, CRC-32 of the blob)
    fd: int = -1               # the mapped file, kept open: a rewrite replaces the path, not it
    f32_offset: int = 0

    def rows_f32(self, rows: np.ndarray) -> np.ndarray:
        """float32 rows by index, read with pread from the file this sidecar mapped: the
        int8 path's rescoring touches a few hundred rows per search, and reading them
        through the page cache keeps them out of the process's resident memory (mapping
        them would, over many searches, make the whole float32 matrix resident)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not hasattr(os, "pread"):                   # no pread (Windows): through the map
            return np.array(self.f32[rows])
        out = np.empty((len(rows), self.dims), dtype=np.float32)
        width = self.dims * 4
        for i, r in enumerate(rows.tolist()):
            buf = os.pread(self.fd, width, self.f32_offset + r * width)
            if len(buf) != width:
                raise OSError(f"short read from {self.path}")
            out[i] = np.frombuffer(buf, dtype="<f4")
        return out


def db_state(conn: sqlite3.Connection, table: str = "vectors") -> tuple[str, int]:
    """(vectors_epoch, MAX(seq)) as the caller's snapshot sees them."""
    row = conn.execute(
        "SELECT (SELECT value FROM memo_meta WHERE key = 'vectors_epoch'), "
        f"(SELECT COALESCE(MAX(seq), 0) FROM {table})").fetchone()
    return str(row[0]), int(row[1])


def _crc(vec: np.ndarray) -> int:
    return zlib.crc32(np.asarray(vec, dtype="<f4").tobytes())


def _layout(n: int, d: int, header_len: int) -> dict[str, tuple[int, str, list[int]]]:
    def up(x: int) -> int:
        return (x + _ALIGN - 1) // _ALIGN * _ALIGN
    off = up(12 + header_len)
    out: dict[str, tuple[int, str, list[int]]] = {}
    for name, dtype, shape in (("pks", "<i8", [n]), ("seqs", "<i8", [n]), ("scale", "<f4", [n]),
                               ("i8", "i1", [n, d]), ("f32", "<f4", [n, d])):
        out[name] = (off, dtype, shape)
        off = up(off + int(np.prod(shape)) * np.dtype(dtype).itemsize)
    out["end"] = (off, "", [])
    return out


def write(path: Path, *, model_id: str, dims: int, epoch: str, max_seq: int, rows: int,
          chunks: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Sidecar:
    """Write a sidecar from ``chunks`` of (pks, seqs, float32 rows), ``rows`` in all, in seq
    order; returns it opened.  Raises OSError when the folder is not writable."""
    sample_at = sorted({int(i) for i in np.linspace(0, rows - 1, _SAMPLES)}) if rows else []
    # The header's length must be known before the arrays are placed: reserve room for the
    # samples (filled in after the data) by padding the JSON to a fixed size.
    header_room = 4096
    layout = _layout(rows, dims, header_room)
    tmp = temp_beside(path)
    try:
        with open(tmp, "wb") as fh:
            fh.truncate(layout["end"][0])
        arrays = {name: np.memmap(tmp, dtype=dt, mode="r+", offset=off, shape=tuple(shape))
                  for name, (off, dt, shape) in layout.items() if name != "end" and rows}
        at = 0
        samples: list[list[int]] = []
        for pks, seqs, vecs in chunks:
            m = len(pks)
            if at + m > rows:
                raise ValueError("more vector rows than counted")
            vecs = np.asarray(vecs, dtype=np.float32).reshape(m, dims)
            q, scale = quantise_rows(vecs)
            arrays["pks"][at:at + m] = pks
            arrays["seqs"][at:at + m] = seqs
            arrays["scale"][at:at + m] = scale
            arrays["i8"][at:at + m] = q
            arrays["f32"][at:at + m] = vecs
            for i in sample_at:
                if at <= i < at + m:
                    samples.append([int(seqs[i - at]), int(pks[i - at]), _crc(vecs[i - at])])
            at += m
        if at != rows:
            raise ValueError(f"sidecar got {at} rows, expected {rows}")
        for arr in arrays.values():
            arr.flush()
        del arrays
        header = json.dumps({"format": FORMAT, "model_id": model_id, "dims": dims, "rows": rows,
                             "max_seq": int(max_seq), "epoch": str(epoch), "samples": samples,
                             "layout": {k: v for k, v in layout.items() if k != "end"}}).encode()
        if len(header) > header_room:
            raise ValueError("sidecar header too long")
        with open(tmp, "r+b") as fh:
            fh.write(MAGIC + struct.pack("<I", len(header)) + header)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    opened = _open(path)
    if opened is None:
        raise OSError(f"sidecar {path} unreadable right after writing it")
    return opened


def build(conn: sqlite3.Connection, path: Path, model_id: str, dims: int) -> Sidecar:
    """Write the sidecar of ``model_id`` from the ``vectors`` table, read in one snapshot
    (the caller's transaction, else one opened here), ``CHUNK_ROWS`` rows at a time."""
    from memo.store.connect import read_tx

    with read_tx(conn):
        epoch, max_seq = db_state(conn)
        rows = int(conn.execute("SELECT count(*) FROM vectors WHERE model_id = ? AND seq <= ?",
                                (model_id, max_seq)).fetchone()[0])

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
            after = 0
            while True:
                # ``+model_id``: a rowid range per chunk, not the model's whole index and a sort
                got = conn.execute("SELECT seq, passage_pk, vec FROM vectors WHERE +model_id = ? AND seq > ? "
                                   "AND seq <= ? ORDER BY seq LIMIT ?",
                                   (model_id, after, max_seq, CHUNK_ROWS)).fetchall()
                if not got:
                    return
                vecs = np.frombuffer(b"".join(r[2] for r in got), dtype="<f4")
                if vecs.size != len(got) * dims:
                    raise ValueError(f"vectors of model {model_id} are not {dims}-d")
                seqs = np.fromiter((r[0] for r in got), dtype=np.int64, count=len(got))
                pks = np.fromiter((r[1] for r in got), dtype=np.int64, count=len(got))
                yield pks, seqs, vecs.reshape(len(got), dims)
                after = int(seqs[-1])

        return write(path, model_id=model_id, dims=dims, epoch=epoch, max_seq=max_seq, rows=rows,
                     chunks=chunks())


def _open(path: Path) -> Sidecar | None:
    """Map a sidecar file (no database checks); None if missing or malformed."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
            if len(head) != 12 or head[:8] != MAGIC:
                return None
            (hlen,) = struct.unpack("<I", head[8:])
            meta = json.loads(fh.read(hlen))
        if meta.get("format") != FORMAT:
            return None
        n, d = int(meta["rows"]), int(meta["dims"])
        size = path.stat().st_size
        arrays: dict[str, np.ndarray] = {}
        for name, (off, dt, shape) in meta["layout"].items():
            if off + int(np.prod(shape)) * np.dtype(dt).itemsize > size:
                return None
            arrays[name] = (np.memmap(path, dtype=dt, mode="r", offset=off, shape=tuple(shape))
                            if n else np.zeros(shape, dtype=dt))
        fd = os.open(path, os.O_RDONLY)
        sc = Sidecar(path=path, model_id=str(meta["model_id"]), dims=d, rows=n,
                     max_seq=int(meta["max_seq"]), epoch=str(meta["epoch"]),
                     pks=arrays["pks"], seqs=arrays["seqs"], scale=arrays["scale"],
                     i8=arrays["i8"], f32=arrays["f32"],
                     samples=tuple((int(s), int(p), int(c)) for s, p, c in meta.get("samples", [])),
                     fd=fd, f32_offset=int(meta["layout"]["f32"][0]))
        weakref.finalize(sc, os.close, fd)
        return sc
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError):
        return None


def open_valid(conn: sqlite3.Connection, path: Path, model_id: str, dims: int) -> tuple[Sidecar | None, str]:
    """The sidecar at ``path`` if it matches the database as the caller's snapshot sees it
    (module docstring), else (None, why)."""
    if not path.exists():
        return None, "no sidecar"
    sc = _open(path)
    if sc is None:
        return None, "unreadable sidecar"
    if sc.model_id != model_id or sc.dims != dims:
        return None, f"sidecar is for {sc.model_id} ({sc.dims}-d)"
    epoch, max_seq = db_state(conn)
    if sc.epoch != epoch:
        return None, f"stale sidecar (epoch {sc.epoch}, database {epoch})"
    if sc.max_seq > max_seq:
        return None, f"sidecar is ahead of the database (seq {sc.max_seq} > {max_seq})"
    count = rows_up_to(conn, model_id, sc.max_seq)
    if count != sc.rows:
        return None, f"sidecar has {sc.rows} rows, the database {count}"
    for seq, pk, crc in sc.samples:
        row = conn.execute("SELECT passage_pk, vec FROM vectors WHERE seq = ? AND model_id = ?",
                           (seq, model_id)).fetchone()
        if row is None or int(row[0]) != pk or zlib.crc32(row[1]) != crc:
            return None, f"sidecar row seq {seq} differs from the database"
    return sc, "ok"


def rows_up_to(conn: sqlite3.Connection, model_id: str, max_seq: int) -> int:
    """The model's vector rows with ``seq <= max_seq`` in ``conn``'s snapshot: the count the
    triggers keep (schema v7, ``memo.store.migrations.m007_vector_counts``) less the rows
    written after ``max_seq`` (a rowid range over those few), or, in a database read at an
    older schema, a count of the range."""
    if user_version(conn) >= VECTOR_COUNTS_FROM:
        row = conn.execute("SELECT rows FROM vector_counts WHERE model_id = ?", (model_id,)).fetchone()
        # ``+model_id``: the rowid range over the few rows after, not the (model_id, passage)
        # index over all of the model's rows (84 ms against 0.9 at 1M)
        after = conn.execute("SELECT count(*) FROM vectors WHERE seq > ? AND +model_id = ?",
                             (max_seq, model_id)).fetchone()[0]
        return (int(row[0]) if row is not None else 0) - int(after)
    return int(conn.execute("SELECT count(*) FROM vectors WHERE model_id = ? AND seq <= ?",
                            (model_id, max_seq)).fetchone()[0])


def rebuild_all(conn: sqlite3.Connection, db_path: str | Path, min_rows: int) -> dict[str, int]:
    """``memo reindex``: write the sidecar of every model that has one already or at least
    ``min_rows`` vectors (``vectors.sidecar_min``; 0 = only existing ones); remove the
    sidecar of a model with no vector left.  Returns {model id: rows written}."""
    done: dict[str, int] = {}
    counts = {str(r[0]): int(r[1]) for r in conn.execute(
        "SELECT model_id, count(*) FROM vectors GROUP BY model_id")}
    prefix = Path(f"{db_path}-vectors-")
    for old in prefix.parent.glob(prefix.name + "*.bin"):
        model = old.name[len(prefix.name):-len(".bin")]
        if model not in counts:
            old.unlink(missing_ok=True)
    for model, n in sorted(counts.items()):
        path = sidecar_path(db_path, model)
        if not path.exists() and (min_rows <= 0 or n < min_rows):
            continue
        dims = int(conn.execute("SELECT length(vec) / 4 FROM vectors WHERE model_id = ? LIMIT 1",
                                (model,)).fetchone()[0])
        done[model] = build(conn, path, model, dims).rows
    return done
