"""bm25 over PostgreSQL tsvectors: the keyword, exact and fact keyword lists.

PostgreSQL ranks with ``ts_rank`` / ``ts_rank_cd``, which know no idf: a query word held
by every row weighs as much as a rare one, and on SciFact that costs several points of
nDCG.  memo ranks with FTS5's bm25 instead, computed here from what the tsvector holds:

    score(row) = sum over query lexemes t the row holds of
                 idf(t) * f(t) * (k1 + 1) / (f(t) + k1 * (1 - b + b * dl / avgdl))
    idf(t)     = ln((N - n(t) + 0.5) / (n(t) + 0.5)), at least 1e-6 (FTS5's clamp)
    f(t)       = occurrences in the text + section_weight x occurrences in the section
                 (tsvector weights A and B), k1 = 1.2, b = 0.75, as FTS5

N is every row of the index (as FTS5 counts), n(t) the rows holding t (the length of its
posting list, cached until the data changes), dl the row's token count and avgdl their
mean.  The postings tables (``memo.store.postgres.schema``: lexeme, row, occurrences in
text and section, row length) are what a search reads: a query lexeme's posting list, not
every matching row's tsvector (far cheaper: docs/results-log.md "Word counts for routing
and keyword evidence").
Differences from FTS5, documented in docs/postgres.md: PostgreSQL's ``english`` stemmer
(Snowball) instead of Porter, its stop words leave ``dl`` (FTS5 counts every token), and a
query word PostgreSQL splits into several lexemes counts as several terms.  Diacritics and
case fold as in FTS5 (``cafe`` and ``café`` are one word): the index through ``memo_fold``
(``memo.store.postgres.keyword_form``), the query words through unicode61 itself.  The
candidates are the rows holding any query lexeme, under the scope filter in the same
statement, before the top-k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from memo.text.folding import unicode61_tokens

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

# index name -> (postings table, scored table, its key column, text search configuration,
# joins to passages p / records r (or facts f) from the scored key s.key).  Constants, never input.
INDEXES = {
    "passages_fts": ("passage_terms", "passages", "pk", "english",
                     "JOIN passages p ON p.pk = s.key JOIN records r ON r.id = p.record_id"),
    "exact_fts": ("exact_terms", "exact_fts", "rowid", "simple",
                  "JOIN passages p ON p.pk = s.key JOIN records r ON r.id = p.record_id"),
    "facts_fts": ("fact_terms", "facts", "pk", "english", "JOIN facts f ON f.pk = s.key"),
}


def native(fragment: str) -> str:
    """A memo WHERE fragment (``?`` placeholders, SQLite style) for a native statement."""
    return fragment.replace("%", "%%").replace("?", "%s")


def lexemes(conn: Any, index: str, words: Sequence[str]) -> list[str]:
    """The distinct lexemes of ``words`` under the index's configuration, in query order
    (stop words give none)."""
    config = INDEXES[index][3]
    if not words:
        return []
    if config == "english":
        # Folded as the keyword index folds its text (unicode61 remove_diacritics 2: the
        # definition memo_fold's table was taken from): the keyword arm's words already
        # are, a word from elsewhere (an entity's name: memo.retrieve.route) may not be.
        words = [" ".join(unicode61_tokens(w)) for w in words]
    text = "memo_words(w.word)" if config == "english" else "w.word"
    rows = conn.execute_native(
        "SELECT w.ord, l.lex FROM unnest(%s::text[]) WITH ORDINALITY AS w(word, ord),"
        f" unnest(tsvector_to_array(to_tsvector('{config}', {text}))) AS l(lex) ORDER BY w.ord",
        (list(words),)).fetchall()
    return list(dict.fromkeys(r[1] for r in rows))


def tsquery_of(lexes: Sequence[str]) -> str:
    """An OR of already-normalised lexemes, quoted (the ``::tsquery`` cast keeps them as
    they are)."""
    return " | ".join("'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexes)


def term_counts(conn: Any, index: str, lexes: Sequence[str], cache: dict[str, int]) -> list[int]:
    """Rows of ``index`` holding each lexeme (posting list lengths, cached in ``cache``
    until the data changes)."""
    missing = [lx for lx in dict.fromkeys(lexes) if lx not in cache]
    if missing:
        if len(cache) > 100_000:
            cache.clear()
        postings = INDEXES[index][0]
        found = dict(conn.execute_native(
            f"SELECT lex, count(*) FROM {postings} WHERE lex = ANY(%s) GROUP BY lex", (missing,)).fetchall())
        for lx in missing:
            cache[lx] = int(found.get(lx, 0))
    return [cache[lx] for lx in lexes]



def idf(n_rows: int, n_hit: int) -> float:
    n_rows = max(n_rows, n_hit)
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else MIN_IDF


def index_stats(conn: Any, index: str, cache: dict[str, Any]) -> tuple[int, float]:
    """(rows, mean token count) of the index, cached until the data changes."""
    key = f"pg_stats:{index}"
    if key not in cache:
        table = INDEXES[index][1]
        n, avg = conn.execute_native(f"SELECT count(*), coalesce(avg(dl), 0)::float8 FROM {table}").fetchone()
        cache[key] = (int(n), float(avg) or 1.0)
    return cache[key]


def bm25_topk(conn: Any, index: str, words: Sequence[str], where: str, params: Sequence[Any], k: int,
              cache: dict[str, Any], *, section_weight: float = 1.0) -> list[tuple[int, float]]:
    """The top ``k`` rows of ``index`` for ``words`` under the scope ``where`` (a
    fragment over ``passages p JOIN records r`` with ``?`` placeholders; facts: over
    ``facts f``), best first: [(key, score)], ties by key."""
    postings, _, _, _, joins = INDEXES[index]
    lexes = lexemes(conn, index, words)
    if not lexes:
        return []
    n_rows, avgdl = index_stats(conn, index, cache)
    counts = term_counts(conn, index, lexes, cache.setdefault(f"pg_term_rows:{index}", {}))
    idfs = [idf(n_rows, n) for n in counts]
    scope = (" AND " + native(where)) if where else ""
    # Scores first (index-only reads of the posting lists), then, best first, each
    # candidate's scope check by primary key until k pass: a live-only scope checks about
    # k rows instead of joining every scored one; a narrow scope checks more, never fewer
    # than it must (the filter still sits before the top-k).
    sql = (
        "WITH q(lex, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])),"
        " s AS MATERIALIZED (SELECT t.key, sum(q.idf * f.f * %s / (f.f + %s * (1 - %s + %s * t.dl / %s))) AS score"
        f"   FROM q JOIN {postings} t ON t.lex = q.lex"
        "   CROSS JOIN LATERAL (SELECT t.tf_a + %s * t.tf_b AS f) f GROUP BY t.key)"
        " SELECT s.key, s.score FROM (SELECT key, score FROM s ORDER BY score DESC, key) s"
        f" WHERE EXISTS (SELECT 1 FROM (SELECT s.key) s {joins} WHERE TRUE{scope})"
        " ORDER BY s.score DESC, s.key LIMIT %s")
    rows = conn.execute_native(sql, (lexes, idfs, K1 + 1.0, K1, B, B, avgdl, float(section_weight),
                                     *params, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def holders(conn: Any, index: str, lex: str, keys: Sequence[int]) -> list[int]:
    """Which of ``keys`` hold ``lex`` (abstention's keyword evidence)."""
    if not keys:
        return []
    postings = INDEXES[index][0]
    return [int(r[0]) for r in conn.execute_native(
        f"SELECT key FROM {postings} WHERE lex = %s AND key = ANY(%s)", (lex, list(keys))).fetchall()]


def scoped_count(conn: Any, index: str, words: Sequence[str], where: str, params: Sequence[Any]) -> int:
    """Rows under the scope ``where`` holding every lexeme of ``words`` (a phrase's words:
    FTS5's ``MATCH '"a b"'`` without the adjacency)."""
    postings, _, _, _, joins = INDEXES[index]
    lexes = lexemes(conn, index, words)
    if not lexes:
        return 0
    scope = (" WHERE " + native(where)) if where else ""
    return int(conn.execute_native(
        f"WITH s AS (SELECT key FROM {postings} WHERE lex = ANY(%s) GROUP BY key HAVING count(*) = %s)"
        f" SELECT count(*) FROM s {joins}{scope}", (lexes, len(lexes), *params)).fetchone()[0])


def count_holding(conn: Any, index: str, words: Sequence[str], excluded: Sequence[int],
                  cache: dict[str, Any]) -> int:
    """Rows holding every lexeme of ``words``, minus those of ``excluded`` (the few rows a
    scope rules out: ``scope_stats``): ``scoped_count`` without joining every holder to
    its passage and record (slow for a common word at 100k passages: docs/results-log.md
    "Word counts for routing and keyword evidence")."""
    postings = INDEXES[index][0]
    lexes = lexemes(conn, index, words)
    if not lexes:
        return 0
    gone_keys = [int(k) for k in excluded]
    if len(lexes) == 1:
        n = term_counts(conn, index, lexes, cache.setdefault(f"pg_term_rows:{index}", {}))[0]
        gone = int(conn.execute_native(f"SELECT count(*) FROM {postings} WHERE lex = %s AND key = ANY(%s)",
                                       (lexes[0], gone_keys)).fetchone()[0]) if gone_keys and n else 0
        return n - gone
    return int(conn.execute_native(
        f"SELECT count(*) FROM (SELECT key FROM {postings} WHERE lex = ANY(%s) GROUP BY key HAVING count(*) = %s) s"
        " WHERE NOT (s.key = ANY(%s))", (lexes, len(lexes), gone_keys)).fetchone()[0])
