"""PostgreSQL backend (pgvector): the same tables, pipeline, why and trace as SQLite.

``connection``: a session used as memo uses a SQLite connection (placeholders and a few
idioms translated in one place); ``schema``: numbered migrations; ``tx``: write and read
transactions with SQLite's meaning; ``fts``: the keyword and exact arms' bm25 over
tsvectors; ``vectors``: the semantic arm on pgvector.  Selected by a ``postgresql://``
URL in ``--db`` / ``MEMO_DB`` (``memo.store.db.open_db``).
"""
