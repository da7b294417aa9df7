"""The mention graph's sidecar: the graph of one database as memory-mapped arrays in a file
beside it (``<db>-graph.bin``), so a process's first graph search maps them instead of
reading every mention row and sorting them into matrices (issue 31.2: 12M mention rows at
1M passages took 11.6 s of a cold search's 19.6 s).

The ``mentions`` table stays canonical: the sidecar is a derived index, written by the
graph cache (``memo.graph.cache``) from a graph it holds, and trusted only after
``open_valid`` checked it against the database as the caller's snapshot sees it:

* the format;
* ``mentions_epoch`` equal to the one it was written at (every deletion of mention rows
  bumps it: a sidecar holding an edge that is gone is stale), the same test the in-memory
  cache makes;
* its ``seq`` not above the database's ``max(seq)`` (a restored or rebuilt file);
* up to ``_SAMPLES`` mention rows (evenly spaced over its edges) present with the same
  passage and entity (another database of the same shape).  The rows with a higher seq are
  read by the cache as usual.

Beside it may lie the title index of the same graph (``memo.graph.titles``: which entity
each passage's record title is; 3 s of a cold search at 1M) and the section index
(``memo.graph.sections``: which entity each passage's own heading names), each written once
a search computed it.

Layout: 8-byte magic, 4-byte header length, a JSON header (the fields above, each array's
offset, dtype and shape), then the arrays, each aligned to 4 KiB.  Written under a
temporary name, fsynced, then ``os.replace`` d: a reader maps either the old file or the
new one, never half of one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
from pathlib import Path

import numpy as np

from memo.store.temp_names import temp_beside

MAGIC = b"MEMOGRF1"
FORMAT = 1
_ALIGN = 4096
_SAMPLES = 16
# The graph's arrays (memo.graph.cache.MentionGraph), in file order.
GRAPH_ARRAYS = ("passage_pks", "entity_pks", "order", "passage_sorted", "entity_order", "entity_sorted",
                "w_indptr", "w_indices", "wt_indptr", "wt_indices")


def sidecar_path(db_path: str | Path) -> Path:
    return Path(f"{db_path}-graph.bin")


def titles_path(db_path: str | Path) -> Path:
    return subject_path(db_path, "titles")


def subject_path(db_path: str | Path, name: str) -> Path:
    """The file of a subject index (``memo.graph.titles.SubjectSpec``: titles, sections)."""
    return Path(f"{db_path}-graph-{name}.bin")


def db_state(conn: sqlite3.Connection) -> tuple[int, int]:
    """(mentions_epoch, max(mentions.seq)) as the caller's snapshot sees them."""
    row = conn.execute("SELECT (SELECT value FROM memo_meta WHERE key = 'mentions_epoch'), "
                       "(SELECT max(seq) FROM mentions)").fetchone()
    return int(row[0] or 0), int(row[1] or 0)


def _up(x: int) -> int:
    return (x + _ALIGN - 1) // _ALIGN * _ALIGN


def write_arrays(path: Path, magic: bytes, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` (little-endian int64) and ``header`` to ``path`` atomically (module
    docstring).  Raises OSError when the folder is not writable."""
    arrays = {k: np.ascontiguousarray(v, dtype="<i8") for k, v in arrays.items()}
    layout: dict[str, list] = {}
    room = 4096 + 64 * len(arrays)       # the JSON header, padded: offsets need its length first
    off = _up(12 + room)
    for name, arr in arrays.items():
        layout[name] = [off, "<i8", [int(arr.shape[0])]]
        off = _up(off + arr.nbytes)
    head = json.dumps({**header, "layout": layout}).encode()
    if len(head) > room:
        raise ValueError("graph sidecar header too long")
    tmp = temp_beside(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(magic + struct.pack("<I", len(head)) + head)
            for name, arr in arrays.items():
                fh.seek(layout[name][0])
                fh.write(arr.tobytes())
            fh.truncate(off)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_arrays(path: Path, magic: bytes) -> tuple[dict, dict[str, np.ndarray]] | None:
    """(header, read-only memory-mapped arrays) of a file ``write_arrays`` wrote; None if it
    is missing or malformed."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
            if len(head) != 12 or head[:8] != magic:
                return None
            (hlen,) = struct.unpack("<I", head[8:])
            meta = json.loads(fh.read(hlen))
        if meta.get("format") != FORMAT:
            return None
        size = path.stat().st_size
        out: dict[str, np.ndarray] = {}
        for name, (off, dt, shape) in meta["layout"].items():
            n = int(shape[0])
            if dt != "<i8" or off + 8 * n > size:
                return None
            # a plain ndarray view of the map: numpy's memmap subclass costs a Python call
            # per slice, and the walks slice the matrices' rows thousands of times
            out[name] = (np.memmap(path, dtype="<i8", mode="r", offset=off, shape=(n,)).view(np.ndarray) if n
                         else np.zeros(0, dtype=np.int64))
        return meta, out
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError):
        return None


def samples_of(conn: sqlite3.Connection, seq: int, edges: int) -> list[list[int]]:
    """Up to ``_SAMPLES`` mention rows (seq, passage pk, entity pk) evenly spaced over seq
    1..``seq``, as the caller's snapshot holds them."""
    out: list[list[int]] = []
    if not edges:
        return out
    for at in sorted({int(x) for x in np.linspace(1, seq, _SAMPLES)}):
        row = conn.execute("SELECT seq, passage_pk, entity_pk FROM mentions WHERE seq >= ? AND seq <= ? "
                           "ORDER BY seq LIMIT 1", (at, seq)).fetchone()
        if row is not None and [int(row[0]), int(row[1]), int(row[2])] not in out:
            out.append([int(row[0]), int(row[1]), int(row[2])])
    return out


def write_graph(conn: sqlite3.Connection, path: Path, epoch: int, seq: int, arrays: dict[str, np.ndarray]) -> None:
    """Write the graph at (``epoch``, ``seq``) of ``conn``'s snapshot."""
    header = {"format": FORMAT, "epoch": int(epoch), "seq": int(seq),
              "samples": samples_of(conn, seq, len(arrays["w_indices"]))}
    write_arrays(path, MAGIC, header, {k: arrays[k] for k in GRAPH_ARRAYS})


def open_valid(conn: sqlite3.Connection, path: Path, state: tuple[int, int] | None = None,
               ) -> tuple[tuple[int, int, dict[str, np.ndarray]] | None, str]:
    """((epoch, seq, arrays), "ok") if the sidecar at ``path`` matches the database as the
    caller's snapshot sees it (module docstring), else (None, why).  ``state``: the
    snapshot's ``db_state`` when the caller read it already."""
    if not path.exists():
        return None, "no sidecar"
    got = read_arrays(path, MAGIC)
    if got is None or set(got[1]) != set(GRAPH_ARRAYS):
        return None, "unreadable sidecar"
    meta, arrays = got
    epoch, seq = state if state is not None else db_state(conn)
    if int(meta["epoch"]) != epoch:
        return None, f"stale sidecar (epoch {meta['epoch']}, database {epoch})"
    if int(meta["seq"]) > seq:
        return None, f"sidecar is ahead of the database (seq {meta['seq']} > {seq})"
    wrong = _differs(conn, meta.get("samples", []))
    if wrong is not None:
        return None, f"sidecar row seq {wrong} differs from the database"
    return (epoch, int(meta["seq"]), arrays), "ok"


def _differs(conn: sqlite3.Connection, samples: list) -> int | None:
    """The seq of the first sampled mention row the database does not hold as sampled."""
    for s, p, e in samples:
        row = conn.execute("SELECT passage_pk, entity_pk FROM mentions WHERE seq = ?", (s,)).fetchone()
        if row is None or (int(row[0]), int(row[1])) != (p, e):
            return int(s)
    return None


# --- the title index of one graph state ---------------------------------------------------

TITLES_MAGIC = b"MEMOTTL1"


def write_titles(conn: sqlite3.Connection, path: Path, epoch: int, seq: int, edges: int,
                 of_passage: np.ndarray) -> None:
    """Write the title index of the graph at (``epoch``, ``seq``) of ``conn``'s snapshot."""
    write_arrays(path, TITLES_MAGIC, {"format": FORMAT, "epoch": int(epoch), "seq": int(seq),
                                      "samples": samples_of(conn, seq, edges)}, {"of_passage": of_passage})


def open_titles(conn: sqlite3.Connection, path: Path, epoch: int, seq: int, passages: int) -> np.ndarray | None:
    """The title index (passage index -> entity index, -1 none) of the graph at (``epoch``,
    ``seq``) with ``passages`` passages, if the file holds that one of this database."""
    got = read_arrays(path, TITLES_MAGIC)
    if got is None:
        return None
    meta, arrays = got
    of = arrays.get("of_passage")
    if (int(meta.get("epoch", -1)), int(meta.get("seq", -1))) != (epoch, seq) or of is None \
            or len(of) != passages or _differs(conn, meta.get("samples", [])) is not None:
        return None
    return of
