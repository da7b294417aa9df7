"""The keyword arm over the persistent postings (``memo.store.kw_postings``, issue 31.1):
FTS5's bm25 bit for bit, from the query terms' postings only, in any process from its
first search and right after a write (no rebuild: a write's postings are in the delta).

The numbers bm25() reads come from the same snapshot: N and the token total from FTS5's
averages record, a term's document count from its postings, a row's length stored in each
posting (FTS5's docsize).  The postings are used only when the maintained row and token
counts (``kw_meta``) equal FTS5's own: anything that wrote FTS5 without them (none of
memo's writes) makes the search fall back to FTS5 instead of ranking from stale postings.

Cost of a search: per query term one base row (packed arrays, decoded by numpy without a
copy; cached per base generation, so a warm process reads only the delta rows of its
terms) and the term's delta rows (few: merges fold them into the base), then one of the
rankings of ``memo.retrieve.kw_rank``: every posting summed, or, once the query's phrases
hold ``PRUNE_POSTINGS`` postings, the pruned sum.  A cold process's first search ranks in
Python (numpy left unimported) unless that would visit more than ``PY_MAX_POSTINGS``
postings (~0.5-0.65 us each: past ~100k numpy's import and its ranking cost less); later
searches in the process, and every search of a process that already holds numpy, use numpy
and the caches.  Scope: the few excluded pks are dropped (``scope_stats.excluded``); with
many, candidates are checked against the scope in SQL best first, a chunk at a time, until
``fetch_depth`` are in scope: never a scan of every passage.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.impact import _STEMMER, STATS
from memo.retrieve.kw_rank import (
    Entry,
    NumpyMatched,
    NumpyPruned,
    Phrase,
    PyRank,
    Term,
    avgdl_of,
    dense_scores,
    find_sorted,
    idf_of,
    phrase_terms,
)
from memo.retrieve.scope import scope_stats
from memo.retrieve.types import ArmHit
from memo.store import kw_postings
from memo.store.connect import db_file

if TYPE_CHECKING:
    import numpy as np

    from memo.retrieve.scope import ScopeSQL

# Per (database file, base generation, term): the term's postings with the delta applied up
# to write ``seq``, and its bm25 terms for one (rows, tokens, weight).  A merge moves the
# generation, so an entry never outlives the base row it was read from; a later snapshot
# applies only the delta rows written since ``seq`` (usually none or one), an earlier one
# (seq below the entry's) reads afresh.
_CACHE: dict[tuple[str, int, str], Entry] = {}
_CACHE_MAX = 4096
_LOCK = threading.Lock()
SCOPE_CHUNK = 4     # best-first scope checks take fetch_depth x this many candidates at a time
# Which ranking a search uses: "auto" (Python for a process's first search when numpy is not
# loaded, numpy otherwise: dense or pruned by ``PRUNE_POSTINGS``), or "python" / "numpy" (numpy
# as "auto" picks it) / "dense" / "pruned" (the tests check each against FTS5).
RANKER = "auto"
# numpy sums every posting of a query's phrases below this many, and prunes (``NumpyPruned``)
# from it: SciFact claims at 1M passages hold ~3M postings (dense 30 ms warm, pruned 15 ms), at
# 100k ~300k (dense 1.8 ms, pruned 2.3: its fixed cost).  Measured, bench notes in docs/scale.md.
PRUNE_POSTINGS = 300_000
PY_MAX_POSTINGS = 100_000   # "auto": numpy ranks once the Python ranking has visited more postings (~0.5-0.65 us each)
# "auto": numpy ranks from the start when the phrases hold more postings (base and delta): the Python
# ranking visits 12-60% of them (SciFact claims, docs/scale.md "Session 29"), so past ~4x its cap
# it nearly always stops at the cap, after ~50 ms of visits a cold process then pays again.
PY_MAX_PHRASE_POSTINGS = 4 * PY_MAX_POSTINGS
_searched = False          # this process ran a postings search already
_UNREAD = object()


def usable(conn: sqlite3.Connection) -> kw_postings.Meta | None:
    """The postings' meta when they describe ``conn``'s snapshot of passages_fts, else None
    (kept in ``conn_cache`` until the data changes: the searches between two writes ask the
    same three statements' answer)."""
    cache = conn_cache(conn)
    got = cache.get("kw_usable", _UNREAD)
    if got is _UNREAD:
        got = cache["kw_usable"] = _usable(conn)
    return got


def _usable(conn: sqlite3.Connection) -> kw_postings.Meta | None:
    meta = kw_postings.read_meta(conn)
    if meta is None or not meta.built or not meta.native:
        return None
    if kw_postings.fts_totals(conn) != (meta.rows, meta.tokens):
        return None
    return meta


def postings(conn: sqlite3.Connection, path: str, meta: kw_postings.Meta, term: str) -> Entry:
    """``term``'s postings at ``conn``'s snapshot: the base with the delta applied."""
    import numpy as np  # only the numpy rankings read these

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
        if arrays[0].dtype != np.int64:   # numpy casts an int32 index to int64 at every ``score[pks]``
            arrays = (arrays[0].astype(np.int64), *arrays[1:])
    entry = Entry(meta.seq, arrays)
    if path and (hit is None or hit.seq < meta.seq):
        _keep(key, entry)
    return entry


def _keep(key: tuple[str, int, str], entry: Entry) -> None:
    with _LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = entry


_SINCE_SQL = ("SELECT term, seq, pk, tf, sec, dl FROM kw_delta WHERE term IN (SELECT value FROM json_each(?))"
              " AND seq > ? ORDER BY term, seq, pk")


def _catch_up(conn: sqlite3.Connection, path: str, meta: kw_postings.Meta, stems: list[str]) -> None:
    """Bring the cached terms of ``stems`` that an earlier snapshot left behind up to
    ``meta.seq`` with one statement for all of them (``postings`` would ask once per
    term): after a write, every term of a warm query is behind by that write."""
    behind: dict[str, Entry] = {}
    for stem in stems:
        hit = _CACHE.get((path, meta.generation, stem))
        if hit is not None and hit.seq < meta.seq:
            behind[stem] = hit
    if len(behind) < 2:
        return      # ``postings`` asks for the one alone
    rows: dict[str, list[tuple[int, int, int, int]]] = {stem: [] for stem in behind}
    for term, seq, pk, tf, sec, dl in conn.execute(_SINCE_SQL, (json.dumps(list(behind)),
                                                               min(h.seq for h in behind.values()))):
        if seq > behind[term].seq:
            rows[term].append((pk, tf, sec, dl))
    for stem, hit in behind.items():
        got = rows[stem]
        _keep((path, meta.generation, stem),
              Entry(meta.seq, kw_postings.apply_delta(hit.arrays, got) if got else hit.arrays))


def stems_of(conn: sqlite3.Connection, words: tuple[str, ...]) -> list[str] | None:
    cache = conn_cache(conn)
    tokenizer = cache.get("kw_tokenizer")
    if tokenizer is None:
        tokenizer = cache["kw_tokenizer"] = kw_postings.table_tokenizer(conn)
    return _STEMMER.stems(tokenizer, words)


def _terms(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str]) -> list[Term]:
    """The query's phrases in order, with their postings and FTS5's idf (phrases no row
    holds are left out: they add nothing to any score)."""
    path = db_file(conn)
    if path:
        _catch_up(conn, path, meta, stems)
    out = []
    for stem in stems:
        entry = postings(conn, path, meta, stem)
        pks, tf, sec, dl = entry.arrays
        if len(pks):
            out.append(Term(pks, tf, sec, dl, idf_of(meta, len(pks)), entry))
    return out


def scores(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str],
           section_weight: float) -> np.ndarray:
    """FTS5 bm25 (negated: higher is better) indexed by pk; 0.0 = matches no phrase.
    Each pk's contributions are added phrase by phrase in query order from 0.0,
    as FTS5's loop does, so the sums are the same doubles."""
    return dense_scores(_terms(conn, meta, stems), meta, avgdl_of(meta), section_weight)


def scores_for(conn: sqlite3.Connection, words: Sequence[str], pks: Sequence[int]) -> dict[int, float] | None:
    """-bm25 (unweighted columns) of the rows ``pks`` that match any of ``words``, as
    ``bm25(passages_fts)`` of FTS5's OR query gives them (rows matching none left out), from
    the persistent postings: each phrase's terms looked up for these rows only.  None when
    the postings do not describe the snapshot or a word is not one token (then FTS5 scores).
    The entity arm's tiebreak: through FTS5 it scored every row the OR query matches (a
    SciFact claim at 1M passages: ~0.8 s of a hybrid search)."""
    meta = usable(conn)
    if meta is None:
        return None
    stems = stems_of(conn, tuple(words))
    if stems is None:
        return None
    if not _numpy_loaded():      # a cold keyword process: no numpy for a tiebreak
        return _py_rank(conn, meta, stems, 1.0, None).scores_of(pks)
    import numpy as np

    keys = np.unique(np.asarray(pks, dtype=np.int64))
    total = np.zeros(len(keys), dtype=np.float64)
    avgdl = avgdl_of(meta)
    for t in _terms(conn, meta, stems):    # the keyword arm's postings, cached
        at, ok = find_sorted(t.pks, keys)
        at = at[ok]
        # a subset's terms are the same doubles elementwise; added phrase by phrase from 0.0
        total[ok] += phrase_terms(t, t.tf[at], t.sec[at], t.dl[at], avgdl, 1.0)
    hit = total > 0.0
    return dict(zip(keys[hit].tolist(), total[hit].tolist(), strict=True))


def _in_scope(conn: sqlite3.Connection, scope_sql: ScopeSQL, pks: list[int]) -> set[int]:
    marks = ",".join("?" * len(pks))
    return {int(r[0]) for r in conn.execute(
        f"SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE p.pk IN ({marks}) AND "
        + scope_sql.where, (*pks, *scope_sql.params))}


def _scoped_prefix(conn: sqlite3.Connection, scope_sql: ScopeSQL, excluded: frozenset[int] | None,
                   order: list[int], k: int) -> list[int]:
    """The first ``k`` pks of ``order`` in the scope: the listed exclusions dropped, or the
    scope checked in SQL a chunk at a time, best first."""
    if excluded is not None:
        out = [p for p in order[:k + len(excluded)] if p not in excluded] if excluded else order[:k]
        return out[:k]
    chosen: list[int] = []
    step = k * SCOPE_CHUNK
    done = 0
    while len(chosen) < k and done < len(order):
        chunk = order[done:done + step]
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
        kw_postings.schedule_merge(db_file(conn))
    stems = stems_of(conn, tuple(words))
    if stems is None:
        return None
    global _searched
    python = RANKER == "python" or (RANKER == "auto" and not _searched and not _numpy_loaded()
                                    and _phrase_postings(conn, stems) <= PY_MAX_PHRASE_POSTINGS)
    _searched = True
    rank: PyRank | NumpyMatched | NumpyPruned = (
        _py_rank(conn, meta, stems, section_weight, None if RANKER == "python" else PY_MAX_POSTINGS) if python
        else _numpy_rank(_terms(conn, meta, stems), meta, section_weight))

    def order_of(m: int) -> list[int]:
        nonlocal rank
        got = rank.order(m)
        if got is None:       # the Python ranking would visit too many postings: numpy ranks
            rank = _numpy_rank(_terms(conn, meta, stems), meta, section_weight)
            got = rank.order(m)
        return got

    excluded = scope_stats(conn, scope_sql).excluded
    if excluded is not None:
        order = order_of(fetch_depth + len(excluded))
        chosen = _scoped_prefix(conn, scope_sql, excluded, order, fetch_depth)
    else:   # a growing prefix of the order, so a scope that keeps most rows sorts few
        m = fetch_depth * SCOPE_CHUNK
        while True:
            order = order_of(m)
            chosen = _scoped_prefix(conn, scope_sql, None, order, fetch_depth)
            if len(chosen) >= fetch_depth or len(order) < m:
                break
            m *= 4
    best = [(p, rank.score(p)) for p in chosen]
    STATS["postings"] += 1
    STATS["impact"] += 1
    return [ArmHit(pk=pk, rank=i, raw=s) for i, (pk, s) in enumerate(best, 1)]


def scoped_df(conn: sqlite3.Connection, scope_sql: ScopeSQL, word: str) -> int | None:
    """In-scope passages holding ``word`` (one token once stemmed), as ``count(*)`` of
    FTS5's ``MATCH '"word"'`` joined with the scope counts them: the term's postings, less
    the scope's listed exclusions.  None when the postings do not describe the snapshot,
    the word is several tokens or the scope rules out too many passages to list (then
    another path counts).  Routing asks this for every query word: through FTS5 the join
    read every holder's passage and record (282 ms a word at 1M passages)."""
    meta = usable(conn)
    excluded = scope_stats(conn, scope_sql).excluded if meta is not None else None
    stems = stems_of(conn, (word,)) if excluded is not None else None
    if meta is None or stems is None:
        return None
    pks = postings(conn, db_file(conn), meta, stems[0]).arrays[0]
    if not excluded or not len(pks):
        return len(pks)
    import numpy as np  # a search that routes has it already (the keyword path does not)

    ex = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
    pos = np.searchsorted(pks, ex)
    inside = pos < len(pks)
    return len(pks) - int((pks[pos[inside]] == ex[inside]).sum())


def _phrase_postings(conn: sqlite3.Connection, stems: list[str]) -> int:
    """The phrases' postings, base (``kw_base.df``) and delta rows: what the Python ranking
    would have to read, and roughly what it would visit."""
    if not stems:
        return 0
    marks = ",".join("?" * len(stems))
    counts: dict[str, int] = {}
    for term, n in conn.execute(f"SELECT term, df FROM kw_base WHERE term IN ({marks}) UNION ALL "
                                f"SELECT term, count(*) FROM kw_delta WHERE term IN ({marks}) GROUP BY term",
                                (*stems, *stems)):
        counts[term] = counts.get(term, 0) + n
    return sum(counts.get(s, 0) for s in stems)


def _numpy_loaded() -> bool:
    """This process imported numpy already (then its cached arrays cost nothing extra)."""
    return "numpy" in sys.modules


def term_holders(conn: sqlite3.Connection, terms: Sequence[str], rows: Sequence[int]
                 ) -> list[tuple[str, int, list[int]]] | None:
    """Keyword evidence's counts from the postings: per term, the rows of ``passages_fts``
    holding it (FTS5's ``count(*)`` of ``MATCH '"term"'``: the postings mirror exactly those
    rows) and which of ``rows`` (passage pks) hold it, by binary search; None when the
    postings do not describe the snapshot or a term is several tokens (then FTS5 answers).
    Through FTS5 a common word's count read its whole posting list (~25 ms of a cold hybrid
    search at 1M passages).  A process without numpy reads the postings as arrays."""
    meta = usable(conn)
    if meta is None:
        return None
    stems = stems_of(conn, tuple(terms)) if terms else []
    if stems is None:
        return None
    path = db_file(conn)
    cand = sorted(set(rows))
    out = []
    read: dict[str, Sequence[int]] = {}
    for term, stem in zip(terms, stems, strict=True):
        pks = read.get(stem)
        if pks is None:
            pks = read[stem] = (postings(conn, path, meta, stem).arrays[0] if _numpy_loaded()
                                else _py_postings(conn, stem)[0])
        n, held, lo = len(pks), [], 0
        for r in cand:
            lo = bisect_left(pks, r, lo)
            if lo == n:
                break
            if pks[lo] == r:
                held.append(r)
        out.append((term, n, held))
    return out


def _numpy_rank(terms: list[Term], meta: kw_postings.Meta, section_weight: float) -> NumpyMatched | NumpyPruned:
    """Every posting summed (``matched_scores``), or pruned (``NumpyPruned``) once the phrases hold
    ``PRUNE_POSTINGS`` postings or more: the same order and doubles either way."""
    if RANKER == "dense" or (RANKER != "pruned" and sum(len(t.pks) for t in terms) < PRUNE_POSTINGS):
        return NumpyMatched(terms, meta, section_weight)
    return NumpyPruned(terms, meta, section_weight)


def _py_rank(conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str], section_weight: float,
             cap: int | None) -> PyRank:
    """The Python ranking over ``stems``' postings (a stem asked twice is read once)."""
    read: dict[str, tuple[Sequence[int], ...]] = {}
    phrases = []
    for stem in stems:
        post = read.get(stem)
        if post is None:
            post = read[stem] = _py_postings(conn, stem)
        if len(post[0]):
            phrases.append(Phrase(*post, idf=idf_of(meta, len(post[0]))))
    return PyRank(phrases, avgdl_of(meta), section_weight, cap)


def _py_postings(conn: sqlite3.Connection, term: str) -> tuple[Sequence[int], ...]:
    """``term``'s postings at ``conn``'s snapshot (pks ascending, tf, sec, dl), without numpy:
    the base row's arrays, the delta applied as ``kw_postings.apply_delta`` does (in write
    order, the last row of a pk wins, tf 0 removes it)."""
    row = kw_postings.base_row(conn, term)
    pks, tf, sec, dl = kw_postings.unpack(*row) if row is not None else ((), (), (), ())
    delta = kw_postings.delta_rows(conn, term)
    if not delta:
        return pks, tf, sec, dl
    last = {pk: (t, s, d) for pk, t, s, d in delta}
    held = {p: (t, s, d) for p, t, s, d in zip(pks, tf, sec, dl, strict=True) if p not in last}
    held.update((p, v) for p, v in last.items() if v[0])
    keys = sorted(held)
    return keys, [held[p][0] for p in keys], [held[p][1] for p in keys], [held[p][2] for p in keys]
