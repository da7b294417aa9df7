"""CJK text in PostgreSQL's keyword index: the same ``memo.text.cjk.index_form`` as SQLite's.

PostgreSQL's parser, like FTS5's unicode61, keeps a run of Chinese or Japanese characters
as one word, so a ``tsv`` built from the text as stored finds a CJK passage only by its
whole run.  The index form is written by Python (one definition: ``memo.text.cjk``) into
``passages.kw_text`` / ``kw_section``, for the rows whose text (section) holds CJK and
NULL for every other row; the row's trigger builds ``tsv`` from
``coalesce(kw_text, text)`` (``memo.store.postgres.schema`` M003), and the postings
(``passage_terms``) follow from ``tsv`` as before.  English text is indexed exactly as
before (its kw columns are NULL).  The query side needs nothing here: the keyword arm's
words are already ``query_form`` (``memo.text.fts_query.query_words``).

Written in the caller's write transaction, right after the passages' own insert, so a
committed passage never has a keyword index of the stored text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memo.text.cjk import CJK_CLASS, index_form


def _kw(value: str) -> str | None:
    form = index_form(value)
    return None if form is value else form


def write_keyword_forms(conn: Any, where: str = "TRUE", params: Sequence[Any] = ()) -> int:
    """Set ``kw_text`` / ``kw_section`` of the passages matching ``where`` (a native
    fragment, ``%s`` placeholders) whose text or section holds CJK; the trigger rebuilds
    their ``tsv`` and postings.  Returns the rows written.  The CJK test runs in the server
    (``CJK_CLASS`` as a regex), so an English import reads no text back."""
    rows = conn.execute_native(
        f"SELECT pk, text, section FROM passages WHERE ({where}) AND (text ~ %s OR section ~ %s)",
        (*params, CJK_CLASS, CJK_CLASS)).fetchall()
    if not rows:
        return 0
    conn.executemany(
        "UPDATE passages SET kw_text = ?, kw_section = ? WHERE pk = ?",
        [(_kw(text), _kw(section), pk) for pk, text, section in rows])
    return len(rows)


def rederive_keyword_forms(conn: Any) -> int:
    """Every passage's kw columns from its text (rebuild, and the M003 upgrade: rows an
    older memo wrote hold NULL).  Caller holds a write transaction."""
    conn.execute_native("UPDATE passages SET kw_text = NULL, kw_section = NULL "
                        "WHERE kw_text IS NOT NULL OR kw_section IS NOT NULL")
    return write_keyword_forms(conn)


def keyword_index_mismatches(conn: Any) -> dict[str, int]:
    """Where PostgreSQL's keyword index disagrees with the passages (0 everywhere = in
    step): ``kw_columns``: rows whose kw columns are not ``index_form`` of their text
    (an older memo's rows, or a write that bypassed memo); ``tsv``: rows whose ``tsv`` or
    ``dl`` is not what the trigger builds from them; ``postings``: (lexeme, row) pairs of
    ``passage_terms`` not in the rows' ``tsv`` or missing from it."""
    kw = 0
    cur = conn.execute_native(
        "SELECT text, section, kw_text, kw_section FROM passages "
        "WHERE kw_text IS NOT NULL OR kw_section IS NOT NULL OR text ~ %s OR section ~ %s",
        (CJK_CLASS, CJK_CLASS))
    for text, section, kw_text, kw_section in cur.fetchall():
        kw += (_kw(text), _kw(section)) != (kw_text, kw_section)
    tsv = int(conn.execute_native(
        "SELECT count(*) FROM passages WHERE tsv IS DISTINCT FROM "
        "(setweight(to_tsvector('english', memo_words(coalesce(kw_text, text))), 'A')"
        " || setweight(to_tsvector('english', memo_words(coalesce(kw_section, section))), 'B'))"
        " OR dl IS DISTINCT FROM memo_token_count(tsv)").fetchone()[0])
    postings = int(conn.execute_native(
        "WITH want AS (SELECT p.pk AS key, u.lexeme AS lex FROM passages p, unnest(p.tsv) u)"
        " SELECT (SELECT count(*) FROM (SELECT key, lex FROM want EXCEPT SELECT key, lex FROM passage_terms) a)"
        "      + (SELECT count(*) FROM (SELECT key, lex FROM passage_terms EXCEPT SELECT key, lex FROM want) b)"
    ).fetchone()[0])
    return {"kw_columns": kw, "tsv": tsv, "postings": postings}
