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

Diacritics and case (schema v5, M005): SQLite's index folds them with FTS5's
``unicode61 remove_diacritics 2`` and the keyword arm's query words are folded the same way
(``memo.text.folding``), so ``café`` is ``cafe`` on both sides there.  PostgreSQL's parser
keeps the accents: a folded query never met an accented passage, even typed exactly.  The
one definition of the folding stays SQLite's tokenizer: ``fold_table`` asks it, character
by character, what each one becomes, and ``install_fold`` writes the characters PostgreSQL's
own ``lower()`` does not already turn into that as the server function ``memo_fold``
(``translate``), which the triggers apply before ``to_tsvector`` (``memo_passage_tsv``,
``memo_fact_tsv``).  The query side needs nothing from the server: its words are unicode61
tokens (``memo.store.postgres.fts.lexemes``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memo.text.cjk import CJK_CLASS, index_form
from memo.text.folding import unicode61_tokens


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
    older memo wrote hold NULL).  Caller holds a write transaction.  From v5 on (the
    database has ``memo_fold``) it also rewrites ``memo_fold`` when this memo's folding
    table differs from the one installed, and re-indexes the rows it changes for: so
    ``memo reindex`` (``memo.store.derived.rebuild_derived``) repairs that too."""
    conn.execute_native("UPDATE passages SET kw_text = NULL, kw_section = NULL "
                        "WHERE kw_text IS NOT NULL OR kw_section IS NOT NULL")
    n = write_keyword_forms(conn)
    if _installed_fold(conn) is not None and install_fold(conn):
        refold_rows(conn)
    return n


# -- diacritics and case, folded as SQLite's unicode61 folds them (M005) -------------

# Where unicode61's fold is not the identity: it folds through tables for the Basic
# Multilingual Plane and, above it, only the Deseret capitals U+10400..U+10427 (SQLite's
# fts5_unicode2.c, sqlite3Fts5UnicodeFold); every other code point folds to itself.
_PROBED = (range(0x80, 0xD800), range(0xE000, 0x10000), range(0x10400, 0x10428))
_PROBE_CHUNK = 4096


@functools.cache
def fold_table() -> dict[str, str]:
    """Every non-ASCII character that unicode61 (``memo.text.folding.TOKENIZER``, what
    ``passages_fts`` and the query words use) folds to something else, and what it folds to:
    a lower-case letter without its diacritics (``É`` -> ``e``), or ``""`` for a combining
    mark it drops inside a word.  Asked from SQLite itself, so this is the one definition,
    not a copy of its tables: each character is probed as ``x<c>y`` (one token ``x<fold>y``
    when it is a word character, the tokens ``x`` and ``y`` when it separates words)."""
    table: dict[str, str] = {}
    chars = [chr(c) for r in _PROBED for c in r]
    for start in range(0, len(chars), _PROBE_CHUNK):
        chunk = chars[start:start + _PROBE_CHUNK]
        tokens = iter(unicode61_tokens(" ".join(f"x{c}y" for c in chunk)))
        for c in chunk:
            token = next(tokens)
            if token == "x":          # a separator: x and y are two tokens, nothing to fold
                next(tokens)
                continue
            folded = token[1:-1]
            if folded != c:
                table[c] = folded
    return table


def _fold_pairs(conn: Any) -> list[tuple[str, str]]:
    """The (character, fold) pairs of ``fold_table`` that this server's ``lower()`` (its
    LC_CTYPE) does not already turn into their fold: ``to_tsvector`` lower-cases whatever
    ``memo_fold`` leaves, so only these need a table."""
    table = fold_table()
    chars = list(table)
    row = conn.execute_native(
        "SELECT coalesce(array_agg(c ORDER BY o), '{}'), coalesce(array_agg(f ORDER BY o), '{}')"
        " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(c, f, o) WHERE lower(c) IS DISTINCT FROM f",
        (chars, [table[c] for c in chars])).fetchone()
    return list(zip(row[0], row[1], strict=True))


def _char_class(pairs: Sequence[tuple[str, str]]) -> str:
    # Non-ASCII characters only: no quote, backslash, bracket or dash to escape.
    assert all(not c.isascii() for c, _ in pairs)
    return "[" + "".join(c for c, _ in pairs) + "]"


def _fold_body(pairs: Sequence[tuple[str, str]]) -> str:
    """The body of ``memo_fold``.  Text without any character to fold is returned as it is
    (no cost for English); otherwise only the runs of those characters go through
    ``translate``, whose cost grows with the length of its input times the length of its
    table (measured on a 2.3 kB French passage: 3 ms more than ``to_tsvector`` alone for the
    whole text, 0.45 ms by runs; English text: nothing more)."""
    if not pairs:
        return "SELECT t"
    # unicode61 folds a character to one character or to none (a dropped mark):
    # translate() deletes the characters of its first list past the end of the second.
    kept = [(c, f) for c, f in pairs if f]
    assert all(len(f) == 1 for _, f in kept)
    source = "".join(c for c, _ in kept) + "".join(c for c, f in pairs if not f)
    target = "".join(f for _, f in kept)
    cls = _char_class(pairs)
    return (f"SELECT CASE WHEN t !~ '{cls}' THEN t ELSE ("
            f"SELECT string_agg(CASE WHEN s.m[1] ~ '{cls}' THEN translate(s.m[1], '{source}', '{target}')"
            " ELSE s.m[1] END, '' ORDER BY s.i)"
            f" FROM regexp_matches(t, '[^{cls[1:]}+|{cls}+', 'g') WITH ORDINALITY AS s(m, i)) END")


def _installed_fold(conn: Any) -> str | None:
    row = conn.execute_native(
        "SELECT prosrc FROM pg_proc WHERE proname = 'memo_fold' AND pronamespace = current_schema()::regnamespace"
    ).fetchone()
    return None if row is None else row[0]


def install_fold(conn: Any) -> bool:
    """Write ``memo_fold`` for this database (caller holds a write transaction); False when
    the one installed is already this memo's.  The rows it changes for are re-indexed by
    the caller (``refold_rows``)."""
    body = _fold_body(_fold_pairs(conn))
    if _installed_fold(conn) == body:
        return False
    # prosrc keeps the body byte for byte: the next call compares it with this memo's.
    conn.execute_native("CREATE OR REPLACE FUNCTION memo_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE "
                        f"PARALLEL SAFE AS $memo_fold${body}$memo_fold$", None)
    return True


def refold_rows(conn: Any) -> int:
    """Re-index (the triggers rebuild ``tsv`` and the postings) the passages and facts
    holding a character ``memo_fold`` changes; every other row's index is the same with or
    without it.  Returns the rows rewritten."""
    pairs = _fold_pairs(conn)
    if not pairs:
        return 0
    cls = _char_class(pairs)
    n = conn.execute_native("UPDATE passages SET text = text WHERE text ~ %s OR section ~ %s", (cls, cls)).rowcount
    n += conn.execute_native("UPDATE facts SET text = text WHERE text ~ %s", (cls,)).rowcount
    return max(n, 0)


def keyword_index_mismatches(conn: Any) -> dict[str, int]:
    """Where PostgreSQL's keyword index disagrees with the passages (0 everywhere = in
    step): ``kw_columns``: rows whose kw columns are not ``index_form`` of their text
    (an older memo's rows, or a write that bypassed memo); ``tsv``: rows whose ``tsv`` or
    ``dl`` is not what the trigger builds from them (``memo_passage_tsv``, the trigger's
    own definition; needs schema v5); ``postings``: (lexeme, row) pairs of
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
        "memo_passage_tsv(coalesce(kw_text, text), coalesce(kw_section, section))"
        " OR dl IS DISTINCT FROM memo_token_count(tsv)").fetchone()[0])
    postings = int(conn.execute_native(
        "WITH want AS (SELECT p.pk AS key, u.lexeme AS lex FROM passages p, unnest(p.tsv) u)"
        " SELECT (SELECT count(*) FROM (SELECT key, lex FROM want EXCEPT SELECT key, lex FROM passage_terms) a)"
        "      + (SELECT count(*) FROM (SELECT key, lex FROM passage_terms EXCEPT SELECT key, lex FROM want) b)"
    ).fetchone()[0])
    return {"kw_columns": kw, "tsv": tsv, "postings": postings}
