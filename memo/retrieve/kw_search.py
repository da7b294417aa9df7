"""The keyword arm over the persistent postings (``memo.store.kw_postings``, issue 31.1):
FTS5's bm25 bit for bit, from the query terms' postings only, in any process from its
first search and right after a write (no rebuild: a write's postings are in the delta).

Scores: FTS5's formula with the same floating-point operations in the same order as
``memo.retrieve.impact`` (its module docstring derives them from fts5_aux.c); the numbers
bm25() reads come from the same snapshot: N and the token total from FTS5's averages
record, a term's document count from its postings, a row's length stored in each posting
(FTS5's docsize).  The postings are used only when the maintained row and token counts
(``kw_meta``) equal FTS5's own: anything that wrote FTS5 without them (none of memo's
writes) makes the search fall back to FTS5 instead of ranking from stale postings.

Cost of a search: per query term one base row (packed arrays, decoded by numpy without a
copy; cached per base generation, so a warm process reads only the delta rows of its
terms) and the term's delta rows (few: merges fold them into the base), then the same
vector arithmetic as the in-memory index.  Scope: the few excluded pks are dropped
(``scope_stats.excluded``); with many, candidates are checked against the scope in SQL
best first, a chunk at a time, until ``fetch_depth`` are in scope: never a scan of every
passage.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memo.retrieve.impact import _STEMMER, K1, STATS, B, weighted_freqs_of
from memo.retrieve.scope import scope_stats
from memo.retrieve.types import ArmHit
from memo.store import kw_postings

if TYPE_CHECKING:
    import numpy as np

    from memo.retrieve.scope import ScopeSQL

# Per (database file, base generation, term): the term's postings with the delta applied up
# to write ``seq``, and its bm25 terms for one (rows, tokens, weight).  A merge moves the
# generation, so an entry never outlives the base row it was read from; a later snapshot
# applies only the delta rows written since ``seq`` (usually none or one), an earlier one
# (seq below the entry's) reads afresh.
_CACHE: dict[tuple[str, int, str], _Entry] = {}
_CACHE_MAX = 4096
_LOCK = threading.Lock()
SCOPE_CHUNK = 4     # best-first scope checks take fetch_depth x this many candidates at a time


def usable(conn: sqlite3.Connection) -> kw_postings.Meta | None:
    """The postings' meta when they describe ``conn``'s snapshot of passages_fts, else None."""
    meta = kw_postings.read_meta(conn)
    if meta is None or not meta.built or not meta.native:
        return None
    if kw_postings.fts_totals(conn) != (meta.rows, meta.tokens):
        return None
    return meta


def _db_file(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA database_list").fetchone()[2] or "")


def postings(conn: sqlite3.Connection, path: str, meta: kw_postings.Meta, term: str) -> _Entry:
    """``term``'s postings at ``conn``'s snapshot: the base with the delta applied."""
    key = (path, meta.generation, term)
    hit = _CACHE.get(key)
    if hit is not None and hit.seq == meta.seq:
        return hit
    if hit is not None and hit.seq < meta.seq:
        rows = conn.execute("SELECT pk, tf, sec, dl FROM kw_delta WHERE term = ? AND seq > ? ORDER BY seq, pk",
                            (term, hit.seq)).fetchall()
        arrays = kw_postings.apply_delta(hit.arrays, rows) if rows else hit.arrays
    else:
        arrays = kw_postings.apply_delta(kw_postings.decode(kw_postings.base_row(conn, term)),
                                         kw_postings.delta_rows(conn, term))
    entry = _Entry(meta.seq, arrays)
    if path and (hit is None or hit.seq < meta.seq):
        with _LOCK:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.clear()
            _CACHE[key] = entry
    return entry


def stems_of(conn: sqlite3.Connection, words: tuple[str, ...]) -> list[str] | None:
    return _STEMMER.stems(kw_postings.table_tokenizer(conn), words)


@dataclass(slots=True)
class _Entry:
    seq: int                            # the delta is applied up to this write
    arrays: tuple[np.ndarray, ...]      # pks (ascending), tf, sec, dl
    contrib_key: tuple[int, int, float] | None = None   # (rows, tokens, weight) of contrib
    contrib: np.ndarray | None = None   # every posting's bm25 term, idf included


@dataclass(frozen=True, slots=True)
class _Term:
    pks: np.ndarray       # ascending
    tf: np.ndarray
    sec: np.ndarray
    dl: np.ndarray
    idf: float
    entry: _Entry


def _terms(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str]) -> list[_Term]:
    """The query's phrases in order, with their postings and FTS5's idf (phrases no row
    holds are left out: they add nothing to any score)."""
    path = _db_file(conn)
    out = []
    for stem in stems:
        entry = postings(conn, path, meta, stem)
        pks, tf, sec, dl = entry.arrays
        n_hit = len(pks)
        if not n_hit:
            continue
        idf = math.log((float(meta.rows - n_hit) + 0.5) / (float(n_hit) + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        out.append(_Term(pks, tf, sec, dl, idf, entry))
    return out


def _contrib(t: _Term, tf: np.ndarray, sec: np.ndarray, dl: np.ndarray, avgdl: float, section_weight: float
             ) -> np.ndarray:
    """FTS5's per-phrase term ``idf * (f * (k1 + 1)) / (f + K)``, with the same operations
    in the same order as fts5Bm25Function."""
    import numpy as np

    f = weighted_freqs_of(tf, sec, section_weight)
    # FTS5: k1 * (1 - b + b * D / avgdl), left to right as C evaluates it.
    denom = K1 * ((1 - B) + (B * dl.astype(np.float64)) / avgdl)
    denom += f                       # f + K
    f *= K1 + 1.0                    # f * (k1 + 1)
    f /= denom
    f *= t.idf                       # idf * (...)
    return f


def _all_contrib(t: _Term, meta: kw_postings.Meta, avgdl: float, section_weight: float) -> np.ndarray:
    """The phrase's term for each of its postings (cached with the postings: the same
    doubles for the same rows, tokens and weight; a subset is the same elementwise)."""
    key = (meta.rows, meta.tokens, section_weight)
    entry = t.entry
    if entry.contrib_key != key or entry.contrib is None:
        entry.contrib = _contrib(t, t.tf, t.sec, t.dl, avgdl, section_weight)
        entry.contrib_key = key
    return entry.contrib


def scores(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str],
           section_weight: float) -> np.ndarray:
    """FTS5 bm25 (negated: higher is better) indexed by pk; 0.0 = matches no phrase.
    ``bincount`` adds each pk's contributions in input order, phrase by phrase from 0.0,
    as FTS5's loop does, so the sums are the same doubles."""
    return _dense(_terms(conn, meta, stems), meta, _avgdl(meta), section_weight)


def _avgdl(meta: kw_postings.Meta) -> float:
    return float(meta.tokens) / float(meta.rows) if meta.rows else 1.0


def _dense(terms: list[_Term], meta: kw_postings.Meta, avgdl: float, section_weight: float) -> np.ndarray:
    import numpy as np

    if not terms:
        return np.zeros(0, dtype=np.float64)
    every = np.concatenate([t.pks.astype(np.int64) for t in terms])
    weights = np.concatenate([_all_contrib(t, meta, avgdl, section_weight) for t in terms])
    return np.bincount(every, weights=weights, minlength=int(every.max()) + 1)


def _ordered(score: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` (or more, at a tie) pks of the order (score desc, pk asc) among
    the matching ones: an exact prefix of that order."""
    import numpy as np

    cand = np.flatnonzero(score > 0.0)
    if len(cand) > m:
        s = score[cand]
        kth = s[np.argpartition(-s, m - 1)[m - 1]]
        cand = cand[s >= kth]
    return cand[np.lexsort((cand, -score[cand]))]


def _in_scope(conn: sqlite3.Connection, scope_sql: ScopeSQL, pks: list[int]) -> set[int]:
    marks = ",".join("?" * len(pks))
    return {int(r[0]) for r in conn.execute(
        f"SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE p.pk IN ({marks}) AND "
        + scope_sql.where, (*pks, *scope_sql.params))}


def _scoped_prefix(conn: sqlite3.Connection, scope_sql: ScopeSQL, excluded: frozenset[int] | None,
                   order: np.ndarray, k: int) -> list[int]:
    """The first ``k`` pks of ``order`` in the scope: the listed exclusions dropped, or the
    scope checked in SQL a chunk at a time, best first."""
    if excluded is not None:
        out = [p for p in order[:k + len(excluded)].tolist() if p not in excluded] if excluded else order[:k].tolist()
        return out[:k]
    chosen: list[int] = []
    step = k * SCOPE_CHUNK
    done = 0
    while len(chosen) < k and done < len(order):
        chunk = order[done:done + step].tolist()
        allowed = _in_scope(conn, scope_sql, chunk)
        chosen += [p for p in chunk if p in allowed]
        done += len(chunk)
        step *= 4
    return chosen[:k]


def topk(conn: sqlite3.Connection, scope_sql: ScopeSQL, fetch_depth: int, words: list[str], *,
         section_weight: float = 1.0, merge_rows: int | None = None) -> list[ArmHit] | None:
    """The keyword arm's hits from the persistent postings, or None when they cannot answer
    for this snapshot (absent, stale, a word that is not one token): then another path does.
    A delta of ``merge_rows`` rows or more starts a background merge (``index.keyword_merge_rows``)."""
    meta = usable(conn)
    if meta is None:
        return None
    if merge_rows is not None and meta.delta >= merge_rows:
        kw_postings.schedule_merge(_db_file(conn))
    stems = stems_of(conn, tuple(words))
    if stems is None:
        return None
    terms = _terms(conn, meta, stems)
    avgdl = _avgdl(meta)
    excluded = scope_stats(conn, scope_sql).excluded
    score = _dense(terms, meta, avgdl, section_weight)
    if excluded is not None:
        order = _ordered(score, fetch_depth + len(excluded))
        chosen = _scoped_prefix(conn, scope_sql, excluded, order, fetch_depth)
    else:   # a growing prefix of the order, so a scope that keeps most rows sorts few
        m = fetch_depth * SCOPE_CHUNK
        while True:
            order = _ordered(score, m)
            chosen = _scoped_prefix(conn, scope_sql, None, order, fetch_depth)
            if len(chosen) >= fetch_depth or len(order) < m:
                break
            m *= 4
    best = [(p, float(score[p])) for p in chosen]
    STATS["postings"] += 1
    STATS["impact"] += 1
    return [ArmHit(pk=pk, rank=i, raw=s) for i, (pk, s) in enumerate(best, 1)]
