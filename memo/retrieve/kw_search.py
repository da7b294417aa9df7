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
vector arithmetic as the in-memory index: every posting summed (``_dense``), or, once the
query's phrases hold ``PRUNE_POSTINGS`` postings, the pruned sum below (``_NumpyPruned``).  Scope: the few excluded pks are dropped
(``scope_stats.excluded``); with many, candidates are checked against the scope in SQL
best first, a chunk at a time, until ``fetch_depth`` are in scope: never a scan of every
passage.

A cold process's first search ranks without numpy (``_PyRank``): importing numpy is ~60 ms,
most of what a one-shot ``memo search --mode keyword`` would spend (issue 31.2).  The same
doubles from the same operations in the same order (Python floats are IEEE doubles), and
MaxScore's pruning so a common word's postings are only looked up for the candidates the
rarer words give: phrases are taken rarest first, and once the m-th best partial score
exceeds the summed bounds (``idf * (k1 + 1)``) of the phrases not taken yet, no passage
outside the candidates can enter the first m.  The phrases left are then looked up for
the candidates only, and after each one the candidates that can no longer reach the m-th
(their partial plus the bounds still left below the m-th best partial) are dropped, so a
long question's common words are searched for a few passages, not for every passage its
rarer words hold.  The survivors' scores are summed phrase by phrase in query order, as
FTS5 and ``bincount`` do.  When the ranking would visit more than ``PY_MAX_POSTINGS``
postings, numpy ranks instead (past ~100k postings, ~0.5-0.65 us each, numpy's import
and a dense sum cost less).  Later searches in the
process, and every search of a process that already holds numpy, use numpy and the caches.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
import sys
import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memo.retrieve.impact import _STEMMER, K1, STATS, B, weighted_freqs_of
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
_CACHE: dict[tuple[str, int, str], _Entry] = {}
_CACHE_MAX = 4096
_LOCK = threading.Lock()
SCOPE_CHUNK = 4     # best-first scope checks take fetch_depth x this many candidates at a time
# Which ranking a search uses: "auto" (Python for a process's first search when numpy is not
# loaded, numpy otherwise: dense or pruned by ``PRUNE_POSTINGS``), or "python" / "numpy" (numpy
# as "auto" picks it) / "dense" / "pruned" (the tests check each against FTS5).
RANKER = "auto"
# numpy sums every posting of a query's phrases below this many, and prunes (``_NumpyPruned``)
# from it: SciFact claims at 1M passages hold ~3M postings (dense 30 ms warm, pruned 15 ms), at
# 100k ~300k (dense 1.8 ms, pruned 2.3: its fixed cost).  Measured, bench notes in docs/scale.md.
PRUNE_POSTINGS = 300_000
PY_MAX_POSTINGS = 100_000   # "auto": numpy ranks once the Python ranking has visited more postings (~0.5-0.65 us each)
_BOUND_MARGIN = 1.0 + 1e-9   # a phrase's bound, widened past any rounding of its terms
_searched = False          # this process ran a postings search already


def usable(conn: sqlite3.Connection) -> kw_postings.Meta | None:
    """The postings' meta when they describe ``conn``'s snapshot of passages_fts, else None."""
    meta = kw_postings.read_meta(conn)
    if meta is None or not meta.built or not meta.native:
        return None
    if kw_postings.fts_totals(conn) != (meta.rows, meta.tokens):
        return None
    return meta


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
    path = db_file(conn)
    out = []
    for stem in stems:
        entry = postings(conn, path, meta, stem)
        pks, tf, sec, dl = entry.arrays
        if len(pks):
            out.append(_Term(pks, tf, sec, dl, _idf(meta, len(pks)), entry))
    return out


def _idf(meta: kw_postings.Meta, n_hit: int) -> float:
    """FTS5's idf of a phrase ``n_hit`` rows hold (fts5_aux.c: floored at 1e-6)."""
    idf = math.log((float(meta.rows - n_hit) + 0.5) / (float(n_hit) + 0.5))
    return 1e-6 if idf <= 0.0 else idf


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
    python = RANKER == "python" or (RANKER == "auto" and not _searched and "numpy" not in sys.modules)
    _searched = True
    rank: _PyRank | _NumpyRank | _NumpyPruned = (
        _PyRank.of(conn, meta, stems, section_weight, None if RANKER == "python" else PY_MAX_POSTINGS) if python
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


def _numpy_rank(terms: list[_Term], meta: kw_postings.Meta, section_weight: float) -> _NumpyRank | _NumpyPruned:
    """Every posting summed (``_dense``), or pruned (``_NumpyPruned``) once the phrases hold
    ``PRUNE_POSTINGS`` postings or more: the same order and doubles either way."""
    if RANKER == "dense" or (RANKER != "pruned" and sum(len(t.pks) for t in terms) < PRUNE_POSTINGS):
        return _NumpyRank(_dense(terms, meta, _avgdl(meta), section_weight))
    return _NumpyPruned.of(terms, meta, section_weight)


class _NumpyRank:
    """The order and scores from the dense score array (``_dense``)."""

    def __init__(self, score: np.ndarray) -> None:
        self._score = score

    def order(self, m: int) -> list[int]:
        return _ordered(self._score, m).tolist()

    def score(self, pk: int) -> float:
        return float(self._score[pk])


class _NumpyPruned:
    """The first ``m`` of the order with ``_PyRank``'s pruning in numpy: the rarest phrases'
    terms summed into a dense partial (each phrase's pks are distinct, so ``+=`` at them
    adds once) until the m-th best partial beats the bounds of the phrases left; then the
    candidates' terms of each phrase left found by binary search (``searchsorted``), the
    candidates that can no longer reach the m-th dropped after each; the survivors' scores
    summed phrase by phrase in query order from 0.0 (``bincount``'s order: the same
    doubles).  At 1M passages a long question's common words hold millions of postings
    that ``_dense`` adds up for every passage; here they are looked up for a few hundred."""

    def __init__(self, terms: list[_Term], meta: kw_postings.Meta, section_weight: float) -> None:
        self._terms, self._meta, self._weight, self._avgdl = terms, meta, section_weight, _avgdl(meta)
        self._m = -1
        self._cand: np.ndarray | None = None
        self._total: np.ndarray | None = None
        self._scores: dict[int, float] | None = None

    @classmethod
    def of(cls, terms: list[_Term], meta: kw_postings.Meta, section_weight: float) -> _NumpyPruned:
        return cls(terms, meta, section_weight)

    def _every(self, i: int) -> np.ndarray:
        """Phrase ``i``'s term for each of its postings (cached with the postings)."""
        return _all_contrib(self._terms[i], self._meta, self._avgdl, self._weight)

    def _some(self, i: int, at: np.ndarray) -> np.ndarray:
        """Phrase ``i``'s terms of its postings at ``at``: from the cache when a search
        computed them all, else for those only (the same doubles: elementwise)."""
        t = self._terms[i]
        entry = t.entry
        if entry.contrib is not None and entry.contrib_key == (self._meta.rows, self._meta.tokens, self._weight):
            return entry.contrib[at]
        return _contrib(t, t.tf[at], t.sec[at], t.dl[at], self._avgdl, self._weight)

    def order(self, m: int) -> list[int]:
        import numpy as np

        if m > self._m:
            self._rank(m)
        cand, total = self._cand, self._total
        assert cand is not None and total is not None
        matched = total > 0.0       # as ``_ordered``: a passage whose terms are all 0.0 matches nothing
        cand, total = cand[matched], total[matched]
        if len(cand) > m:
            kth = total[np.argpartition(-total, m - 1)[m - 1]]
            keep = total >= kth
            cand, total = cand[keep], total[keep]
        return cand[np.lexsort((cand, -total))].tolist()

    def score(self, pk: int) -> float:
        if self._scores is None:
            assert self._cand is not None and self._total is not None
            self._scores = dict(zip(self._cand.tolist(), self._total.tolist(), strict=True))
        return self._scores[pk]

    def _rank(self, m: int) -> None:
        import numpy as np

        terms = self._terms
        self._m, self._scores = m, None
        if not terms:
            self._cand, self._total = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            return
        bounds = [t.idf * (K1 + 1.0) * _BOUND_MARGIN for t in terms]
        todo = sorted(range(len(terms)), key=lambda i: (-bounds[i], i))   # rarest first
        size = max(int(t.pks[-1]) for t in terms) + 1
        taken: list[int] = []
        dense, mth = None, None
        ub = 0.0       # at least the m-th best partial: the last one computed plus the bounds added since
        while todo:
            rest = _rest(bounds, todo)
            if taken and ub * _BOUND_MARGIN > rest and max(len(terms[i].pks) for i in taken) >= m:
                dense = _np_partial(terms, [self._every(i) for i in taken], taken, size)
                held = dense[dense > 0.0]
                if len(held) >= m:
                    ub = _np_mth(held, m)
                    if ub > rest:
                        mth = ub
                        break     # no pk outside the admitted ones can reach the m-th
            i = todo.pop(0)
            taken.append(i)
            ub += bounds[i]
            dense = None
        if dense is None:
            dense = _np_partial(terms, [self._every(i) for i in taken], taken, size)
        # a pk whose partial is 0.0 scores at most ``rest``, below the m-th: not a candidate
        cand = np.flatnonzero(dense)
        part = dense[cand]
        cand, part = _np_prune(cand, part, m, _rest(bounds, todo), mth)
        while todo:            # the common phrases: looked up for the candidates left only
            i = todo.pop(0)
            at, hit = _np_find(terms[i].pks, cand)
            part[hit] += self._some(i, at[hit])
            cand, part = _np_prune(cand, part, m, _rest(bounds, todo))
        total = np.zeros(len(cand), dtype=np.float64)
        for i in range(len(terms)):      # phrase by phrase in query order from 0.0
            at, hit = _np_find(terms[i].pks, cand)
            total[hit] += self._some(i, at[hit])
        self._cand, self._total = cand, total


def _np_partial(terms: list[_Term], contrib: list[np.ndarray], taken: list[int], size: int) -> np.ndarray:
    """The taken phrases' terms (``contrib``, in ``taken``'s order) summed per pk (dense,
    0.0 = none)."""
    import numpy as np

    if len(taken) == 1:
        dense = np.zeros(size, dtype=np.float64)
        dense[terms[taken[0]].pks] = contrib[0]
        return dense
    return np.bincount(np.concatenate([terms[i].pks for i in taken]),
                       weights=np.concatenate(contrib), minlength=size)


def _np_find(pks: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each candidate sits in ``pks`` (ascending), and whether it is there."""
    import numpy as np

    at = np.searchsorted(pks, cand)
    at[at == len(pks)] = 0
    return at, pks[at] == cand


def _np_mth(values: np.ndarray, m: int) -> float:
    """The m-th largest of ``values`` (at least m of them)."""
    import numpy as np

    k = len(values) - m
    return float(np.partition(values, k)[k])


def _np_prune(cand: np.ndarray, part: np.ndarray, m: int, rest: float, mth: float | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """``_prune`` for arrays: the candidates whose partial plus ``rest`` reaches the m-th best
    partial (``mth`` when the caller has it), less the rounding margins."""
    if len(cand) <= m:
        return cand, part
    low = (_np_mth(part, m) if mth is None else mth) * (1.0 - 1e-9)
    keep = (part + rest) * _BOUND_MARGIN >= low
    return cand[keep], part[keep]


@dataclass(frozen=True, slots=True)
class _PyPhrase:
    pks: Sequence[int]    # ascending
    tf: Sequence[int]
    sec: Sequence[int]
    dl: Sequence[int]
    idf: float


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


def _py_term(tf: int, sec: int, dl: int, idf: float, avgdl: float, section_weight: float) -> float:
    """One posting's bm25 term: ``_contrib`` (and ``impact.weighted_freqs_of``) for one
    posting, the same operations in the same order."""
    if section_weight == 1.0:
        f = float(tf)
    else:
        f = float(tf - sec)        # 1.0 per occurrence in text, then the section's one at a time
        for _ in range(sec):
            f += section_weight
    return ((f * (K1 + 1.0)) / (K1 * ((1 - B) + (B * dl) / avgdl) + f)) * idf


class _PyRank:
    """The first ``m`` of the order (score desc, pk asc), ties included, ranked in Python with
    MaxScore's pruning (module docstring); ``order`` says None when that would visit more
    than ``cap`` postings."""

    def __init__(self, phrases: list[_PyPhrase], avgdl: float, section_weight: float, cap: int | None) -> None:
        self._phrases, self._avgdl, self._weight, self._cap = phrases, avgdl, section_weight, cap
        self._m = -1
        self._scores: dict[int, float] = {}
        self._visited = 0     # postings visited by every ranking of this search (the cap's count)

    @classmethod
    def of(cls, conn: sqlite3.Connection, meta: kw_postings.Meta, stems: list[str], section_weight: float,
           cap: int | None) -> _PyRank | None:
        read: dict[str, tuple[Sequence[int], ...]] = {}
        phrases = []
        for stem in stems:
            post = read.get(stem)
            if post is None:
                post = read[stem] = _py_postings(conn, stem)
            if len(post[0]):
                phrases.append(_PyPhrase(*post, idf=_idf(meta, len(post[0]))))
        return cls(phrases, _avgdl(meta), section_weight, cap)

    def order(self, m: int) -> list[int] | None:
        """The first ``m`` pks of the order (more at a tie); None past the cap."""
        if m > self._m and not self._rank(m):
            return None
        return _py_ordered(self._scores, m)

    def score(self, pk: int) -> float:
        return self._scores[pk]

    def _rank(self, m: int) -> bool:
        """Exact scores of a set of pks that holds every pk of the first ``m`` of the order
        (and all of its ties); False when that needs more than ``cap`` postings.

        Phrases are visited rarest first, every posting into ``partial`` (each pk's terms so
        far: a lower bound of its score), until the m-th best partial exceeds ``rest``, the
        summed bounds of the phrases left: a pk outside ``partial`` scores at most ``rest``.
        Then the phrases left are visited for the candidates only, rarest first, and after
        each the candidates whose partial plus the bounds still left stays below the m-th
        best partial are dropped (``_prune``): as ``rest`` shrinks and the m-th rises, few
        are still looked up in the common words.  The survivors' scores are summed phrase
        by phrase in query order, as FTS5 sums them."""
        phrases, weight = self._phrases, self._weight
        bounds = [p.idf * (K1 + 1.0) * _BOUND_MARGIN for p in phrases]   # a term < idf (k1 + 1)
        todo = sorted(range(len(phrases)), key=lambda i: (-bounds[i], i))   # rarest first
        terms: list[dict[int, float] | None] = [None] * len(phrases)
        partial: dict[int, float] = {}
        taken = 0.0        # summed bounds of the phrases visited: no partial exceeds it
        while todo:
            rest = _rest(bounds, todo)
            # the m-th best partial can exceed ``rest`` only if ``taken`` does: a cheap test first
            if len(partial) >= m and taken * _BOUND_MARGIN > rest and _mth(partial, m) > rest:
                break     # no pk outside ``partial`` can reach the m-th
            i = todo.pop(0)
            self._visited += len(phrases[i].pks)
            if self._cap is not None and self._visited > self._cap:
                return False
            got = terms[i] = self._terms_of(phrases[i], weight)
            _add(partial, got)
            taken += bounds[i]
        cand = _prune(partial, m, _rest(bounds, todo))
        while todo:           # the common phrases: looked up for the candidates left only
            i = todo.pop(0)
            self._visited += len(cand)
            if self._cap is not None and self._visited > self._cap:
                return False
            got = terms[i] = self._lookup(phrases[i], cand, weight)
            for p, c in got.items():
                cand[p] += c
            cand = _prune(cand, m, _rest(bounds, todo))
        held = [t for t in terms if t is not None]
        scores = {}
        for p in cand:        # phrase by phrase in query order from 0.0, as FTS5 sums them
            total = 0.0
            for got in held:
                c = got.get(p)
                if c is not None:
                    total += c
            scores[p] = total
        self._m, self._scores = m, scores
        return True

    def _terms_of(self, ph: _PyPhrase, section_weight: float) -> dict[int, float]:
        """Every posting's term of one phrase: ``_py_term``, for the common weight 1.0
        computed once per distinct (tf, row length) with the same operations and mapped
        over the postings in C (no Python step per posting)."""
        if section_weight != 1.0:
            return {p: _py_term(t, s, d, ph.idf, self._avgdl, section_weight)
                    for p, t, s, d in zip(ph.pks, ph.tf, ph.sec, ph.dl, strict=True)}
        avgdl, idf, k1p = self._avgdl, ph.idf, K1 + 1.0
        # f = float(tf): int * float and float + int convert tf exactly, as float(tf) does
        term = {(t, d): ((t * k1p) / (K1 * ((1 - B) + (B * d) / avgdl) + t)) * idf
                for t, d in set(zip(ph.tf, ph.dl, strict=True))}
        return dict(zip(ph.pks, map(term.__getitem__, zip(ph.tf, ph.dl, strict=True)), strict=True))

    def _lookup(self, ph: _PyPhrase, cand: dict[int, float], section_weight: float) -> dict[int, float]:
        """The phrase's terms of the candidates it holds: every posting's term when the
        phrase is not much longer than the candidates, else a binary search per candidate."""
        pks, n = ph.pks, len(ph.pks)
        if n <= _SCAN_RATIO * len(cand):
            every = self._terms_of(ph, section_weight)
            return {p: every[p] for p in cand.keys() & every.keys()}
        got = {}
        lo = 0
        for p in sorted(cand):    # ascending: each search starts where the last one ended
            j = lo = bisect_left(pks, p, lo)
            if j == n:
                break
            if pks[j] == p:
                got[p] = _py_term(ph.tf[j], ph.sec[j], ph.dl[j], ph.idf, self._avgdl, section_weight)
        return got


_SCAN_RATIO = 8     # a phrase at most this many times longer than the candidates is scored whole


def _rest(bounds: list[float], todo: list[int]) -> float:
    """The most the phrases in ``todo`` can add to any pk's score."""
    return math.fsum(bounds[i] for i in todo) * _BOUND_MARGIN


def _mth(partial: dict[int, float], m: int) -> float:
    return heapq.nlargest(m, partial.values())[-1]


def _add(partial: dict[int, float], got: dict[int, float]) -> None:
    """``partial[p] += got[p]`` (absent = 0.0): the new pks in C, the shared ones in Python."""
    if not partial:
        partial.update(got)
        return
    shared = [(p, partial[p]) for p in partial.keys() & got.keys()]
    partial.update(got)
    for p, v in shared:
        partial[p] = v + got[p]


def _prune(partial: dict[int, float], m: int, rest: float) -> dict[int, float]:
    """The pks that can still be among the first ``m`` (ties included): partial plus
    ``rest`` at least the m-th best partial, less the rounding margins."""
    if len(partial) <= m:
        return dict(partial)
    low = _mth(partial, m) * (1.0 - 1e-9)
    return {p: v for p, v in partial.items() if (v + rest) * _BOUND_MARGIN >= low}


def _py_ordered(scores: dict[int, float], m: int) -> list[int]:
    """``_ordered`` over a dict of scores."""
    cand = [(s, p) for p, s in scores.items() if s > 0.0]
    if len(cand) > m:
        kth = heapq.nlargest(m, (s for s, _ in cand))[-1]
        cand = [(s, p) for s, p in cand if s >= kth]
    cand.sort(key=lambda sp: (-sp[0], sp[1]))
    return [p for _, p in cand]
