"""Keyword evidence strength (issue 13.4): how much of what the query asks for a keyword
match actually holds, each query term weighted by how informative it is.

    coverage(row) = Σ idf(t) over the query terms t the row holds
                    / Σ idf(t) over all the query's terms
    idf(t)        = ln((N - n(t) + 0.5) / (n(t) + 0.5)), at least 1e-6

``idf`` is FTS5's own bm25 idf (same formula, same clamp), with FTS5's own statistics: N
rows in the FTS table, n(t) rows holding the term, counted by the table's tokenizer
(``MATCH '"t"'``: Porter stem, unicode61 folding), over the whole table as bm25 counts
them.  A term no row holds gets the largest idf, ln((N + 0.5) / 0.5): a question about
"Caroline" asked of a biology corpus names something the corpus does not have, and that
weighs more than any word it shares with it.  The terms are the keyword arm's own
(``memo.text.fts_query.query_words``: stop words dropped).

Why: any keyword overlap, however weak, used to keep a candidate alive, so an off-domain
question that shares "group" or "support" with the corpus was always answered.  A match
of only low-information words covers little of the query's idf mass; a match of the
query's rare words covers most of it.  ``memo.retrieve.abstention`` compares the best
coverage with the profile's ``abstention.keyword_floor``.

Cost: with the keyword arm's impact index current for the snapshot (``passages_fts``,
large databases: ``memo.retrieve.impact``) the counts and holders come from its postings,
the same rows FTS5's ``MATCH '"t"'`` returns (its own tokens and stems), at a binary
search per candidate and term (far cheaper at 100k passages: docs/results-log.md "Word
counts for routing and keyword evidence").  Otherwise, per distinct term one ``count(*)``
(cached per connection until the data changes)
and one ``MATCH ... AND +rowid IN (candidates)``: the ``+`` keeps the IN list out of FTS5's
rowid lookup, so the term's posting list is read once and filtered (the plain ``rowid IN``
re-runs the MATCH per candidate, dozens of times slower; same heading).
Computed only when the abstention stage needs it (no candidate has strong evidence of
another kind), inside the search's read snapshot.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from memo.retrieve.backend import backend_of
from memo.retrieve.conn_cache import conn_cache
from memo.text.fts_query import query_words

# Table names are constants of this module's callers, never user input.
_TABLES = ("passages_fts", "facts_fts")
_MIN_IDF = 1e-6          # FTS5 bm25 clamps a non-positive idf to this


@dataclass(frozen=True, slots=True)
class KeywordEvidence:
    """The query's terms with their idf, and each scored row's coverage."""

    terms: tuple[tuple[str, float], ...]    # (term, idf), query order
    coverage: dict[int, float]              # rowid -> coverage in [0, 1]
    matched: dict[int, tuple[str, ...]]     # rowid -> the query terms it holds

    @property
    def best(self) -> float:
        """The best coverage of any scored row (0.0 when none was scored)."""
        return max(self.coverage.values(), default=0.0)

    def best_row(self) -> int | None:
        return max(self.coverage, key=lambda r: (self.coverage[r], -r)) if self.coverage else None

    def describe(self) -> str:
        """One line for the trace: the best coverage and which terms it matched."""
        row = self.best_row()
        held = set(self.matched.get(row, ())) if row is not None else set()
        parts = [f"{t} {idf:.2f}" + ("*" if t in held else "") for t, idf in self.terms]
        return f"best keyword coverage {self.best:.3f} (idf; * = matched: {', '.join(parts)})"


def idf(n_rows: int, n_hit: int) -> float:
    """FTS5 bm25's idf for a term held by ``n_hit`` of ``n_rows`` rows.  ``n_rows`` is
    read from the content table; an FTS index out of step with it (more rows holding the
    term than rows) counts as every row holding it."""
    n_rows = max(n_rows, n_hit)
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else _MIN_IDF


def keyword_evidence(conn: sqlite3.Connection, table: str, query: str, rowids: Iterable[int],
                     n_rows: int) -> KeywordEvidence:
    """Coverage of ``query``'s terms for each of ``rowids`` (rows of ``table``, at most a
    few hundred: the arms' candidates).  ``n_rows``: rows in ``table`` (bm25's N)."""
    if table not in _TABLES:
        raise ValueError(f"not an FTS table: {table}")
    rows = sorted(set(rowids))
    terms = query_words(query)
    weighted: list[tuple[str, float]] = []
    holders: dict[int, list[str]] = {r: [] for r in rows}
    for term, n_hit, held in backend_of(conn).term_holders(conn, table, terms, rows):
        weighted.append((term, idf(n_rows, n_hit)))
        for rowid in held:
            holders[rowid].append(term)
    total = sum(w for _, w in weighted)
    weight = dict(weighted)
    coverage = {r: (sum(weight[t] for t in held) / total if total > 0 else 0.0) for r, held in holders.items()}
    return KeywordEvidence(terms=tuple(weighted), coverage=coverage,
                           matched={r: tuple(held) for r, held in holders.items()})


def passages_evidence(conn: sqlite3.Connection, query: str, pks: Iterable[int], n_passages: int) -> KeywordEvidence:
    """``keyword_evidence`` over ``passages_fts`` (the keyword arm's index)."""
    return keyword_evidence(conn, "passages_fts", query, pks, n_passages)


def facts_evidence(conn: sqlite3.Connection, query: str, fact_ids: Iterable[str]) -> KeywordEvidence:
    """``keyword_evidence`` over ``facts_fts`` (the fact arm's keyword list), for facts by
    id; rows are fact pks."""
    ids = sorted(set(fact_ids))
    pks = [r[0] for r in conn.execute(
        f"SELECT pk FROM facts WHERE id IN ({','.join('?' * len(ids))})", ids)] if ids else []
    cache = conn_cache(conn)
    if "n_facts" not in cache:
        cache["n_facts"] = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    return keyword_evidence(conn, "facts_fts", query, pks, cache["n_facts"])
