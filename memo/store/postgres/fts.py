"""bm25 over PostgreSQL tsvectors: the keyword, exact and fact keyword lists.

PostgreSQL ranks with ``ts_rank`` / ``ts_rank_cd``, which know no idf: a query word held
by every row weighs as much as a rare one, and on SciFact that costs several points of
nDCG.  memo ranks with FTS5's bm25 instead, computed here from what the tsvector holds:

    score(row) = sum over query lexemes t the row holds of
                 idf(t) * f(t) * (k1 + 1) / (f(t) + k1 * (1 - b + b * dl / avgdl))
    idf(t)     = ln((N - n(t) + 0.5) / (n(t) + 0.5)), at least 1e-6 (FTS5's clamp)
    f(t)       = occurrences in the text + section_weight x occurrences in the section
                 (tsvector weights A and B), k1 = 1.2, b = 0.75, as FTS5

N is every row of the index (as FTS5 counts), n(t) the rows holding t (a GIN look-up per
lexeme, cached until the data changes), dl the row's token count and avgdl their mean.
Differences from FTS5, documented in docs/postgres.md: PostgreSQL's ``english`` stemmer
(Snowball) instead of Porter, its stop words leave ``dl`` (FTS5 counts every token), no
diacritics folding, and a query word PostgreSQL splits into several lexemes counts as
several terms.  The candidates are the rows matching any lexeme (``@@``), under the
scope filter in the same statement, before the top-k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

# index name -> (table, key column, text search configuration, joins to passages p / records r).
# Constants, never input.
INDEXES = {
    "passages_fts": ("passages", "pk", "english", "passages p JOIN records r ON r.id = p.record_id", "p"),
    "exact_fts": ("exact_fts", "rowid", "simple",
                  "exact_fts x JOIN passages p ON p.pk = x.rowid JOIN records r ON r.id = p.record_id", "x"),
    "facts_fts": ("facts", "pk", "english", "facts f", "f"),
}


def lexemes(conn: Any, index: str, words: Sequence[str]) -> list[str]:
    """The distinct lexemes of ``words`` under the index's configuration, in query order
    (stop words give none)."""
    config = INDEXES[index][2]
    if not words:
        return []
    rows = conn.execute_native(
        "SELECT w.ord, l.lex FROM unnest(%s::text[]) WITH ORDINALITY AS w(word, ord),"
        f" unnest(tsvector_to_array(to_tsvector('{config}', {'memo_words(w.word)' if config == 'english' else 'w.word'})))"
        " AS l(lex) ORDER BY w.ord",
        (list(words),)).fetchall()
    return list(dict.fromkeys(r[1] for r in rows))


def tsquery_of(lexes: Sequence[str]) -> str:
    """An OR of already-normalised lexemes, quoted (the ``::tsquery`` cast keeps them as
    they are)."""
    return " | ".join("'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexes)


def term_rows(conn: Any, index: str, lex: str, cache: dict[str, int]) -> int:
    """Rows of ``index`` holding ``lex`` (cached in ``cache`` until the data changes)."""
    n = cache.get(lex)
    if n is None:
        table, _, _, _, _ = INDEXES[index]
        if len(cache) > 100_000:
            cache.clear()
        n = cache[lex] = int(conn.execute_native(
            f"SELECT count(*) FROM {table} WHERE tsv @@ %s::tsquery", (tsquery_of([lex]),)).fetchone()[0])
    return n


def idf(n_rows: int, n_hit: int) -> float:
    n_rows = max(n_rows, n_hit)
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else MIN_IDF


def index_stats(conn: Any, index: str, cache: dict[str, Any]) -> tuple[int, float]:
    """(rows, mean token count) of the index, cached until the data changes."""
    key = f"pg_stats:{index}"
    if key not in cache:
        table = INDEXES[index][0]
        n, avg = conn.execute_native(f"SELECT count(*), coalesce(avg(dl), 0)::float8 FROM {table}").fetchone()
        cache[key] = (int(n), float(avg) or 1.0)
    return cache[key]


def bm25_topk(conn: Any, index: str, words: Sequence[str], where: str, params: Sequence[Any], k: int,
              cache: dict[str, Any], *, section_weight: float = 1.0) -> list[tuple[int, float]]:
    """The top ``k`` rows of ``index`` for ``words`` under the scope ``where`` (a
    fragment over ``passages p JOIN records r`` with ``?`` placeholders; facts: over
    ``facts f``), best first: [(key, score)], ties by key."""
    table, key, _, source, alias = INDEXES[index]
    lexes = lexemes(conn, index, words)
    if not lexes:
        return []
    n_rows, avgdl = index_stats(conn, index, cache)
    counts = cache.setdefault(f"pg_term_rows:{index}", {})
    idfs = [idf(n_rows, term_rows(conn, index, lx, counts)) for lx in lexes]
    scope = (" AND " + where.replace("?", "%s")) if where else ""
    sql = (
        "WITH q(lex, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])),"
        f" cand AS (SELECT {alias}.{key} AS key, {alias}.tsv AS tsv, {alias}.dl AS dl FROM {source}"
        f" WHERE {alias}.tsv @@ %s::tsquery{scope}),"
        " tf AS (SELECT c.key, c.dl, q.idf,"
        "   (SELECT sum(CASE WHEN w = 'B' THEN %s::float8 ELSE 1.0 END) FROM unnest(u.weights) w) AS f"
        "   FROM cand c CROSS JOIN LATERAL unnest(c.tsv) u JOIN q ON q.lex = u.lexeme)"
        " SELECT key, sum(idf * f * %s / (f + %s * (1 - %s + %s * dl / %s))) AS s"
        " FROM tf GROUP BY key ORDER BY s DESC, key LIMIT %s")
    rows = conn.execute_native(sql, (lexes, idfs, tsquery_of(lexes), *params, float(section_weight),
                                     K1 + 1.0, K1, B, B, avgdl, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def holders(conn: Any, index: str, lex: str, keys: Sequence[int]) -> list[int]:
    """Which of ``keys`` hold ``lex`` (abstention's keyword evidence)."""
    table, key, _, _, _ = INDEXES[index]
    if not keys:
        return []
    return [int(r[0]) for r in conn.execute_native(
        f"SELECT {key} FROM {table} WHERE {key} = ANY(%s) AND tsv @@ %s::tsquery",
        (list(keys), tsquery_of([lex]))).fetchall()]


def scoped_count(conn: Any, index: str, words: Sequence[str], where: str, params: Sequence[Any]) -> int:
    """Rows under the scope ``where`` holding every lexeme of ``words`` (a phrase's words:
    FTS5's ``MATCH '"a b"'`` without the adjacency)."""
    _, _, _, source, alias = INDEXES[index]
    lexes = lexemes(conn, index, words)
    if not lexes:
        return 0
    scope = (" AND " + where.replace("?", "%s")) if where else ""
    query = " & ".join(tsquery_of([lx]) for lx in lexes)
    return int(conn.execute_native(f"SELECT count(*) FROM {source} WHERE {alias}.tsv @@ %s::tsquery{scope}",
                                   (query, *params)).fetchone()[0])
