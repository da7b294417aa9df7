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
from typing import TYPE_CHECKING

from memo.retrieve.impact import _STEMMER, B, K1, STATS, weighted_freqs_of
from memo.retrieve.scope import scope_stats
from memo.retrieve.types import ArmHit
from memo.store import kw_postings

if TYPE_CHECKING:
    import numpy as np

    from memo.retrieve.scope import ScopeSQL

# Decoded base rows, by (database file, base generation, term); a merge moves the
# generation, so an entry never outlives the row it was read from.
_CACHE: dict[tuple[str, int, str], tuple[np.ndarray, ...]] = {}
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


def _base(conn: sqlite3.Connection, path: str, meta: kw_postings.Meta, term: str) -> tuple[np.ndarray, ...]:
    key = (path, meta.generation, term)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    arrays = kw_postings.decode(kw_postings.base_row(conn, term))
    if path:
        with _LOCK:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.clear()
            _CACHE[key] = arrays
    return arrays


def postings(conn: sqlite3.Connection, path: str, meta: kw_postings.Meta,
             term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pks, tf, sec, dl) of ``term`` at the snapshot: the base with the delta applied."""
    return kw_postings.apply_delta(_base(conn, path, meta, term), kw_postings.delta_rows(conn, term))


def stems_of(conn: sqlite3.Connection, words: tuple[str, ...]) -> list[str] | None:
    return _STEMMER.stems(kw_postings.table_tokenizer(conn), words)


def scores(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str],
           section_weight: float) -> np.ndarray:
    """FTS5 bm25 (negated: higher is better) indexed by pk; 0.0 = matches no phrase.
    ``bincount`` adds each pk's contributions in input order, phrase by phrase from 0.0,
    as FTS5's loop does, so the sums are the same doubles."""
    import numpy as np

    path = _db_file(conn)
    n_rows = meta.rows
    avgdl = float(meta.tokens) / float(n_rows) if n_rows else 1.0
    pk_parts: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    for stem in stems:
        pks, tf, sec, dl = postings(conn, path, meta, stem)
        n_hit = len(pks)
        if not n_hit:
            continue
        idf = math.log((float(n_rows - n_hit) + 0.5) / (float(n_hit) + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        f = weighted_freqs_of(tf, sec, section_weight)
        # FTS5: k1 * (1 - b + b * D / avgdl), left to right as C evaluates it.
        denom = K1 * ((1 - B) + (B * dl.astype(np.float64)) / avgdl)
        denom += f                       # f + K
        f *= K1 + 1.0                    # f * (k1 + 1)
        f /= denom
        f *= idf                         # idf * (...)
        pk_parts.append(pks.astype(np.int64))
        parts.append(f)
    if not parts:
        return np.zeros(0, dtype=np.float64)
    every = np.concatenate(pk_parts)
    return np.bincount(every, weights=np.concatenate(parts), minlength=int(every.max()) + 1)


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
    score = scores(conn, meta, stems, section_weight)
    stats = scope_stats(conn, scope_sql)
    chosen: list[int] = []
    if stats.excluded is not None:
        if stats.excluded and len(score):
            import numpy as np

            gone = np.fromiter((p for p in stats.excluded if p < len(score)), dtype=np.int64)
            score[gone] = 0.0
        chosen = _ordered(score, fetch_depth)[:fetch_depth].tolist()
    else:
        # Best first: a growing prefix of the order, checked against the scope in SQL.
        m = fetch_depth * SCOPE_CHUNK
        done = 0
        while len(chosen) < fetch_depth:
            order = _ordered(score, m)
            chunk = order[done:].tolist()
            if not chunk:
                break
            allowed = _in_scope(conn, scope_sql, chunk)
            chosen += [p for p in chunk if p in allowed]
            done = len(order)
            if done < m:        # the whole order was read
                break
            m *= 4
        chosen = chosen[:fetch_depth]
    STATS["postings"] += 1
    STATS["impact"] += 1
    return [ArmHit(pk=pk, rank=i, raw=float(score[pk])) for i, pk in enumerate(chosen, 1)]
