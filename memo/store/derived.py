"""Derived indexes: kept in step with canonical rows in the caller's transaction, and
rebuildable from them at any time (``rebuild_derived``)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence

from memo.errors import StoreCorrupt
from memo.store import epochs, kw_postings
from memo.store.dialect import is_postgres
from memo.store.postgres.keyword_form import rederive_keyword_forms, write_keyword_forms
from memo.text.cjk import has_cjk, index_form
from memo.text.identifiers import exact_terms


def passage_terms(section: str, text: str) -> str:
    """What ``exact_fts.terms`` holds for a passage."""
    return exact_terms(section + "\n" + text)


def index_passage_range(conn: sqlite3.Connection, first_pk: int, terms: Sequence[str]) -> None:
    """Bulk form of ``index_passages`` for passages ``first_pk .. first_pk + len(terms) - 1``
    just inserted by the caller (``memo.store.records.insert_records``), ``terms[i]`` the
    ``passage_terms`` of passage ``first_pk + i`` (computed before the write transaction).
    The keyword index reads its rows back from ``passages`` in one statement, as the
    external-content table needs."""
    if not terms:
        return
    last_pk = first_pk + len(terms) - 1
    if is_postgres(conn):
        # passages.tsv is written by the row's own trigger; the rows with CJK text get their
        # index form (memo.store.postgres.keyword_form), then the exact terms.
        write_keyword_forms(conn, "pk BETWEEN %s AND %s", (first_pk, last_pk))
        conn.executemany("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)",
                         [(first_pk + k, t) for k, t in enumerate(terms)])
        return
    rows = conn.execute("SELECT pk, text, section FROM passages WHERE pk BETWEEN ? AND ? ORDER BY pk",
                        (first_pk, last_pk)).fetchall()
    n = len(rows)
    forms = [(pk, index_form(text), index_form(section)) for pk, text, section in rows]
    conn.executemany("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)", forms)
    kw_postings.note_added(conn, forms)     # the persistent postings follow in this transaction
    if n != len(terms):   # just inserted by the caller: only a damaged table loses them
        raise StoreCorrupt(f"passages {first_pk}..{last_pk} were just written but {len(terms) - n} cannot be "
                           "read back: the passages table is damaged")
    conn.executemany("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)",
                     [(first_pk + k, t) for k, t in enumerate(terms)])


def index_passages(conn: sqlite3.Connection, pks: Iterable[int]) -> None:
    """Add passages (already inserted in ``passages``) to the keyword and exact indexes."""
    for pk in pks:
        row = conn.execute("SELECT text, section FROM passages WHERE pk = ?", (pk,)).fetchone()
        if row is None:  # just inserted by the caller: only a damaged table loses it
            raise StoreCorrupt(f"passage {pk} was just written but cannot be read back: the passages table is damaged")
        if is_postgres(conn):   # passages.tsv follows by trigger, from the index form of CJK text
            if has_cjk(row["text"]) or has_cjk(row["section"]):
                write_keyword_forms(conn, "pk = %s", (pk,))
        else:
            form = (pk, index_form(row["text"]), index_form(row["section"]))
            conn.execute("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)", form)
            kw_postings.note_added(conn, [form])
        conn.execute("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)",
                     (pk, passage_terms(row["section"], row["text"])))


def unindex_passages(conn: sqlite3.Connection, pks: Iterable[int]) -> None:
    """Remove passages from the derived indexes (before their canonical rows go)."""
    if is_postgres(conn):   # tsv lives in the passage row; exact_fts rows go by foreign key
        pks = [int(pk) for pk in pks]
        if pks:
            conn.execute_native("DELETE FROM exact_fts WHERE rowid = ANY(%s)", (pks,))
        bump_vectors_epoch(conn)
        return
    for pk in pks:
        row = conn.execute("SELECT text, section FROM passages WHERE pk = ?", (pk,)).fetchone()
        if row is None:
            continue
        # External-content FTS5: a delete must repeat the indexed values.
        form = (pk, index_form(row["text"]), index_form(row["section"]))
        conn.execute("INSERT INTO passages_fts(passages_fts, rowid, text, section) VALUES ('delete', ?, ?, ?)", form)
        kw_postings.note_removed(conn, [form])
        conn.execute("DELETE FROM exact_fts WHERE rowid = ?", (pk,))
    bump_vectors_epoch(conn)


def rebuild_keyword_index(conn: sqlite3.Connection) -> int:
    """Re-derive ``passages_fts`` from ``passages`` (caller holds a write tx).  Not FTS5's
    own 'rebuild', which would index the stored text as it is: the index holds
    ``memo.text.cjk.index_form`` of it (CJK runs as characters and bigrams)."""
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('delete-all')")
    kw_postings.mark_unbuilt(conn)      # rebuilt after this transaction (memo.ops.maintenance.reindex)
    cur = conn.execute("SELECT pk, text, section FROM passages ORDER BY pk")
    n = 0
    while batch := cur.fetchmany(2048):
        conn.executemany("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)",
                         [(pk, index_form(text), index_form(section)) for pk, text, section in batch])
        n += len(batch)
    return n


# memo_meta's record of the form passages_fts holds (SQLite).  A database written before
# memo.text.cjk indexed each CJK run as one token; the first write-mode open re-derives
# the rows of its CJK passages (English rows are byte-identical in both forms) and notes
# the form here.  A data change, not a schema change: no version bump, so an older memo
# still opens the file.
KEYWORD_FORM_KEY = "keyword_form"
KEYWORD_FORM = "cjk-bigrams-1"


def keyword_form_current(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM memo_meta WHERE key = ?", (KEYWORD_FORM_KEY,)).fetchone()
    return row is not None and row[0] == KEYWORD_FORM


def note_keyword_form(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT OR REPLACE INTO memo_meta(key, value) VALUES (?, ?)", (KEYWORD_FORM_KEY, KEYWORD_FORM))


def keyword_index_mismatches(conn: sqlite3.Connection) -> int:
    """Terms on which ``passages_fts`` disagrees with ``index_form`` of the stored rows
    (0 = it matches them).  FTS5's own check against its content table (integrity-check
    with rank 1) would tokenize the text as stored and so call every CJK row wrong; this
    builds the index the rows should have in a temporary table, with the same tokenizer,
    and compares the two term by term (documents and occurrences per term: fts5vocab
    'row').  Cost: one more index build, in the temp store."""
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'passages_fts'").fetchone()[0]
    tokenize = re.search(r"tokenize\s*=\s*'([^']*)'", sql).group(1)
    conn.execute("DROP TABLE IF EXISTS temp.memo_kw_expected")
    conn.execute("CREATE VIRTUAL TABLE temp.memo_kw_expected USING fts5(text, section, "
                 f"tokenize='{tokenize}')")
    try:
        cur = conn.execute("SELECT pk, text, section FROM passages ORDER BY pk")
        while batch := cur.fetchmany(2048):
            conn.executemany("INSERT INTO temp.memo_kw_expected(rowid, text, section) VALUES (?, ?, ?)",
                             [(pk, index_form(text), index_form(section)) for pk, text, section in batch])
        conn.execute("CREATE VIRTUAL TABLE temp.memo_kw_have USING fts5vocab(main, passages_fts, 'row')")
        conn.execute("CREATE VIRTUAL TABLE temp.memo_kw_want USING fts5vocab(temp, memo_kw_expected, 'row')")
        return int(conn.execute(
            "SELECT (SELECT count(*) FROM (SELECT term, doc, cnt FROM temp.memo_kw_have"
            "                              EXCEPT SELECT term, doc, cnt FROM temp.memo_kw_want))"
            "     + (SELECT count(*) FROM (SELECT term, doc, cnt FROM temp.memo_kw_want"
            "                              EXCEPT SELECT term, doc, cnt FROM temp.memo_kw_have))").fetchone()[0])
    finally:
        for name in ("memo_kw_have", "memo_kw_want", "memo_kw_expected"):
            conn.execute(f"DROP TABLE IF EXISTS temp.{name}")


def reindex_cjk_passages(conn: sqlite3.Connection) -> int:
    """Re-derive the keyword index rows of the passages that hold CJK text, from the
    form an older memo wrote (the text as stored) to ``index_form`` (caller holds a write
    tx; ``note_keyword_form`` after)."""
    n = 0
    cur = conn.execute("SELECT pk, text, section FROM passages ORDER BY pk")
    while batch := cur.fetchmany(2048):
        for pk, text, section in batch:
            if not (has_cjk(text) or has_cjk(section)):
                continue
            conn.execute("INSERT INTO passages_fts(passages_fts, rowid, text, section) VALUES ('delete', ?, ?, ?)",
                         (pk, text, section))
            conn.execute("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)",
                         (pk, index_form(text), index_form(section)))
            n += 1
    if n:
        kw_postings.mark_unbuilt(conn)  # rebuilt by the caller once passages_fts is flushed
    return n


def bump_vectors_epoch(conn: sqlite3.Connection) -> None:
    """Tell in-memory vector matrices that rows went away: reload fully (a fresh random
    epoch, ``memo.store.epochs``)."""
    epochs.bump(conn, epochs.VECTORS)


def rebuild_fact_index(conn: sqlite3.Connection) -> int:
    """Rebuild ``facts_fts`` from ``facts`` and drop vectors of facts that no longer
    exist (caller holds a write tx).  Vectors are re-embedded by ``memo backfill``."""
    conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM fact_vectors WHERE fact_pk NOT IN (SELECT pk FROM facts)")
    conn.execute("DELETE FROM fact_evidence WHERE passage_pk NOT IN (SELECT pk FROM passages)")
    return int(conn.execute("SELECT count(*) FROM facts").fetchone()[0])


def rebuild_derived(conn: sqlite3.Connection) -> dict[str, int]:
    """Rebuild the keyword and exact indexes from ``passages`` and the fact keyword index
    from ``facts`` (caller holds a write tx).  Vectors (passage and fact) are rebuilt by
    ``memo backfill`` (they need the model)."""
    if is_postgres(conn):   # passages.tsv: the trigger recomputes it (kw columns re-derived first)
        conn.execute("UPDATE passages SET text = text")
        rederive_keyword_forms(conn)
    else:
        rebuild_keyword_index(conn)
        note_keyword_form(conn)
    conn.execute("DELETE FROM exact_fts")
    n = 0
    for row in conn.execute("SELECT pk, text, section FROM passages ORDER BY pk").fetchall():
        conn.execute("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)",
                     (row["pk"], passage_terms(row["section"], row["text"])))
        n += 1
    # Drop vectors of passages that no longer exist (foreign keys already do this; this
    # guards databases written with foreign_keys off by another tool).
    conn.execute("DELETE FROM vectors WHERE passage_pk NOT IN (SELECT pk FROM passages)")
    n_facts = rebuild_fact_index(conn)
    bump_vectors_epoch(conn)
    return {"passages": n, "facts": n_facts}
