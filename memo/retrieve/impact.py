"""The keyword arm's fast path: an in-memory index derived from FTS5 that ranks exactly as
FTS5's ``bm25()`` does, without scoring every row of an OR query in SQLite (issue 16.2).
Since schema v6 the persistent postings (``memo.store.kw_postings``, ranked by
``memo.retrieve.kw_search`` with the formula derived here) answer first; this index serves
databases without them.

FTS5 stays the canonical keyword index and the fallback.  This index is *derived* from it
and never from the text: the postings come from an ``fts5vocab`` table in 'instance' mode
(so the tokens are FTS5's own: same tokenizer, same Porter stems), the document lengths
from ``<table>_docsize`` and the row count and token totals from FTS5's averages record
(``<table>_data`` id 1): the very numbers ``bm25()`` reads.  The score of a row is FTS5's
formula (sqlite ext/fts5/fts5_aux.c, ``fts5Bm25Function``), computed with the same
floating-point operations in the same order, so scores are bit-identical:

    idf(t)  = log((N - n_t + 0.5) / (n_t + 0.5)), and 1e-6 when that is <= 0
    K(d)    = k1 * (1 - b + b * D(d) / avgdl)       k1 = 1.2, b = 0.75, D = tokens of the row
                                                    (every column), avgdl = tokens / N
    score   = sum over the query's phrases, in order, of idf * (f * (k1 + 1)) / (f + K)

with f the phrase's occurrences in the row, each counted with its column's weight: FTS5
adds the weight of an instance's column to f, instance by instance in (column, offset)
order.  The keyword arm calls ``bm25(passages_fts, 1.0, w)`` with w =
``retrieve.keyword_section_weight``, so f = (occurrences in text) + w + w + ... (once per
occurrence in section), summed in that order (``weighted_freqs``; w = 1.0: the plain count,
``bm25(passages_fts)``).  The index keeps each posting's section count beside its total, so
one index serves every weight.  Each quoted query word is one token (the words
are unicode61 tokens already; Porter maps one token to one stem), so a phrase is a term;
two words with one stem are two phrases and count twice, as in FTS5.

Snapshot: the index remembers the FTS5 state it was built from (the averages and structure
records, which every write to the FTS5 index changes).  A search reads that state inside
its own read snapshot and uses the index only when they are equal; otherwise FTS5 answers
and the index is rebuilt lazily, in a background thread with its own read-only connection
(a process that searches once, the CLI, never waits for it; ``ensure_index`` builds in the
caller's thread: benchmarks, eval, tests).  So after a write FTS5 serves until the
rebuild is done; ``memo reindex`` rebuilds FTS5, which makes the index stale the same way.

Scope: the arm's scope filter becomes a mask over the index's rows (few exclusions: the
excluded pks; else the in-scope pks read once per scope and data state, ``conn_cache``),
applied before the top-k, exactly as the FTS5 plans of ``memo.retrieve.backend_sqlite`` do.  Ties (equal
scores) are ordered by pk.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.scope import scope_stats
from memo.retrieve.types import ArmHit
from memo.store.connect import db_file
from memo.store.dialect import is_postgres
from memo.store.kw_postings import read_meta, table_tokenizer, varints

if TYPE_CHECKING:
    import numpy as np

    from memo.retrieve.scope import ScopeSQL

K1 = 1.2    # FTS5 bm25() constants (fts5_aux.c), not tunable there either
B = 0.75
_AVERAGES_ID = 1     # FTS5_AVERAGES_ROWID: varint row count, then varint token total per column
_STRUCTURE_ID = 10   # FTS5_STRUCTURE_ROWID: changes with every write to the index
_TABLES = ("passages_fts",)

STATS = {"impact": 0, "fts5": 0, "builds": 0, "postings": 0, "pruned": 0}   # searches served by each path (benchmarks, tests);
# "postings": of the "impact" ones, those the persistent postings served (memo.retrieve.kw_search),
# "pruned": of those, the ones MaxScore answered


@dataclass(frozen=True, slots=True)
class ImpactIndex:
    table: str
    state: bytes             # FTS5 averages + structure records when built
    tokenizer: str
    n_rows: int              # FTS5's row count (N)
    pks: np.ndarray          # int64, sorted: row i of every per-row array is passage pks[i]
    norm: np.ndarray         # float64 K(d) per row
    vocab: dict[str, int]    # stem -> term number
    offsets: np.ndarray      # int64, term t's postings are [offsets[t], offsets[t+1])
    rows: np.ndarray         # int32 row numbers of the postings
    freqs: np.ndarray        # uint8 (uint32 if any count > 255) occurrences per posting (every column)
    section_freqs: np.ndarray  # same dtype: of those, occurrences in the section column
    build_ms: float

    @property
    def nbytes(self) -> int:
        return int(self.pks.nbytes + self.norm.nbytes + self.offsets.nbytes + self.rows.nbytes + self.freqs.nbytes
                   + self.section_freqs.nbytes)


# --- FTS5 records ----------------------------------------------------------------------

def fts_state(conn: sqlite3.Connection, table: str) -> bytes:
    """The FTS5 averages and structure records of ``table`` in ``conn``'s snapshot, and the
    keyword postings' generation: two databases written alike (a database created again at
    the same path, with as many rows and tokens) have the same records, but each its own
    random generation (``memo.store.epochs``), so an index of one is never taken for the other."""
    rows = conn.execute(f"SELECT id, block FROM {table}_data WHERE id IN (?, ?) ORDER BY id",
                        (_AVERAGES_ID, _STRUCTURE_ID)).fetchall()
    meta = read_meta(conn)      # None: a database older than the postings (migration 6)
    return b"|".join([*(bytes(r[1] or b"") for r in rows), str(meta.generation if meta else "").encode()])


# --- building ----------------------------------------------------------------------------

def build_index(conn: sqlite3.Connection, table: str = "passages_fts") -> ImpactIndex:
    """Build from ``conn``'s current snapshot (the caller holds a read transaction, or
    none: then one is taken here)."""
    import numpy as np

    if table not in _TABLES:
        raise ValueError(f"no impact index for {table}")
    t0 = time.perf_counter()
    own_tx = not conn.in_transaction
    if own_tx:
        conn.execute("BEGIN")
    try:
        state = fts_state(conn, table)
        avg = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ID,)).fetchone()
        numbers = varints(bytes(avg[0])) if avg and avg[0] else [0]
        n_rows, total = numbers[0], sum(numbers[1:])
        ids, lengths = [], []
        for rowid, size in conn.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id"):
            ids.append(rowid)
            lengths.append(sum(varints(bytes(size))))
        pks = np.array(ids, dtype=np.int64)
        dl = np.array(lengths, dtype=np.float64)
        avgdl = float(total) / float(n_rows) if n_rows else 1.0
        # FTS5: k1 * (1 - b + b * D / avgdl), evaluated left to right as C does.
        norm = K1 * ((1 - B) + (B * dl) / avgdl)
        vocab_table = f"temp.memo_vocab_{table}"
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab_table} USING fts5vocab(main, {table}, 'instance')")
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab_table}_row USING fts5vocab(main, {table}, 'row')")
        vocab: dict[str, int] = {}
        counts: list[int] = [0]
        row_parts: list[np.ndarray] = []
        freq_parts: list[np.ndarray] = []
        section_parts: list[np.ndarray] = []
        terms = [r[0] for r in conn.execute(f"SELECT term FROM {vocab_table}_row")]
        # One query per term: its instances' rowids (one per occurrence) as text, parsed by
        # numpy (faster than fetching an integer per instance, and than one GROUP BY term
        # over the whole vocabulary, which sorts every instance; docs/results-log.md "Word
        # counts for routing and keyword evidence").  Each instance
        # is 2 * rowid + (1 if in the section column): the section counts come in the same pass.
        per_term = f"SELECT group_concat(doc * 2 + (col = 'section'), ' ') FROM {vocab_table} WHERE term = ?"
        for term in terms:
            docs = conn.execute(per_term, (term,)).fetchone()[0]
            if not docs:
                continue
            coded = np.fromstring(docs, dtype=np.int64, sep=" ")
            arr = coded >> 1
            uniq, inverse, freq = np.unique(arr, return_inverse=True, return_counts=True)
            in_section = np.bincount(inverse, weights=(coded & 1), minlength=len(uniq)).astype(np.int64)
            rows = np.searchsorted(pks, uniq)
            if rows[-1] >= len(pks) or not np.array_equal(pks[rows], uniq):
                raise RuntimeError(f"{table}: a posting names a row without a document size")
            vocab[term] = len(vocab)
            counts.append(len(uniq))
            # Compact at once (int32 rows, 1-2 byte counts): the build's peak memory stays
            # about twice the index instead of five times.
            row_parts.append(rows.astype(np.int32))
            small = freq.max() < 256
            freq_parts.append(freq.astype(np.uint8) if small else freq.astype(np.uint32))
            section_parts.append(in_section.astype(np.uint8) if small else in_section.astype(np.uint32))
    finally:
        if own_tx:
            conn.execute("ROLLBACK")
    offsets = np.cumsum(np.array(counts, dtype=np.int64))
    rows_all = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int32)
    wide = any(f.dtype != np.uint8 for f in freq_parts)
    freqs = (np.concatenate([f.astype(np.uint32) for f in freq_parts]) if wide
             else np.concatenate(freq_parts) if freq_parts else np.zeros(0, dtype=np.uint8))
    section_freqs = (np.concatenate([f.astype(np.uint32) for f in section_parts]) if wide
                     else np.concatenate(section_parts) if section_parts else np.zeros(0, dtype=np.uint8))
    del row_parts, freq_parts, section_parts
    return ImpactIndex(table=table, state=state, tokenizer=table_tokenizer(conn, table), n_rows=int(n_rows),
                       pks=pks, norm=norm, vocab=vocab, offsets=offsets, rows=rows_all, freqs=freqs,
                       section_freqs=section_freqs,
                       build_ms=round((time.perf_counter() - t0) * 1000.0, 1))


# --- the per-process registry: one index per (database file, table) ------------------------

_LOCK = threading.Lock()
_INDEXES: dict[tuple[str, str], ImpactIndex] = {}
_BUILDING: set[tuple[str, str]] = set()
_MISSES: dict[tuple[str, str], int] = {}
# A process that searched a database this many times without a usable index builds one in
# the background: a one-shot CLI search (1) never spends CPU on an index it cannot use.
BUILD_AFTER_MISSES = 2


def ensure_index(conn: sqlite3.Connection, table: str = "passages_fts") -> ImpactIndex:
    """The index for ``conn``'s current data, built in this thread when missing or stale."""
    key = (db_file(conn), table)
    current = _INDEXES.get(key)
    if current is not None and current.state == fts_state(conn, table):
        return current
    index = build_index(conn, table)
    with _LOCK:
        _INDEXES[key] = index
        STATS["builds"] += 1
    return index


def wait_built(conn: sqlite3.Connection, table: str = "passages_fts", timeout: float = 600.0) -> bool:
    """Wait for a background build scheduled for ``conn``'s database (benchmarks)."""
    key = (db_file(conn), table)
    deadline = time.monotonic() + timeout
    while key in _BUILDING and time.monotonic() < deadline:
        time.sleep(0.05)
    return key not in _BUILDING


def _build_in_background(path: str, table: str) -> None:
    from memo.store.connect import connect

    key = (path, table)
    try:
        conn = connect(path, readonly=True)
        try:
            index = build_index(conn, table)
        finally:
            conn.close()
        with _LOCK:
            _INDEXES[key] = index
            STATS["builds"] += 1
    except Exception:   # noqa: BLE001 - a failed build only means FTS5 keeps serving
        pass
    finally:
        with _LOCK:
            _BUILDING.discard(key)


def _schedule(path: str, table: str) -> None:
    key = (path, table)
    with _LOCK:
        if key in _BUILDING:
            return
        _BUILDING.add(key)
    threading.Thread(target=_build_in_background, args=(path, table), daemon=True,
                     name=f"memo-impact-{table}").start()


def forget_indexes() -> None:
    """Drop every index of this process (tests)."""
    with _LOCK:
        _INDEXES.clear()
        _MISSES.clear()


def usable_index(conn: sqlite3.Connection, table: str) -> ImpactIndex | None:
    """The index if it matches ``conn``'s snapshot; else None, and from the
    ``BUILD_AFTER_MISSES``-th miss on a file database a background (re)build is scheduled.
    PostgreSQL: None (the index is SQLite's accelerator; the server ranks itself)."""
    if is_postgres(conn):
        return None
    path = db_file(conn)
    key = (path, table)
    current = _INDEXES.get(key)
    if current is not None and current.state == fts_state(conn, table):
        return current
    misses = _MISSES[key] = _MISSES.get(key, 0) + 1
    if misses >= BUILD_AFTER_MISSES and path:
        _schedule(path, table)
    return None


def current_index(conn: sqlite3.Connection, table: str = "passages_fts") -> ImpactIndex | None:
    """The index if one matches ``conn``'s snapshot (never schedules a build)."""
    if is_postgres(conn):
        return None
    current = _INDEXES.get((db_file(conn), table))
    return current if current is not None and current.state == fts_state(conn, table) else None


# --- query ---------------------------------------------------------------------------------

class _Stemmer(threading.local):
    conns: dict[str, sqlite3.Connection]

    def __init__(self) -> None:
        self.conns = {}

    def stems(self, tokenizer: str, words: tuple[str, ...]) -> list[str] | None:
        """The tokenizer's stem of each word (None unless each word is one token), kept per
        (tokenizer, words): a pure function of the text, asked for every query word by
        routing, abstention's coverage and the keyword arm, and again for the same common
        words by query after query (an in-memory FTS5 insert each: ~0.1 ms)."""
        key = (tokenizer, tuple(words))
        known = _STEMS.get(key, _UNSEEN)
        if known is _UNSEEN:
            if len(_STEMS) >= _STEMS_MAX:
                _STEMS.clear()
            known = _STEMS[key] = self._stems(tokenizer, words)
        return None if known is None else list(known)

    def _stems(self, tokenizer: str, words: tuple[str, ...]) -> tuple[str, ...] | None:
        conn = self.conns.get(tokenizer)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            self.conns[tokenizer] = conn
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (" ".join(words),))
            out = [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
        finally:
            conn.execute("ROLLBACK")
        # Each word is one unicode61 token, so one stem each; anything else: not ours to rank.
        return tuple(out) if len(out) == len(words) else None


_STEMMER = _Stemmer()
# Shared by every thread (a dict's get and set are atomic; two threads may stem the same
# words once each, with the same result).
_STEMS: dict[tuple[str, tuple[str, ...]], tuple[str, ...] | None] = {}
_STEMS_MAX = 1 << 16
_UNSEEN = object()


def scope_mask(conn: sqlite3.Connection, scope_sql: ScopeSQL, index: ImpactIndex) -> np.ndarray | None:
    """Rows of ``index`` in the arm's scope (None: all of them)."""
    import numpy as np

    stats = scope_stats(conn, scope_sql)
    if stats.excluded is not None:
        if not stats.excluded:
            return None
        mask = np.ones(len(index.pks), dtype=bool)
        gone = np.fromiter(stats.excluded, dtype=np.int64, count=len(stats.excluded))
        pos = np.searchsorted(index.pks, gone)
        ok = pos < len(index.pks)
        ok[ok] = index.pks[pos[ok]] == gone[ok]
        mask[pos[ok]] = False
        return mask
    cache = conn_cache(conn).setdefault("impact_scope", {})
    key = (index.table, index.state, scope_sql.where, scope_sql.params)
    mask = cache.get(key)
    if mask is None:
        pks = np.fromiter((r[0] for r in conn.execute(
            "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE " + scope_sql.where,
            scope_sql.params)), dtype=np.int64)
        mask = np.zeros(len(index.pks), dtype=bool)
        pos = np.searchsorted(index.pks, pks)
        ok = pos < len(index.pks)
        ok[ok] = index.pks[pos[ok]] == pks[ok]
        mask[pos[ok]] = True
        if len(cache) > 16:
            cache.clear()
        cache[key] = mask
    return mask


def weighted_freqs(index: ImpactIndex, lo: int, hi: int, section_weight: float) -> np.ndarray:
    """FTS5's weighted phrase frequency of postings [lo, hi) (``weighted_freqs_of``)."""
    return weighted_freqs_of(index.freqs[lo:hi], index.section_freqs[lo:hi], section_weight)


def weighted_freqs_of(freqs: np.ndarray, in_section: np.ndarray, section_weight: float) -> np.ndarray:
    """FTS5's weighted phrase frequency of postings (occurrences, of them in section): 1.0
    per occurrence in text, then ``section_weight`` per occurrence in section, added one at
    a time as FTS5 does (text instances come first: FTS5 visits instances in (column,
    offset) order).  A new writable float64 array."""
    import numpy as np

    if section_weight == 1.0:
        return freqs.astype(np.float64)
    f = (freqs.astype(np.int64) - in_section).astype(np.float64)   # sum of 1.0s: exact
    for j in range(int(in_section.max()) if len(in_section) else 0):
        f[in_section > j] += section_weight
    return f


def scores(index: ImpactIndex, stems: list[str], section_weight: float = 1.0) -> np.ndarray:
    """FTS5 bm25 (negated: higher is better) of every row; 0.0 = matches no phrase.

    ``bincount`` adds each row's contributions in input order, i.e. phrase by phrase from
    0.0, as FTS5's loop does, so the sums are the same doubles."""
    import numpy as np

    rows_parts: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    for stem in stems:
        t = index.vocab.get(stem)
        if t is None:
            continue
        lo, hi = int(index.offsets[t]), int(index.offsets[t + 1])
        n_hit = hi - lo
        idf = math.log((float(index.n_rows - n_hit) + 0.5) / (float(n_hit) + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        rows = index.rows[lo:hi]
        f = weighted_freqs(index, lo, hi, section_weight)
        denom = index.norm[rows]
        denom += f                       # f + K
        f *= K1 + 1.0                    # f * (k1 + 1)
        f /= denom
        f *= idf                         # idf * (...), the same product as idf * x
        rows_parts.append(rows)
        parts.append(f)
    if not parts:
        return np.zeros(len(index.pks), dtype=np.float64)
    return np.bincount(np.concatenate(rows_parts), weights=np.concatenate(parts), minlength=len(index.pks))


def topk(index: ImpactIndex, score: np.ndarray, mask: np.ndarray | None, k: int) -> list[tuple[int, float]]:
    """(pk, score) of the best ``k`` matching rows in the mask, best first, ties by pk."""
    import numpy as np

    hit = score > 0.0
    if mask is not None:
        hit &= mask
    cand = np.flatnonzero(hit)
    if len(cand) > k:
        s = score[cand]
        part = np.argpartition(-s, k - 1)[:k]
        kth = s[part].min()
        # Everything strictly above the k-th score, then pk order among the ties at it.
        cand = np.concatenate([cand[s > kth], cand[s == kth]])
    order = np.lexsort((index.pks[cand], -score[cand]))[:k]
    chosen = cand[order]
    return list(zip(index.pks[chosen].tolist(), score[chosen].tolist(), strict=True))


def term_postings(conn: sqlite3.Connection, words: tuple[str, ...],
                  table: str = "passages_fts") -> tuple[ImpactIndex, list[np.ndarray]] | None:
    """The index matching ``conn``'s snapshot and, per word, the sorted row numbers of the
    rows holding it (FTS5's ``MATCH '"word"'``: the word's one stem, any column); None when
    no index matches or a word is not one token (then FTS5 answers)."""
    index = current_index(conn, table)
    if index is None:
        return None
    import numpy as np  # an index is numpy's: a process holding none need not import it

    stems = _STEMMER.stems(index.tokenizer, words) if words else []
    if stems is None:
        return None
    empty = np.zeros(0, dtype=np.int32)
    out = []
    for stem in stems:
        t = index.vocab.get(stem)
        out.append(empty if t is None else index.rows[int(index.offsets[t]):int(index.offsets[t + 1])])
    return index, out


def scoped_df(conn: sqlite3.Connection, scope_sql: ScopeSQL, word: str) -> int | None:
    """In-scope rows holding ``word`` (one token once stemmed), as ``count(*)`` of FTS5's
    ``MATCH '"word"'`` joined with the scope counts them; None when no index matches the
    snapshot or the word is a phrase of several tokens (then FTS5 counts)."""
    index = current_index(conn, "passages_fts")
    if index is None:
        return None
    stems = _STEMMER.stems(index.tokenizer, (word,))
    if stems is None:
        return None
    t = index.vocab.get(stems[0])
    if t is None:
        return 0
    rows = index.rows[int(index.offsets[t]):int(index.offsets[t + 1])]
    mask = scope_mask(conn, scope_sql, index)
    return len(rows) if mask is None else int(mask[rows].sum())


def scores_of(conn: sqlite3.Connection, table: str, words: tuple[str, ...],
              pks: set[int]) -> dict[int, float] | None:
    """-bm25 (unweighted columns) of the rows ``pks`` that match any of ``words``, as
    ``bm25(table)`` of FTS5's OR query gives them; None when no index matches the snapshot
    or a word is not one token (then FTS5 scores)."""
    import numpy as np

    index = current_index(conn, table)
    if index is None:
        return None
    stems = _STEMMER.stems(index.tokenizer, words)
    if stems is None:
        return None
    score = scores(index, stems, 1.0)
    keys = np.fromiter(pks, dtype=np.int64, count=len(pks))
    pos = np.searchsorted(index.pks, keys)
    ok = pos < len(index.pks)
    ok[ok] = index.pks[pos[ok]] == keys[ok]
    got = score[pos[ok]]
    hit = got > 0.0
    return dict(zip(keys[ok][hit].tolist(), got[hit].tolist(), strict=True))


def impact_topk(conn: sqlite3.Connection, scope_sql: ScopeSQL, fetch_depth: int, table: str,
                words: list[str], *, section_weight: float = 1.0) -> list[ArmHit] | None:
    """The arm's hits from the index, or None when it cannot answer for this snapshot
    (missing, stale, a word that is not one token).  ``section_weight``: the section
    column's bm25 weight (``bm25(passages_fts, 1.0, section_weight)``)."""
    index = usable_index(conn, table)
    if index is None:
        STATS["fts5"] += 1
        return None
    stems = _STEMMER.stems(index.tokenizer, tuple(words))
    if stems is None:
        STATS["fts5"] += 1
        return None
    best = topk(index, scores(index, stems, section_weight), scope_mask(conn, scope_sql, index), fetch_depth)
    STATS["impact"] += 1
    return [ArmHit(pk=pk, rank=i, raw=s) for i, (pk, s) in enumerate(best, 1)]
