"""The keyword arm's persistent postings: ``passages_fts``'s postings kept in side tables
of the same SQLite file, current with every write (issue 31.1).  SQLite only; PostgreSQL
ranks in the server (``memo.store.dialect.is_postgres``: every function here is a no-op).

Why side tables in the same file, and not a file of our own: one read snapshot covers
FTS5 and these tables together, and a write's transaction changes both or neither, so the
postings can never describe rows FTS5 does not hold (or the reverse), whatever crashes.

Layout (an LSM of two levels, as search engines keep a base and a small delta):

* ``kw_base``: one row per term, its postings at the last merge as packed arrays
  (``array`` bytes, native byte order, typecodes in ``codes``): passage pks (sorted), the
  occurrences in the row (every column), those in the section column, and the row's token
  count (FTS5's ``docsize``: bm25's D).  A query reads only its terms' rows.
* ``kw_delta``: what every write since did, one row per (term, write, passage): a posting
  added (``tf`` > 0) or taken away (``tf`` = 0).  Writes append here in their own
  transaction, in time proportional to what they wrote: never a rebuild.
* ``kw_meta``: ``seq`` (the last write's number), ``generation`` (moves when the base is
  replaced), ``built`` (1: the base plus the delta describe FTS5), and the row and token
  counts (``rows``, ``tokens``), kept by every write: FTS5's own N and token total, and the
  passage count scope statistics read instead of counting (``memo.retrieve.scope``).

A term's postings at a snapshot = its base postings, then its delta rows in write order
(the last row of a passage wins; tf = 0 removes it).  ``merge`` folds the delta into the
base from a read snapshot and installs the result in a short write transaction that
drops only the delta rows it folded (writes made meanwhile have larger ``seq`` and stay).

Tokens: FTS5's own.  The full build reads ``passages_fts`` through ``fts5vocab``; a write
tokenises the rows it adds (``note_added``: a contentless table in the writer's temp schema)
or removes (``tokenize_rows``: an in-memory one) with an FTS5 table of the same tokenizer
over the same strings (``memo.text.cjk.index_form`` of text and section, what
``passages_fts`` was given), so the tokens, stems and counts are FTS5's by construction;
``tests/property/test_kw_postings_differential.py`` checks every score against ``bm25()``.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memo.store.connect import write_tx
from memo.store.dialect import is_postgres
from memo.store.epochs import random_below

if TYPE_CHECKING:
    import numpy as np

TABLE = "passages_fts"
_TOKENIZE = re.compile(r"tokenize\s*=\s*'([^']*)'", re.IGNORECASE)
_AVERAGES_ID = 1     # FTS5_AVERAGES_ROWID: varint row count, then varint token total per column

SCHEMA = """
CREATE TABLE kw_base (
    term   TEXT PRIMARY KEY,
    df     INTEGER NOT NULL,
    codes  TEXT NOT NULL,        -- array typecodes of pks, tfs, secs, dls
    pks    BLOB NOT NULL,
    tfs    BLOB NOT NULL,
    secs   BLOB NOT NULL,
    dls    BLOB NOT NULL
);
CREATE TABLE kw_delta (
    term   TEXT NOT NULL,
    seq    INTEGER NOT NULL,     -- the write that made it (kw_meta.seq then)
    pk     INTEGER NOT NULL,
    tf     INTEGER NOT NULL,     -- occurrences in the row; 0: the posting was removed
    sec    INTEGER NOT NULL,     -- of those, in the section column
    dl     INTEGER NOT NULL,     -- the row's token count
    PRIMARY KEY (term, seq, pk)
) WITHOUT ROWID;
CREATE TABLE kw_meta (
    key    TEXT PRIMARY KEY,
    value  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO kw_meta(key, value) VALUES ('seq', 0), ('generation', 0), ('built', 0), ('rows', 0),
    ('tokens', 0), ('delta', 0), ('byteorder', 0);
"""
_BYTEORDER = 1 if sys.byteorder == "little" else 2


@dataclass(frozen=True, slots=True)
class Meta:
    seq: int
    generation: int
    built: bool
    rows: int
    tokens: int
    delta: int             # rows in kw_delta
    native: bool           # the packed arrays are in this machine's byte order


def has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'kw_meta'").fetchone() is not None


def read_meta(conn: sqlite3.Connection) -> Meta | None:
    """The meta row of ``conn``'s snapshot; None without the tables (a schema before v6,
    PostgreSQL)."""
    if is_postgres(conn):
        return None
    try:
        got = dict(conn.execute("SELECT key, value FROM kw_meta").fetchall())
    except sqlite3.OperationalError:
        return None
    return Meta(seq=int(got["seq"]), generation=int(got["generation"]), built=bool(got["built"]),
                rows=int(got["rows"]), tokens=int(got["tokens"]), delta=int(got["delta"]), native=int(got["byteorder"]) == _BYTEORDER)


def varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian 7-bit groups, high bit = more; a 9th byte holds 8 bits)."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def fts_totals(conn: sqlite3.Connection, table: str = TABLE) -> tuple[int, int]:
    """(rows, tokens) from FTS5's averages record in ``conn``'s snapshot: bm25's N and the
    token total its avgdl divides (valid outside a write transaction: FTS5 writes the
    record when it flushes, at commit)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ID,)).fetchone()
    numbers = varints(bytes(row[0])) if row and row[0] else [0]
    return numbers[0], sum(numbers[1:])


def table_tokenizer(conn: sqlite3.Connection, table: str = TABLE) -> str:
    row = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (table,)).fetchone()
    found = _TOKENIZE.search(row[0] if row else "")
    return found.group(1) if found else "unicode61"


# --- tokenising as FTS5 does -----------------------------------------------------------

class _Tokenizers(threading.local):
    """Per thread, per tokenizer: an in-memory FTS5 table (text, section) like passages_fts."""

    def __init__(self) -> None:
        self.conns: dict[str, sqlite3.Connection] = {}

    def get(self, tokenizer: str) -> sqlite3.Connection:
        conn = self.conns.get(tokenizer)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, section, tokenize='{tokenizer}')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            self.conns[tokenizer] = conn
        return conn


_TOKENIZERS = _Tokenizers()
# pk -> (token count, {term: (occurrences, of them in section)})
Tokens = dict[int, tuple[int, dict[str, tuple[int, int]]]]


def tokenize_rows(tokenizer: str, rows: Sequence[tuple[int, str, str]]) -> Tokens:
    """FTS5's tokens of rows (pk, text, section) as ``passages_fts`` indexes them (the
    strings must be the ones given to it: ``index_form`` of the stored text)."""
    out: Tokens = {}
    if not rows:
        return out
    mem = _TOKENIZERS.get(tokenizer)
    mem.execute("BEGIN")
    try:
        mem.executemany("INSERT INTO t(rowid, text, section) VALUES (?, ?, ?)", rows)
        for pk, size in mem.execute("SELECT id, sz FROM t_docsize"):
            out[int(pk)] = (sum(varints(bytes(size))), {})
        for term, pk, col, n in mem.execute("SELECT term, doc, col, count(*) FROM v GROUP BY term, doc, col"):
            terms = out[int(pk)][1]
            tf, sec = terms.get(term, (0, 0))
            terms[term] = (tf + n, sec + (n if col == "section" else 0))
    finally:
        mem.execute("ROLLBACK")
    return out


# --- the write path: append to the delta in the writer's transaction ---------------------

def _next_seq(conn: sqlite3.Connection) -> int:
    # A random step, not + 1: searching processes cache a term's postings by (file, base
    # generation) up to a seq (memo.retrieve.kw_search); a file replaced by an older copy of
    # itself (a restore) then continues on other seq values than the history it forgot.
    step = 1 + random_below(1 << 20)
    return int(conn.execute("UPDATE kw_meta SET value = value + ? WHERE key = 'seq' RETURNING value",
                            (step,)).fetchone()[0])


def _add_counts(conn: sqlite3.Connection, rows: int, tokens: int, delta: int) -> None:
    conn.executemany("UPDATE kw_meta SET value = value + ? WHERE key = ?",
                     ((rows, "rows"), (tokens, "tokens"), (delta, "delta")))


_TOK_TABLE = "memo_kw_tok"      # temp schema of the writer's connection (``_temp_tokenizer``)


def _temp_tokenizer(conn: sqlite3.Connection, tokenizer: str) -> None:
    """A contentless FTS5 table (text, section) with ``tokenizer`` in ``conn``'s temp
    schema, its ``instance`` vocabulary and a (pk, dl) side table: ``note_added`` fills
    them with a write's rows and empties them after.  Made on first use (and again if the
    tokenizer changed or a rolled-back transaction took them away)."""
    want = f"tokenize='{tokenizer}'"
    row = conn.execute("SELECT sql FROM sqlite_temp_schema WHERE name = ?", (_TOK_TABLE,)).fetchone()
    if row is not None and want in row[0] and conn.execute(
            "SELECT count(*) FROM sqlite_temp_schema WHERE name IN (?, ?)",
            (f"{_TOK_TABLE}_v", f"{_TOK_TABLE}_dl")).fetchone()[0] == 2:
        return
    for name in (f"{_TOK_TABLE}_v", f"{_TOK_TABLE}_dl", _TOK_TABLE):
        conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{_TOK_TABLE} USING fts5(text, section, content='', {want})")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{_TOK_TABLE}_v USING fts5vocab(temp, {_TOK_TABLE}, 'instance')")
    conn.execute(f"CREATE TABLE temp.{_TOK_TABLE}_dl (pk INTEGER PRIMARY KEY, dl INTEGER NOT NULL)")


def note_added(conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Rows (pk, text, section) just inserted into passages_fts, with the strings it was
    given: their postings join the delta (caller's write transaction).

    The rows are tokenised by a contentless FTS5 table of the same tokenizer in the
    writer's own temp schema, and their delta rows go into ``kw_delta`` by one
    INSERT ... SELECT over its ``instance`` vocabulary, grouped by (term, row): the same rows
    ``tokenize_rows`` gives, with no Python tuple per posting (a posting per word of every
    row: ~90 per passage; building and binding them was over a third of an index-only
    import, issue 31.3)."""
    if not rows or is_postgres(conn) or not has_tables(conn) or not _built_now(conn):
        return
    _temp_tokenizer(conn, table_tokenizer(conn))
    try:
        conn.executemany(f"INSERT INTO temp.{_TOK_TABLE}(rowid, text, section) VALUES (?, ?, ?)", rows)
        sizes = [(int(pk), sum(varints(bytes(size)))) for pk, size in
                 conn.execute(f"SELECT id, sz FROM temp.{_TOK_TABLE}_docsize")]
        conn.executemany(f"INSERT INTO temp.{_TOK_TABLE}_dl(pk, dl) VALUES (?, ?)", sizes)
        seq = _next_seq(conn)
        added = conn.execute(
            f"INSERT INTO kw_delta(term, seq, pk, tf, sec, dl) SELECT v.term, ?, v.doc, count(*), "
            f"sum(v.col = 'section'), d.dl FROM temp.{_TOK_TABLE}_v v JOIN temp.{_TOK_TABLE}_dl d ON d.pk = v.doc "
            "GROUP BY v.term, v.doc", (seq,)).rowcount
    finally:
        conn.execute(f"INSERT INTO temp.{_TOK_TABLE}({_TOK_TABLE}) VALUES ('delete-all')")
        conn.execute(f"DELETE FROM temp.{_TOK_TABLE}_dl")
    _add_counts(conn, len(rows), sum(dl for _, dl in sizes), added)


def note_removed(conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Rows (pk, text, section) just deleted from passages_fts with these strings: each of
    their postings gets a removal row (tf = 0) in the delta."""
    if not rows or is_postgres(conn) or not has_tables(conn) or not _built_now(conn):
        return
    toks = tokenize_rows(table_tokenizer(conn), rows)
    seq = _next_seq(conn)
    removed = [(term, seq, pk) for pk, (_, terms) in toks.items() for term in terms]
    conn.executemany("INSERT INTO kw_delta(term, seq, pk, tf, sec, dl) VALUES (?, ?, ?, 0, 0, 0)", removed)
    _add_counts(conn, -len(rows), -sum(dl for dl, _ in toks.values()), len(removed))


def _built_now(conn: sqlite3.Connection) -> bool:
    """The base plus the delta describe passages_fts.  When they do not (a bulk import
    runs, ``memo reindex`` rewrote passages_fts, a new table), nothing reads them until
    ``rebuild`` makes a base of passages_fts whole and empties the delta, so a write adds
    no delta rows meanwhile: they would only be thrown away."""
    row = conn.execute("SELECT value FROM kw_meta WHERE key = 'built'").fetchone()
    return bool(row and row[0])


# --- bulk imports: no delta, one rebuild at the end -----------------------------------------
#
# An import that at least doubles the database (``memo.ops.importer``) would put a delta row
# per word of every passage (~80 a passage) into kw_delta, and the merge after it would throw
# them all away: a delta larger than the base is rebuilt from passages_fts (``merge``).  So
# such an import marks the postings not built in its first batch, its writes skip the delta
# (``_built_now``), and it rebuilds the base once its last batch has committed
# (``end_bulk``).  Searches meanwhile use FTS5, as for any base that is not built.  The lease
# ``bulk_until`` (seconds since the epoch, renewed by every batch) keeps another process's
# open from rebuilding in the middle (``memo.store.migrations``); an import killed before
# its end leaves a lease that runs out, and the next open for writing rebuilds then.
BULK_KEY = "bulk_until"
BULK_LEASE_S = 900     # longer than any one batch takes; what a killed import's base waits at most


def hold_bulk(conn: sqlite3.Connection) -> None:
    """A bulk import's batch, in its write transaction: the postings not built (this
    and every write skips the delta until ``end_bulk``), the lease renewed."""
    if is_postgres(conn) or not has_tables(conn):
        return
    conn.execute("UPDATE kw_meta SET value = 0 WHERE key = 'built'")
    conn.execute("INSERT OR REPLACE INTO kw_meta(key, value) VALUES (?, ?)", (BULK_KEY, int(time.time()) + BULK_LEASE_S))


def bulk_held(conn: sqlite3.Connection) -> bool:
    """A bulk import (this process's or another's) holds the lease: it rebuilds at its end."""
    if is_postgres(conn) or not has_tables(conn):
        return False
    row = conn.execute("SELECT value FROM kw_meta WHERE key = ?", (BULK_KEY,)).fetchone()
    return row is not None and int(row[0]) > time.time()


def end_bulk(conn: sqlite3.Connection, *, build: bool = True) -> None:
    """A bulk import's end, after its last batch (``conn`` outside a transaction): the
    lease dropped and, with ``build``, the base rebuilt (``rebuild_staged``).  Without it
    (an import that stopped), the next open for writing rebuilds."""
    if is_postgres(conn) or not has_tables(conn):
        return
    if build:
        rebuild_staged(conn, drop_lease=True)
        return
    with write_tx(conn):
        conn.execute("DELETE FROM kw_meta WHERE key = ?", (BULK_KEY,))


def rebuild_staged(conn: sqlite3.Connection, *, drop_lease: bool = False, if_unbuilt: bool = False) -> int:
    """``rebuild`` with the write lock held only to install the result (``conn`` outside a
    transaction; returns the terms written): the new base is packed from a read snapshot
    into a table of the connection's temp schema, then a short write transaction replaces
    the base with it, if no other connection committed since the snapshot (``PRAGMA
    data_version``).  Other writers wait for that copy only (at 1M passages 6.7-15.4 s
    against 62 s for the whole rebuild).  Writes kept coming twice: the rebuild runs under
    the lock.  ``drop_lease``: the bulk lease goes in the same transaction.  ``if_unbuilt``
    (an open that found the postings not built): nothing is written when, under the lock,
    another process has built them meanwhile or a bulk import holds the lease."""
    for _ in range(_STAGE_TRIES):
        written = _install_staged(conn, *_stage(conn), drop_lease=drop_lease, if_unbuilt=if_unbuilt)
        if written is not None:
            return written
    with write_tx(conn):
        if if_unbuilt and _settled(conn):
            return 0
        if drop_lease:
            conn.execute("DELETE FROM kw_meta WHERE key = ?", (BULK_KEY,))
        return rebuild(conn)


def _settled(conn: sqlite3.Connection) -> bool:
    """The postings are built (in this machine's byte order), or a bulk import will build them."""
    meta = read_meta(conn)
    return meta is None or (meta.built and meta.native) or bulk_held(conn)


_STAGED = "memo_kw_staged"
_STAGE_TRIES = 2


def _stage(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The base's rows for a read snapshot, into ``temp._STAGED``: (the snapshot's data
    version, its rows, its tokens)."""
    conn.execute("BEGIN")
    try:
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        conn.execute(f"DROP TABLE IF EXISTS temp.{_STAGED}")
        conn.execute(f"CREATE TEMP TABLE {_STAGED}(term TEXT, df INTEGER, codes TEXT, pks BLOB, tfs BLOB, "
                     "secs BLOB, dls BLOB)")
        sizes = _row_sizes(conn)
        _insert_rows(conn, f"temp.{_STAGED}", _base_rows(conn, sizes))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        conn.execute(f"DROP TABLE IF EXISTS temp.{_STAGED}")
        raise
    return version, len(sizes), sum(sizes.values())


def _install_staged(conn: sqlite3.Connection, version: int, rows: int, tokens: int, *,
                    drop_lease: bool, if_unbuilt: bool = False) -> int | None:
    """Replace the base with the staged rows unless another connection committed since
    they were read (then None: nothing written); the terms written."""
    try:
        with write_tx(conn):
            if if_unbuilt and _settled(conn):
                return 0
            if int(conn.execute("PRAGMA data_version").fetchone()[0]) != version:
                return None
            conn.execute("DELETE FROM kw_base")
            conn.execute("DELETE FROM kw_delta")
            written = conn.execute(f"INSERT INTO kw_base(term, df, codes, pks, tfs, secs, dls) SELECT term, df, "
                                   f"codes, pks, tfs, secs, dls FROM temp.{_STAGED} ORDER BY rowid").rowcount
            _built(conn, rows, tokens)
            if drop_lease:
                conn.execute("DELETE FROM kw_meta WHERE key = ?", (BULK_KEY,))
        return written
    finally:
        conn.execute(f"DROP TABLE IF EXISTS temp.{_STAGED}")


def mark_unbuilt(conn: sqlite3.Connection) -> None:
    """passages_fts was rewritten wholesale (``memo reindex``, the CJK re-derivation): the
    postings no longer describe it until ``rebuild`` (searches use FTS5 meanwhile)."""
    if not is_postgres(conn) and has_tables(conn):
        conn.execute("UPDATE kw_meta SET value = 0 WHERE key = 'built'")


# --- packing ---------------------------------------------------------------------------

def unpack(codes: str, pks: bytes, tfs: bytes, secs: bytes, dls: bytes) -> tuple[array, array, array, array]:
    out = []
    for code, blob in zip(codes, (pks, tfs, secs, dls), strict=True):
        a = array(code)
        a.frombytes(blob)
        out.append(a)
    return out[0], out[1], out[2], out[3]


# --- reading one term's postings at a snapshot --------------------------------------------

Posting = tuple[int, int, int]    # (tf, sec, dl)


def delta_rows(conn: sqlite3.Connection, term: str) -> list[tuple[int, int, int, int]]:
    """The term's delta rows (pk, tf, sec, dl) in write order."""
    return conn.execute("SELECT pk, tf, sec, dl FROM kw_delta WHERE term = ? ORDER BY seq, pk", (term,)).fetchall()


def base_row(conn: sqlite3.Connection, term: str) -> tuple[str, bytes, bytes, bytes, bytes] | None:
    return conn.execute("SELECT codes, pks, tfs, secs, dls FROM kw_base WHERE term = ?", (term,)).fetchone()


def term_postings(conn: sqlite3.Connection, term: str) -> dict[int, Posting]:
    """pk -> (tf, sec, dl) of ``term`` at ``conn``'s snapshot, base then delta (pure Python:
    merges and tests; the search path has its own vectorised reader)."""
    out: dict[int, Posting] = {}
    row = base_row(conn, term)
    if row is not None:
        pks, tfs, secs, dls = unpack(*row)
        out = {pk: (tf, sec, dl) for pk, tf, sec, dl in zip(pks, tfs, secs, dls, strict=True)}
    for pk, tf, sec, dl in delta_rows(conn, term):
        if tf:
            out[pk] = (tf, sec, dl)
        else:
            out.pop(pk, None)
    return out


# --- building and merging -------------------------------------------------------------

def rebuild(conn: sqlite3.Connection) -> int:
    """Rebuild the base from passages_fts as it is (the caller holds a write transaction
    in which passages_fts has no pending writes: a fresh one, or a migration's before any
    row is written) and empty the delta.  Returns the terms written.  ``rebuild_staged``
    builds the same rows outside the write lock."""
    if is_postgres(conn):
        return 0
    conn.execute("DELETE FROM kw_base")
    conn.execute("DELETE FROM kw_delta")
    sizes = _row_sizes(conn)
    written = _insert_rows(conn, "kw_base", _base_rows(conn, sizes))
    _built(conn, len(sizes), sum(sizes.values()))
    return written


def _row_sizes(conn: sqlite3.Connection) -> dict[int, int]:
    """passages_fts's rows and their token counts (FTS5's docsize), by row id ascending."""
    sizes: dict[int, int] = {}
    for rowid, size in conn.execute(f"SELECT id, sz FROM {TABLE}_docsize ORDER BY id"):
        sizes[int(rowid)] = sum(varints(bytes(size)))
    return sizes


def _base_rows(conn: sqlite3.Connection, sizes: dict[int, int]) -> Iterator[tuple]:
    """The base's rows (term order) for passages_fts at ``conn``'s snapshot.

    One pass over FTS5's ``instance`` vocabulary, grouped by term in SQLite (fts5vocab
    yields its rows in term order, so the grouping sorts nothing): a term's occurrences
    arrive as one string of ``2 * rowid + (1 if in the section column)``.  Most terms are
    rare (a handful of rows), and numpy's per-call cost is most of what such a term would
    cost, so a term of at most ``_PY_INSTANCES`` occurrences is packed in Python and only
    longer ones go through numpy: the same arrays either way (tests/unit/store/
    test_kw_rebuild.py).  A bulk import ends with this (``end_bulk``), so it is part of
    what an index-only import costs (issue 31.3)."""
    if not sizes:     # a new database (memo-mcp's first open): no numpy import for nothing
        return
    cp = "i" if max(sizes) < 2**31 else "q"
    cd = "H" if max(sizes.values()) < 2**16 else "I"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memo_kw_instance USING fts5vocab(main, {TABLE}, 'instance')")
    try:
        by_term = conn.execute("SELECT term, group_concat(doc * 2 + (col = 'section'), ' ') "
                               "FROM temp.memo_kw_instance GROUP BY term")
        big = _BigTerms(sizes, cp, cd)
        for term, docs in by_term:
            if docs:
                yield (_packed_small(term, docs, sizes, cp, cd) if docs.count(" ") < _PY_INSTANCES
                       else big.packed(term, docs))
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.memo_kw_instance")


def _insert_rows(conn: sqlite3.Connection, table: str, rows: Iterator[tuple]) -> int:
    insert = f"INSERT INTO {table}(term, df, codes, pks, tfs, secs, dls) VALUES (?, ?, ?, ?, ?, ?, ?)"
    chunk: list[tuple] = []
    written = 0
    for row in rows:
        chunk.append(row)
        if len(chunk) >= _INSERT_CHUNK:
            conn.executemany(insert, chunk)
            written += len(chunk)
            chunk = []
    conn.executemany(insert, chunk)
    return written + len(chunk)


_PY_INSTANCES = 64       # a term with fewer occurrences is packed in Python (``rebuild``)
_INSERT_CHUNK = 2048     # kw_base rows bound per executemany (a 1M base is ~0.8 GB of blobs)


def _packed_small(term: str, docs: str, sizes: dict[int, int], cp: str, cd: str) -> tuple:
    """A kw_base row from a term's occurrences (``rebuild``'s string; rowids ascending, as
    fts5vocab lists them): per row its occurrences and those in the section column."""
    pks: list[int] = []
    tfs: list[int] = []
    secs: list[int] = []
    last = -1
    for coded in map(int, docs.split(" ")):
        pk = coded >> 1
        if pk != last:
            if pk < last:
                raise RuntimeError(f"{TABLE}: fts5vocab listed rows out of order for a term")
            pks.append(pk)
            tfs.append(0)
            secs.append(0)
            last = pk
        tfs[-1] += 1
        secs[-1] += coded & 1
    try:
        dls = [sizes[pk] for pk in pks]
    except KeyError:
        raise RuntimeError(f"{TABLE}: a posting names a row without a document size") from None
    cf = "B" if max(tfs) < 256 else "I"
    return (term, len(pks), cp + cf + cf + cd, array(cp, pks).tobytes(), array(cf, tfs).tobytes(),
            array(cf, secs).tobytes(), array(cd, dls).tobytes())


class _BigTerms:
    """``rebuild``'s packing of a common term, in numpy.  fts5vocab lists a term's
    occurrences by row id, so a row's occurrences are one run: the rows, their counts and
    their section counts come from the run boundaries (no sort, as ``np.unique`` would do);
    the row lengths from a dense table by row id (or a binary search when the ids are sparse)."""

    def __init__(self, sizes: dict[int, int], cp: str, cd: str) -> None:
        self._sizes, self._cp, self._cd = sizes, cp, cd
        self._dense: np.ndarray | None = None     # row id -> length, -1 where no row
        self._pk_all: np.ndarray | None = None
        self._dl_all: np.ndarray | None = None

    def _lengths(self, pks: np.ndarray) -> np.ndarray:
        import numpy as np

        if self._pk_all is None:
            self._pk_all = np.fromiter(self._sizes, dtype=np.int64, count=len(self._sizes))
            self._dl_all = np.fromiter(self._sizes.values(), dtype=np.int64, count=len(self._sizes))
            top = int(self._pk_all[-1])
            if top <= 4 * len(self._pk_all) + 1024:     # ids nearly dense: a table by id
                self._dense = np.full(top + 1, -1, dtype=np.int64)
                self._dense[self._pk_all] = self._dl_all
        if self._dense is not None:
            dl = self._dense[pks] if int(pks[-1]) < len(self._dense) and int(pks[0]) >= 0 else None
            if dl is not None and int(dl.min()) >= 0:
                return dl
        else:
            assert self._dl_all is not None
            at = np.searchsorted(self._pk_all, pks)
            if at[-1] < len(self._pk_all) and np.array_equal(self._pk_all[at], pks):
                return self._dl_all[at]
        raise RuntimeError(f"{TABLE}: a posting names a row without a document size")

    def packed(self, term: str, docs: str) -> tuple:
        import numpy as np

        cp, cd = self._cp, self._cd
        coded = np.fromstring(docs, dtype=np.int64, sep=" ")
        rows = coded >> 1
        if bool((rows[1:] < rows[:-1]).any()):
            raise RuntimeError(f"{TABLE}: fts5vocab listed rows out of order for a term")
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        uniq = rows[starts]
        freq = np.diff(np.append(starts, len(rows)))
        in_section = np.add.reduceat(coded & 1, starts)
        dl = self._lengths(uniq)
        cf = "B" if int(freq.max()) < 256 else "I"
        return (term, len(uniq), cp + cf + cf + cd, uniq.astype(cp).tobytes(), freq.astype(cf).tobytes(),
                in_section.astype(cf).tobytes(), dl.astype(cd).tobytes())


def _built(conn: sqlite3.Connection, rows: int, tokens: int) -> None:
    conn.executemany("UPDATE kw_meta SET value = ? WHERE key = ?",
                     ((rows, "rows"), (tokens, "tokens"), (1, "built"), (_BYTEORDER, "byteorder"), (0, "delta")))
    # A random generation: a cache entry of another file (or of this path before it was
    # replaced) never matches (memo.retrieve.kw_search).
    conn.execute("UPDATE kw_meta SET value = ? WHERE key = 'generation'", (random_below(1 << 62),))


def apply_delta(base: tuple[np.ndarray, ...], delta: Sequence[tuple[int, int, int, int]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A term's postings (pks ascending, tf, sec, dl) with its delta rows (pk, tf, sec, dl),
    in write order, applied: the last row of a pk wins, tf 0 removes it.  The pks come out
    int64 (an index numpy uses as is); tf, sec and dl keep the base's narrow dtypes unless
    a row needs a wider one (a warm search after a write reads them all again to compute
    their bm25 terms: 3 bytes a posting, not 24)."""
    import numpy as np

    pks, tf, sec, dl = base
    if not delta:
        return pks, tf, sec, dl
    last: dict[int, tuple[int, int, int]] = {}
    for pk, t, s, d in delta:
        last[pk] = (t, s, d)
    if (not len(pks) or min(last) > int(pks[-1])) and all(v[0] for v in last.values()):
        # The common case (new records take pks above every stored one): an append, one
        # copy of each array, without the binary searches and masks below.
        added = sorted(last.items())
        new = np.array([p for p, _ in added], dtype=np.int64)
        cols = [_column(a, [v[j] for _, v in added]) for j, a in enumerate((tf, sec, dl))]
        out = [np.concatenate((a, c), dtype=c.dtype) for a, c in zip((tf, sec, dl), cols, strict=True)]
        return np.concatenate((pks, new), dtype=np.int64), out[0], out[1], out[2]
    touched = np.fromiter(last, dtype=np.int64, count=len(last))
    # pks is sorted: a binary search per touched pk, not a pass over the list (np.isin).
    keep = np.ones(len(pks), dtype=bool)
    at = np.searchsorted(pks, touched)
    inside = at < len(pks)
    at = at[inside]
    keep[at[pks[at] == touched[inside]]] = False
    added = sorted((pk, v) for pk, v in last.items() if v[0])
    kept = pks[keep]
    new = np.array([p for p, _ in added], dtype=np.int64)
    # Both sorted and disjoint: insert the few new postings in place (one pass, no sort).
    where = np.searchsorted(kept, new)
    out = [np.insert(kept.astype(np.int64), where, new)]
    for j, a in enumerate((tf, sec, dl)):
        col = _column(a, [v[j] for _, v in added])
        out.append(np.insert(a[keep].astype(col.dtype, copy=False), where, col))
    return out[0], out[1], out[2], out[3]


def _column(a: np.ndarray, values: list[int]) -> np.ndarray:
    """``values`` as an array of ``a``'s dtype, or of a wider one that holds them too."""
    import numpy as np

    dtype = np.promote_types(a.dtype, np.min_scalar_type(max(values, default=0)))
    return np.array(values, dtype=dtype)


def decode(row: tuple[str, bytes, bytes, bytes, bytes] | None) -> tuple[np.ndarray, ...]:
    """A base row as numpy arrays (read-only views of the blobs, no copy)."""
    import numpy as np

    if row is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    return tuple(np.frombuffer(blob, dtype=code) for code, blob in zip(row[0], row[1:], strict=True))


def _write_arrays(conn: sqlite3.Connection, term: str, pks: np.ndarray, tf: np.ndarray, sec: np.ndarray,
                  dl: np.ndarray) -> None:
    if not len(pks):
        conn.execute("DELETE FROM kw_base WHERE term = ?", (term,))
        return
    cp = "i" if int(pks[-1]) < 2**31 else "q"
    cf = "B" if int(tf.max()) < 256 else "I"
    cd = "H" if int(dl.max()) < 2**16 else "I"
    conn.execute("INSERT OR REPLACE INTO kw_base(term, df, codes, pks, tfs, secs, dls) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (term, len(pks), cp + cf + cf + cd, pks.astype(cp).tobytes(), tf.astype(cf).tobytes(),
                  sec.astype(cf).tobytes(), dl.astype(cd).tobytes()))


def merge(conn: sqlite3.Connection) -> int:
    """Fold the delta into the base: read the delta and the touched terms' base rows in
    one read snapshot, then install the new rows and drop exactly the folded delta rows in
    a short write transaction, if no other merge or rebuild replaced the base meanwhile
    (else nothing is written; the next merge folds it).  ``conn`` must be outside a
    transaction.  Returns the terms rewritten.  Cost: the touched terms' postings, not
    the index.  A base that is not built (or a delta larger than the base) is rebuilt from
    passages_fts instead (``rebuild_staged``: the write lock held for the install only)."""
    if is_postgres(conn) or not has_tables(conn):
        return 0
    conn.execute("BEGIN")
    try:
        meta = read_meta(conn)
        if meta is None:
            return 0
        base_size = int(conn.execute("SELECT coalesce(sum(df), 0) FROM kw_base").fetchone()[0]) if meta.built else 0
        if not (meta.built and meta.native) or meta.delta > base_size:
            folded = None
        else:
            terms = [r[0] for r in conn.execute("SELECT DISTINCT term FROM kw_delta WHERE seq <= ?", (meta.seq,))]
            folded = {}
            n_rows = 0
            for term in terms:
                delta = conn.execute("SELECT pk, tf, sec, dl FROM kw_delta WHERE term = ? AND seq <= ?"
                                     " ORDER BY seq, pk", (term, meta.seq)).fetchall()
                n_rows += len(delta)
                folded[term] = apply_delta(decode(base_row(conn, term)), delta)
    finally:
        conn.execute("ROLLBACK")
    if folded is None:      # outside the write lock but for the install (a searching process's thread)
        return rebuild_staged(conn)
    if not folded:
        return 0
    with write_tx(conn):
        now = read_meta(conn)
        if now is None or now.generation != meta.generation or not now.built:
            return 0
        for term, arrays in folded.items():
            _write_arrays(conn, term, *arrays)
        conn.execute("DELETE FROM kw_delta WHERE seq <= ?", (meta.seq,))
        conn.executemany("UPDATE kw_meta SET value = value + ? WHERE key = ?", ((1, "generation"), (-n_rows, "delta")))
    return len(folded)


# --- background merges (a searching process that sees a large delta) -----------------------

_MERGING: set[str] = set()
_MERGE_LOCK = threading.Lock()


def _merge_in_background(path: str) -> None:
    from memo.store.connect import connect

    try:
        conn = connect(path)    # memo's settings; the schema is v6 already (the search read kw_meta)
        try:
            merge(conn)
        finally:
            conn.close()
    except Exception:   # noqa: BLE001 - a merge that fails leaves the delta: searches stay exact
        pass
    finally:
        with _MERGE_LOCK:
            _MERGING.discard(path)


def schedule_merge(path: str) -> bool:
    """Start a background merge of ``path``'s delta unless one runs in this process."""
    if not path:
        return False
    with _MERGE_LOCK:
        if path in _MERGING:
            return False
        _MERGING.add(path)
    threading.Thread(target=_merge_in_background, args=(path,), daemon=True, name="memo-kw-merge").start()
    return True


def wait_merged(path: str, timeout: float = 600.0) -> bool:
    """Wait for this process's background merge of ``path`` (benchmarks, tests)."""
    import time

    deadline = time.monotonic() + timeout
    while path in _MERGING and time.monotonic() < deadline:
        time.sleep(0.02)
    return path not in _MERGING
