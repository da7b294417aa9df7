"""The keyword index's rows holding a word, on either backend (tests only): SQLite's FTS5
tables (``passages_fts``, ``facts_fts``), PostgreSQL's ``tsv`` column of the row itself."""

from __future__ import annotations

from memo.store.dialect import is_postgres

_PG = {"passages_fts": "passages", "facts_fts": "facts"}


def keyword_rows(conn, table: str, word: str) -> list[int]:
    """pks of the rows of ``table`` ('passages_fts' / 'facts_fts') whose keyword index holds ``word``."""
    if is_postgres(conn):
        return [r[0] for r in conn.execute(
            f"SELECT pk FROM {_PG[table]} WHERE tsv @@ plainto_tsquery('english', ?) ORDER BY pk", (word,))]
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (word,))]
