"""The keyword arm's rankings over a query's postings (``memo.retrieve.kw_search`` reads
them): FTS5's bm25 bit for bit, the same floating-point operations in the same order as
``memo.retrieve.impact`` (its module docstring derives them from fts5_aux.c), each passage's
terms summed phrase by phrase in query order from 0.0, as FTS5 sums them.

* ``dense_scores`` / ``NumpyRank``, ``matched_scores`` / ``NumpyMatched``: every posting's term
  summed per passage (added phrase by phrase in query order).
* ``NumpyPruned``: MaxScore's pruning in numpy.  The rarest phrases are summed densely until
  the m-th best partial beats the summed bounds (``idf * (k1 + 1)``) of the phrases left;
  then the phrases left are looked up for the candidates only (``searchsorted``), and after
  each the candidates that can no longer reach the m-th are dropped.  At 1M passages a long
  question's common words hold millions of postings that the dense sum adds up for every
  passage; here they are looked up for a few hundred.
* ``PyRank``: the same pruning without numpy, for a cold process's first search (importing
  numpy is ~60 ms, most of what a one-shot ``memo search --mode keyword`` would spend, issue
  31.2): Python floats are IEEE doubles, so the same operations give the same doubles.

Every ranking gives the first ``m`` passages of the order (score desc, pk asc), ties at the
m-th included, and the scores of those; the pruned ones widen every bound and threshold by
a rounding margin, so a passage is dropped only when it cannot reach the m-th.
"""

from __future__ import annotations

import heapq
import math
import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memo.retrieve.impact import K1, B, weighted_freqs_of
from memo.store import kw_postings

if TYPE_CHECKING:
    import numpy as np

BOUND_MARGIN = 1.0 + 1e-9   # a phrase's bound, widened past any rounding of its terms
_LOCAL = threading.local()   # per thread: ``_accumulator``


@dataclass(slots=True)
class Entry:
    seq: int                            # the delta is applied up to this write
    arrays: tuple[np.ndarray, ...]      # pks (ascending), tf, sec, dl
    contrib_key: tuple[int, int, float] | None = None   # (rows, tokens, weight) of contrib
    contrib: np.ndarray | None = None   # every posting's bm25 term, idf included


@dataclass(frozen=True, slots=True)
class Term:
    pks: np.ndarray       # ascending
    tf: np.ndarray
    sec: np.ndarray
    dl: np.ndarray
    idf: float
    entry: Entry


def idf_of(meta: kw_postings.Meta, n_hit: int) -> float:
    """FTS5's idf of a phrase ``n_hit`` rows hold (fts5_aux.c: floored at 1e-6)."""
    idf = math.log((float(meta.rows - n_hit) + 0.5) / (float(n_hit) + 0.5))
    return 1e-6 if idf <= 0.0 else idf


def phrase_terms(t: Term, tf: np.ndarray, sec: np.ndarray, dl: np.ndarray, avgdl: float, section_weight: float
             ) -> np.ndarray:
    """FTS5's per-phrase term ``idf * (f * (k1 + 1)) / (f + K)``, with the same operations
    in the same order as fts5Bm25Function."""
    import numpy as np

    # FTS5: k1 * (1 - b + b * D / avgdl), left to right as C evaluates it, in place (one
    # array, not five: a search after a write recomputes every phrase's terms).  IEEE
    # addition and multiplication commute exactly, so D * b is b * D and so on; an integer
    # operand is converted to the double it equals inside the ufunc (no astype pass).
    denom = np.multiply(dl, B, dtype=np.float64)
    denom /= avgdl
    denom += 1 - B
    denom *= K1
    if section_weight == 1.0:        # f is the occurrence count itself
        np.add(denom, tf, out=denom, dtype=np.float64)                    # f + K
        f = np.multiply(tf, K1 + 1.0, dtype=np.float64)                    # f * (k1 + 1)
    else:
        f = weighted_freqs_of(tf, sec, section_weight)
        denom += f                   # f + K
        f *= K1 + 1.0                # f * (k1 + 1)
    f /= denom
    f *= t.idf                       # idf * (...)
    return f


def all_contrib(t: Term, meta: kw_postings.Meta, avgdl: float, section_weight: float) -> np.ndarray:
    """The phrase's term for each of its postings (cached with the postings: the same
    doubles for the same rows, tokens and weight; a subset is the same elementwise)."""
    key = (meta.rows, meta.tokens, section_weight)
    entry = t.entry
    if entry.contrib_key != key or entry.contrib is None:
        entry.contrib = phrase_terms(t, t.tf, t.sec, t.dl, avgdl, section_weight)
        entry.contrib_key = key
    return entry.contrib


def avgdl_of(meta: kw_postings.Meta) -> float:
    return float(meta.tokens) / float(meta.rows) if meta.rows else 1.0


def dense_scores(terms: list[Term], meta: kw_postings.Meta, avgdl: float, section_weight: float) -> np.ndarray:
    """Every pk's score (0.0 = matches no phrase), as long as the largest pk + 1."""
    import numpy as np

    if not terms:
        return np.zeros(0, dtype=np.float64)
    score = np.zeros(max(int(t.pks[-1]) for t in terms) + 1, dtype=np.float64)
    for t in terms:     # a phrase's pks are distinct: ``+=`` at them adds each term once
        score[t.pks] += all_contrib(t, meta, avgdl, section_weight)
    return score


def matched_scores(terms: list[Term], meta: kw_postings.Meta, avgdl: float, section_weight: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The pks that match a phrase (ascending) and their scores: ``dense_scores``' nonzero
    entries, the same doubles (the same additions in the same order), summed in this
    thread's accumulator (``_accumulator``) and not in a new array as long as the largest pk."""
    import numpy as np

    if not terms:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    size = max(int(t.pks[-1]) for t in terms) + 1
    score = _accumulator(size)[:size]
    try:
        first = terms[0]     # 0.0 + x is x: the first phrase's terms are set, not added
        score[first.pks] = all_contrib(first, meta, avgdl, section_weight)
        for t in terms[1:]:  # unbuffered, in place: no gathered copy of the pks' sums
            np.add.at(score, t.pks, all_contrib(t, meta, avgdl, section_weight))
        cand = np.flatnonzero(score > 0.0)   # as ``NumpyRank`` (and faster than on the floats)
        got = score[cand]
        score[cand] = 0.0              # all 0.0 again for the thread's next search
    except BaseException:
        score[:] = 0.0
        raise
    return cand, got


def _accumulator(size: int) -> np.ndarray:
    """This thread's score accumulator, all 0.0, at least ``size`` long.  A fresh one per
    search (0.8 MB at 100k passages, 8 MB at 1M) is a fresh mapping whose pages fault on
    first touch; after every write a warm search sums into it anew (issue 31.1)."""
    import numpy as np

    buf = getattr(_LOCAL, "acc", None)
    if buf is None or len(buf) < size:
        buf = _LOCAL.acc = np.zeros(max(size, 2 * len(buf) if buf is not None else 0), dtype=np.float64)
    return buf


def _top(cand: np.ndarray, score: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``m`` (or more, at a tie) of ``cand`` in the order (score desc, pk asc),
    with their scores: an exact prefix of that order."""
    import numpy as np

    if len(cand) > m:
        cand, score = _at_least(cand, score, _sampled_floor(score, m))
        kth = np.partition(score, len(score) - m)[len(score) - m]     # the m-th largest
        cand, score = _at_least(cand, score, kth)
    at = np.lexsort((cand, -score))
    return cand[at], score[at]


SAMPLE_STRIDE = 16   # ``_sampled_floor`` reads every 16th score


def _sampled_floor(score: np.ndarray, m: int) -> float:
    """A score at or below the m-th largest of ``score`` (more than m of them), found from a
    sample, so that the exact m-th is selected among the few scores above it and not among
    all (48k at 100k passages for a SciFact claim): the (2m / stride)-th largest of every
    stride-th score, used only when at least m scores reach it; else -inf (keeps all)."""
    import numpy as np

    sample = score[::SAMPLE_STRIDE]
    j = 2 * m // SAMPLE_STRIDE
    if j < 1 or len(sample) <= j:
        return -math.inf
    floor = float(np.partition(sample, len(sample) - j)[len(sample) - j])
    return floor if int(np.count_nonzero(score >= floor)) >= m else -math.inf


def _at_least(cand: np.ndarray, score: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    if floor == -math.inf:
        return cand, score
    keep = score >= floor
    return cand[keep], score[keep]


class NumpyRank:
    """The order and scores from the dense score array (``dense_scores``)."""

    def __init__(self, score: np.ndarray) -> None:
        self._score = score

    def order(self, m: int) -> list[int]:
        import numpy as np

        cand = np.flatnonzero(self._score > 0.0)
        return _top(cand, self._score[cand], m)[0].tolist()

    def score(self, pk: int) -> float:
        return float(self._score[pk])


class NumpyMatched:
    """The order and scores from the matched pks and their scores (``matched_scores``):
    ``NumpyRank``'s, without a dense array held."""

    def __init__(self, terms: list[Term], meta: kw_postings.Meta, section_weight: float) -> None:
        self._cand, self._s = matched_scores(terms, meta, avgdl_of(meta), section_weight)
        self._seen: dict[int, float] = {}

    def order(self, m: int) -> list[int]:
        cand, score = _top(self._cand, self._s, m)
        pks = cand.tolist()
        self._seen = dict(zip(pks, score.tolist(), strict=True))   # the scores a caller asks for next
        return pks

    def score(self, pk: int) -> float:
        got = self._seen.get(pk)
        if got is None:      # not in the last order asked for: 0.0 unless it matched (as ``NumpyRank``)
            import numpy as np

            i = int(np.searchsorted(self._cand, pk))
            got = float(self._s[i]) if i < len(self._cand) and int(self._cand[i]) == pk else 0.0
        return got


class NumpyPruned:
    """The first ``m`` of the order with ``PyRank``'s pruning in numpy: the rarest phrases'
    terms summed into a dense partial (each phrase's pks are distinct, so ``+=`` at them
    adds once) until the m-th best partial beats the bounds of the phrases left; then the
    candidates' terms of each phrase left found by binary search (``searchsorted``), the
    candidates that can no longer reach the m-th dropped after each; the survivors' scores
    summed phrase by phrase in query order from 0.0 (``dense_scores``' order: the same
    doubles).  At 1M passages a long question's common words hold millions of postings
    that ``dense_scores`` adds up for every passage; here they are looked up for a few hundred."""

    def __init__(self, terms: list[Term], meta: kw_postings.Meta, section_weight: float) -> None:
        self._terms, self._meta, self._weight, self._avgdl = terms, meta, section_weight, avgdl_of(meta)
        self._m = -1
        self._cand: np.ndarray | None = None
        self._total: np.ndarray | None = None
        self._scores: dict[int, float] | None = None

    def _every(self, i: int) -> np.ndarray:
        """Phrase ``i``'s term for each of its postings (cached with the postings)."""
        return all_contrib(self._terms[i], self._meta, self._avgdl, self._weight)

    def _some(self, i: int, at: np.ndarray) -> np.ndarray:
        """Phrase ``i``'s terms of its postings at ``at``: from the cache when a search
        computed them all, else for those only (the same doubles: elementwise)."""
        t = self._terms[i]
        entry = t.entry
        if entry.contrib is not None and entry.contrib_key == (self._meta.rows, self._meta.tokens, self._weight):
            return entry.contrib[at]
        return phrase_terms(t, t.tf[at], t.sec[at], t.dl[at], self._avgdl, self._weight)

    def _add_taken(self, partials: _Partials, taken: list[int]) -> None:
        """Add the phrases taken since the last call to ``partials``, in taken order."""
        for i in taken[partials.phrases:]:
            partials.add(self._terms[i].pks, self._every(i))

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
        bounds = [t.idf * (K1 + 1.0) * BOUND_MARGIN for t in terms]
        todo = sorted(range(len(terms)), key=lambda i: (-bounds[i], i))   # rarest first
        size = max(int(t.pks[-1]) for t in terms) + 1
        taken: list[int] = []
        partials = _Partials(size)
        mth = None
        ub = 0.0       # at least the m-th best partial: the last one computed plus the bounds added since
        while todo:
            rest = _rest(bounds, todo)
            if taken and ub * BOUND_MARGIN > rest and max(len(terms[i].pks) for i in taken) >= m:
                self._add_taken(partials, taken)
                held = partials.held()[1]
                if len(held) >= m:
                    ub = _np_mth(held, m)
                    if ub > rest:
                        mth = ub
                        break     # no pk outside the admitted ones can reach the m-th
            i = todo.pop(0)
            taken.append(i)
            ub += bounds[i]
        self._add_taken(partials, taken)
        # a pk whose partial is 0.0 scores at most ``rest``, below the m-th: not a candidate
        cand, part = partials.held()
        cand, part = _np_prune(cand, part, m, _rest(bounds, todo), mth)
        while todo:            # the common phrases: looked up for the candidates left only
            i = todo.pop(0)
            at, hit = find_sorted(terms[i].pks, cand)
            part[hit] += self._some(i, at[hit])
            cand, part = _np_prune(cand, part, m, _rest(bounds, todo))
        total = np.zeros(len(cand), dtype=np.float64)
        for i in range(len(terms)):      # phrase by phrase in query order from 0.0
            at, hit = find_sorted(terms[i].pks, cand)
            total[hit] += self._some(i, at[hit])
        self._cand, self._total = cand, total


class _Partials:
    """The taken phrases' terms summed per pk (``dense``: 0.0 + the first phrase's term + the
    next's ..., in taken order, as ``dense_scores`` adds them) and the pks they hold, each
    once, in the order first found.  Each phrase is added once per ranking, and a check of
    the m-th best partial reads the held pks only: summing every taken phrase afresh at each
    check (``bincount``) and scanning the whole dense array for its nonzero entries cost a
    long question at 1M passages 843k postings added for 343k and four 8 MB scans."""

    def __init__(self, size: int) -> None:
        import numpy as np

        self.dense = np.zeros(size, dtype=np.float64)
        self._seen = np.zeros(size, dtype=np.bool_)
        self._found: list[np.ndarray] = []
        self.phrases = 0          # how many phrases are summed

    def add(self, pks: np.ndarray, contrib: np.ndarray) -> None:
        self.dense[pks] += contrib        # a phrase's pks are distinct: ``+=`` adds each term once
        new = pks[~self._seen[pks]]
        self._seen[new] = True
        self._found.append(new)
        self.phrases += 1

    def held(self) -> tuple[np.ndarray, np.ndarray]:
        """The pks whose partial is above 0.0 (a term is 0.0 where a zero section weight
        leaves no frequency), not in pk order, and their partials."""
        import numpy as np

        if len(self._found) > 1:
            self._found = [np.concatenate(self._found)]
        pks = self._found[0] if self._found else np.zeros(0, dtype=np.int64)
        part = self.dense[pks]
        keep = part > 0.0
        return pks[keep], part[keep]


def find_sorted(pks: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    keep = (part + rest) * BOUND_MARGIN >= low
    return cand[keep], part[keep]


@dataclass(frozen=True, slots=True)
class Phrase:
    pks: Sequence[int]    # ascending
    tf: Sequence[int]
    sec: Sequence[int]
    dl: Sequence[int]
    idf: float


def _py_term(tf: int, sec: int, dl: int, idf: float, avgdl: float, section_weight: float) -> float:
    """One posting's bm25 term: ``phrase_terms`` (and ``impact.weighted_freqs_of``) for one
    posting, the same operations in the same order."""
    if section_weight == 1.0:
        f = float(tf)
    else:
        f = float(tf - sec)        # 1.0 per occurrence in text, then the section's one at a time
        for _ in range(sec):
            f += section_weight
    return ((f * (K1 + 1.0)) / (K1 * ((1 - B) + (B * dl) / avgdl) + f)) * idf


class PyRank:
    """The first ``m`` of the order (score desc, pk asc), ties included, ranked in Python with
    MaxScore's pruning (module docstring); ``order`` says None when that would visit more
    than ``cap`` postings."""

    def __init__(self, phrases: list[Phrase], avgdl: float, section_weight: float, cap: int | None) -> None:
        self._phrases, self._avgdl, self._weight, self._cap = phrases, avgdl, section_weight, cap
        self._m = -1
        self._scores: dict[int, float] = {}
        self._visited = 0     # postings visited by every ranking of this search (the cap's count)

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
        bounds = [p.idf * (K1 + 1.0) * BOUND_MARGIN for p in phrases]   # a term < idf (k1 + 1)
        todo = sorted(range(len(phrases)), key=lambda i: (-bounds[i], i))   # rarest first
        terms: list[dict[int, float] | None] = [None] * len(phrases)
        partial: dict[int, float] = {}
        taken = 0.0        # summed bounds of the phrases visited: no partial exceeds it
        while todo:
            rest = _rest(bounds, todo)
            # the m-th best partial can exceed ``rest`` only if ``taken`` does: a cheap test first
            if len(partial) >= m and taken * BOUND_MARGIN > rest and _mth(partial, m) > rest:
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
        self._m, self._scores = m, _summed(cand, [t for t in terms if t is not None])
        return True

    def scores_of(self, pks: Sequence[int]) -> dict[int, float]:
        """The scores of the rows ``pks`` that hold a phrase (any other scores 0.0 and is
        left out), each phrase's terms looked up for those rows only and summed phrase by
        phrase in query order from 0.0, as FTS5 sums them (and ``_rank``)."""
        cand = dict.fromkeys(pks, 0.0)
        held = [self._lookup(ph, cand, self._weight) for ph in self._phrases]
        return {p: v for p, v in _summed(cand, held).items() if v > 0.0}

    def _terms_of(self, ph: Phrase, section_weight: float) -> dict[int, float]:
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

    def _lookup(self, ph: Phrase, cand: dict[int, float], section_weight: float) -> dict[int, float]:
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


def _summed(cand: dict[int, float], held: list[dict[int, float]]) -> dict[int, float]:
    """Each candidate's terms (``held``: one dict per phrase, in query order) summed phrase by
    phrase from 0.0, as FTS5 sums them."""
    scores = {}
    for p in cand:
        total = 0.0
        for got in held:
            c = got.get(p)
            if c is not None:
                total += c
        scores[p] = total
    return scores


def _rest(bounds: list[float], todo: list[int]) -> float:
    """The most the phrases in ``todo`` can add to any pk's score."""
    return math.fsum(bounds[i] for i in todo) * BOUND_MARGIN


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
    return {p: v for p, v in partial.items() if (v + rest) * BOUND_MARGIN >= low}


def _py_ordered(scores: dict[int, float], m: int) -> list[int]:
    """``_ordered`` over a dict of scores."""
    cand = [(s, p) for p, s in scores.items() if s > 0.0]
    if len(cand) > m:
        kth = heapq.nlargest(m, (s for s, _ in cand))[-1]
        cand = [(s, p) for s, p in cand if s >= kth]
    cand.sort(key=lambda sp: (-sp[0], sp[1]))
    return [p for _, p in cand]
