"""PostgreSQL schema: numbered migrations, gated by ``memo_meta.schema_version``.

The tables and columns are SQLite's (``memo.store.migrations`` v1-v4, ``memo.store.mentions``)
so the canonical statements run unchanged on both engines; times stay ISO-8601 text
(the scope filter compares them as text on both).  What differs:

* full text: ``passages.tsv`` (text weight A, section weight B; ``english`` stemming;
  diacritics and case folded first as SQLite's unicode61 folds them, ``memo_fold``: M005) and
  ``passages.dl`` (its token count, bm25's document length) are kept by a trigger in the
  writing statement, so they are always in step; they are built from ``kw_text`` /
  ``kw_section`` where those are set (CJK text in ``memo.text.cjk.index_form``, written by
  ``memo.store.postgres.keyword_form``; M003), from the text as stored otherwise; ``exact_fts`` keeps SQLite's
  (rowid, terms) rows with a ``simple`` tsvector of the hex-encoded identifier terms
  (``memo.text.identifiers``: each term is one word to PostgreSQL's parser too);
  ``facts.tsv`` / ``facts.dl`` as passages.  bm25 reads postings tables
  (``passage_terms``, ``exact_terms``, ``fact_terms``: lexeme, row, occurrences, row
  length), written from the tsvector by triggers in the same statement.
* vectors: ``vec`` is pgvector's ``vector`` (any dimension: one table serves every model;
  a search casts to its model's dimension).
* pks: a row inserted without a pk gets max(pk) + 1 (a trigger), which is what SQLite's
  INTEGER PRIMARY KEY gives; writers are serialised (``memo.store.postgres.tx``), so
  that is race-free.  ``seq`` columns (vectors, mentions) only grow: identities.

Migrations run in one transaction under the writers' lock; the read path only checks
the version.
"""

from __future__ import annotations

from typing import Any

from memo.errors import SchemaTooNew, StoreError
from memo.store import epochs
from memo.stored import CURRENT

M001 = r"""
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE memo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO memo_meta(key, value) VALUES ('vectors_epoch', '0'), ('mentions_epoch', '0'), ('generation', '0');

CREATE FUNCTION memo_next_pk() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.pk IS NULL THEN
        EXECUTE format('SELECT coalesce(max(pk), 0) + 1 FROM %I', TG_TABLE_NAME) INTO NEW.pk;
    END IF;
    RETURN NEW;
END $$;

-- FTS5's unicode61 splits at every punctuation mark ("net/http" -> net, http; "2.31.0" ->
-- 2, 31, 0); PostgreSQL's parser keeps paths, hosts and versions whole.  Blanking ASCII
-- punctuation first gives the keyword index FTS5's words (the exact arm keeps the whole
-- identifiers).
CREATE FUNCTION memo_words(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(t, '[[:punct:]]+', ' ', 'g')
$$;

CREATE FUNCTION memo_token_count(v tsvector) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(v) u
$$;

CREATE TABLE records (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL DEFAULT 'default',
    kind          TEXT NOT NULL CHECK (kind IN ('note','conversation','doc','code')),
    title         TEXT,
    source        TEXT,
    library       TEXT,
    version       TEXT,
    event_at      TEXT,
    recorded_at   TEXT NOT NULL,
    superseded_at TEXT,
    superseded_by TEXT REFERENCES records(id),
    forgotten_at  TEXT,
    trust         DOUBLE PRECISION NOT NULL DEFAULT 1.0 CHECK (trust >= 0.0 AND trust <= 1.0),
    author        TEXT,
    import_path   TEXT,
    ext_id        TEXT,
    content_hash  TEXT NOT NULL,
    body          TEXT NOT NULL,
    meta          TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash) WHERE forgotten_at IS NULL;
CREATE INDEX records_scope ON records(namespace, kind);
CREATE INDEX records_import ON records(namespace, import_path);
CREATE INDEX records_ext ON records(namespace, ext_id);

CREATE TABLE record_tags (
    record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    PRIMARY KEY (record_id, tag)
);
CREATE INDEX record_tags_tag ON record_tags(tag, record_id);

CREATE TABLE passages (
    pk        BIGINT PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    section   TEXT NOT NULL DEFAULT '',
    text      TEXT NOT NULL,
    speaker   TEXT,
    event_at  TEXT,
    ext_id    TEXT,
    tokens    INTEGER NOT NULL,
    tsv       tsvector,
    dl        INTEGER,
    UNIQUE (record_id, ord)
);
CREATE INDEX passages_record ON passages(record_id);
CREATE FUNCTION memo_passages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := setweight(to_tsvector('english', memo_words(NEW.text)), 'A')
              || setweight(to_tsvector('english', memo_words(NEW.section)), 'B');
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
CREATE TRIGGER passages_pk BEFORE INSERT ON passages FOR EACH ROW EXECUTE FUNCTION memo_next_pk();
CREATE TRIGGER passages_tsv BEFORE INSERT OR UPDATE OF text, section ON passages
    FOR EACH ROW EXECUTE FUNCTION memo_passages_tsv();

CREATE TABLE exact_fts (
    rowid BIGINT PRIMARY KEY REFERENCES passages(pk) ON DELETE CASCADE,
    terms TEXT NOT NULL,
    tsv   tsvector,
    dl    INTEGER
);
CREATE FUNCTION memo_exact_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector('simple', NEW.terms);
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
CREATE TRIGGER exact_fts_tsv BEFORE INSERT OR UPDATE OF terms ON exact_fts
    FOR EACH ROW EXECUTE FUNCTION memo_exact_tsv();

-- Postings: one row per (lexeme, row) with its occurrences in the text (tf_a) and the
-- section (tf_b) and the row's token count: bm25 reads a query lexeme's posting list
-- instead of unnesting every matching row's tsvector (memo.store.postgres.fts).
-- Written by AFTER triggers from the row's tsv; a row's postings go with it (foreign key).
-- The primary key carries the scores' inputs (INCLUDE): a lexeme's posting list is read
-- from the index alone, in order, not from rows scattered over the heap (at 100k passages
-- one SciFact claim read 48,728 postings from 45,656 heap pages: 245 of its 380 ms).
{postings_passage_terms}
{postings_exact_terms}
CREATE FUNCTION memo_write_postings(postings text, key_value bigint, dl integer, tsv tsvector, replace boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF replace THEN
        EXECUTE format('DELETE FROM %I WHERE key = $1', postings) USING key_value;
    END IF;
    EXECUTE format('INSERT INTO %I(lex, key, tf_a, tf_b, dl) '
                   'SELECT u.lexeme, $1, count(*) FILTER (WHERE w <> ''B''), count(*) FILTER (WHERE w = ''B''), $2 '
                   'FROM unnest($3) u, unnest(u.weights) w GROUP BY u.lexeme', postings)
        USING key_value, dl, tsv;
END $$;
CREATE FUNCTION memo_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memo_write_postings(TG_ARGV[0], NEW.pk, NEW.dl, NEW.tsv, TG_OP = 'UPDATE');
    RETURN NULL;
END $$;
CREATE FUNCTION memo_exact_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memo_write_postings('exact_terms', NEW.rowid, NEW.dl, NEW.tsv, TG_OP = 'UPDATE');
    RETURN NULL;
END $$;
CREATE TRIGGER passages_postings AFTER INSERT OR UPDATE OF text, section ON passages
    FOR EACH ROW EXECUTE FUNCTION memo_postings('passage_terms');
CREATE TRIGGER exact_postings AFTER INSERT OR UPDATE OF terms ON exact_fts
    FOR EACH ROW EXECUTE FUNCTION memo_exact_postings();

CREATE TABLE vectors (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    passage_pk BIGINT NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
    model_id   TEXT NOT NULL,
    vec        vector NOT NULL,
    UNIQUE (model_id, passage_pk)
);

CREATE TABLE facts (
    pk            BIGINT PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    namespace     TEXT NOT NULL DEFAULT 'default',
    text          TEXT NOT NULL,
    subject       TEXT,
    predicate     TEXT,
    object        TEXT,
    event_at      TEXT,
    recorded_at   TEXT NOT NULL,
    superseded_at TEXT,
    superseded_by TEXT REFERENCES facts(id),
    forgotten_at  TEXT,
    trust         DOUBLE PRECISION NOT NULL DEFAULT 1.0 CHECK (trust >= 0.0 AND trust <= 1.0),
    author        TEXT,
    source        TEXT,
    content_hash  TEXT NOT NULL,
    meta          TEXT NOT NULL DEFAULT '{}',
    tsv           tsvector,
    dl            INTEGER
);
CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE forgotten_at IS NULL;
CREATE INDEX facts_scope ON facts(namespace);
CREATE FUNCTION memo_facts_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector('english', memo_words(NEW.text));
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
CREATE TRIGGER facts_pk BEFORE INSERT ON facts FOR EACH ROW EXECUTE FUNCTION memo_next_pk();
CREATE TRIGGER facts_tsv BEFORE INSERT OR UPDATE OF text ON facts FOR EACH ROW EXECUTE FUNCTION memo_facts_tsv();

{postings_fact_terms}
CREATE TRIGGER facts_postings AFTER INSERT OR UPDATE OF text ON facts
    FOR EACH ROW EXECUTE FUNCTION memo_postings('fact_terms');

CREATE TABLE fact_evidence (
    fact_pk    BIGINT NOT NULL REFERENCES facts(pk) ON DELETE CASCADE,
    passage_pk BIGINT NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
    PRIMARY KEY (fact_pk, passage_pk)
);
CREATE INDEX fact_evidence_passage ON fact_evidence(passage_pk, fact_pk);

CREATE TABLE fact_vectors (
    seq      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_pk  BIGINT NOT NULL REFERENCES facts(pk) ON DELETE CASCADE,
    model_id TEXT NOT NULL,
    vec      vector NOT NULL,
    UNIQUE (model_id, fact_pk)
);

CREATE TABLE entities (
    pk   BIGINT PRIMARY KEY,
    key  TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE TRIGGER entities_pk BEFORE INSERT ON entities FOR EACH ROW EXECUTE FUNCTION memo_next_pk();
CREATE TABLE entity_aliases (
    alias     TEXT NOT NULL,
    entity_pk BIGINT NOT NULL REFERENCES entities(pk) ON DELETE CASCADE,
    PRIMARY KEY (alias, entity_pk)
);
CREATE INDEX entity_aliases_entity ON entity_aliases(entity_pk);
CREATE TABLE mentions (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    passage_pk BIGINT NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
    entity_pk  BIGINT NOT NULL REFERENCES entities(pk) ON DELETE CASCADE,
    count      INTEGER NOT NULL,
    fact_pk    BIGINT REFERENCES facts(pk) ON DELETE CASCADE
);
CREATE UNIQUE INDEX mentions_key ON mentions(passage_pk, entity_pk, (coalesce(fact_pk, 0)));
CREATE INDEX mentions_entity ON mentions(entity_pk, passage_pk);
CREATE INDEX mentions_fact ON mentions(fact_pk) WHERE fact_pk IS NOT NULL;
"""

# The three postings tables (keyword, exact, fact) share one shape.
_POSTINGS = """CREATE TABLE {name} (
    lex  TEXT NOT NULL,
    key  BIGINT NOT NULL REFERENCES {parent} ON DELETE CASCADE,
    tf_a INTEGER NOT NULL,
    tf_b INTEGER NOT NULL,
    dl   INTEGER NOT NULL,
    PRIMARY KEY (lex, key) INCLUDE (tf_a, tf_b, dl)
);
CREATE INDEX {name}_key ON {name}(key);"""
M001 = M001.replace("{postings_passage_terms}", _POSTINGS.format(name="passage_terms", parent="passages(pk)")) \
           .replace("{postings_exact_terms}", _POSTINGS.format(name="exact_terms", parent="exact_fts(rowid)")) \
           .replace("{postings_fact_terms}", _POSTINGS.format(name="fact_terms", parent="facts(pk)"))

# Evidence ids given as ext_ids are index lookups (SQLite's migration 4, issue 33.1).
M002 = """
CREATE INDEX records_ext_id ON records(ext_id) WHERE ext_id IS NOT NULL;
CREATE INDEX passages_ext ON passages(ext_id) WHERE ext_id IS NOT NULL;
"""

# CJK text indexed as SQLite indexes it (issue 32): the trigger builds tsv from the index
# form Python writes into kw_text / kw_section (memo.store.postgres.keyword_form; NULL, so
# the text as stored, for every row without CJK: English indexes exactly as before).  The
# triggers also fire when only the kw columns change.  After the SQL, ``AFTER_SQL[2]``
# writes the kw columns of the CJK rows an older memo stored.
M003 = """
ALTER TABLE passages ADD COLUMN kw_text TEXT, ADD COLUMN kw_section TEXT;
CREATE OR REPLACE FUNCTION memo_passages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := setweight(to_tsvector('english', memo_words(coalesce(NEW.kw_text, NEW.text))), 'A')
              || setweight(to_tsvector('english', memo_words(coalesce(NEW.kw_section, NEW.section))), 'B');
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
DROP TRIGGER passages_tsv ON passages;
CREATE TRIGGER passages_tsv BEFORE INSERT OR UPDATE OF text, section, kw_text, kw_section ON passages
    FOR EACH ROW EXECUTE FUNCTION memo_passages_tsv();
DROP TRIGGER passages_postings ON passages;
CREATE TRIGGER passages_postings AFTER INSERT OR UPDATE OF text, section, kw_text, kw_section ON passages
    FOR EACH ROW EXECUTE FUNCTION memo_postings('passage_terms');
"""


# The dedup indexes keep one *current* record or fact per text (SQLite's m008): a text an
# older version held can be current again (a reverted file, ``memo supersede`` back).
M004 = f"""
DROP INDEX records_dedup;
CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash) WHERE {CURRENT};
DROP INDEX facts_dedup;
CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE {CURRENT};
"""


# Diacritics and case folded as SQLite folds them (unicode61 remove_diacritics 2): before,
# the query words were folded (memo.text.fts_query) and the tsvectors were not, so `café`
# never found `café`.  The trigger functions build tsv through one definition each
# (memo_passage_tsv, memo_fact_tsv: the doctor's check calls the same), around memo_fold;
# here memo_fold is a placeholder that folds nothing.  After the SQL, ``AFTER_SQL[4]``
# writes the real one (its table comes from memo.text.folding and this server's lower():
# memo.store.postgres.keyword_form.install_fold) and re-indexes the passages and facts
# holding a character it folds.  OR REPLACE: running it again is harmless.
M005 = """
CREATE OR REPLACE FUNCTION memo_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT t $$;
CREATE OR REPLACE FUNCTION memo_passage_tsv(body text, section text) RETURNS tsvector LANGUAGE sql IMMUTABLE AS $$
    SELECT setweight(to_tsvector('english', memo_words(memo_fold(body))), 'A')
        || setweight(to_tsvector('english', memo_words(memo_fold(section))), 'B')
$$;
CREATE OR REPLACE FUNCTION memo_fact_tsv(body text) RETURNS tsvector LANGUAGE sql IMMUTABLE AS $$
    SELECT to_tsvector('english', memo_words(memo_fold(body)))
$$;
CREATE OR REPLACE FUNCTION memo_passages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := memo_passage_tsv(coalesce(NEW.kw_text, NEW.text), coalesce(NEW.kw_section, NEW.section));
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION memo_facts_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := memo_fact_tsv(NEW.text);
    NEW.dl := memo_token_count(NEW.tsv);
    RETURN NEW;
END $$;
"""


def _rederive_cjk(conn: Any) -> None:
    from memo.store.postgres.keyword_form import rederive_keyword_forms

    rederive_keyword_forms(conn)


def _restamp_event_dates(conn: Any) -> None:
    from memo.store.migrations import restamp_event_dates

    restamp_event_dates(conn)


def _fold_diacritics(conn: Any) -> None:
    from memo.store.postgres.keyword_form import install_fold, refold_rows

    install_fold(conn)
    refold_rows(conn)


# What the embedding needs to copy a vector instead of computing it again (memo.embed.reuse):
# the passage each model input was embedded from, and the earlier version of a record found
# from the new one (also a purge's pointer clean-up without a scan).  SQLite v9.
M006 = """
CREATE INDEX IF NOT EXISTS records_superseded ON records(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS vector_keys (
    model_id   TEXT NOT NULL,
    input_key  TEXT NOT NULL,
    passage_pk BIGINT NOT NULL,
    PRIMARY KEY (model_id, input_key, passage_pk)
);
"""


MIGRATIONS: tuple[str, ...] = (M001, M002, M003, M004, M005, M006)
# Python steps run right after a migration's SQL (index: the migration's 0-based number).
AFTER_SQL = {2: _rederive_cjk, 3: _restamp_event_dates, 4: _fold_diacritics}
LATEST = len(MIGRATIONS)
# The oldest schema reads take as it is (M002 adds only the ext_id indexes writes use; M003
# the kw columns writes fill: until the first write migrates, a CJK passage an older memo
# stored is found by its whole run only, as before; M005 likewise: until then an accented
# word is not found, as before; M006 adds an index and a table writes use).
READ_FROM = 1


def schema_version(conn: Any) -> int:
    """0 for an empty database; the version memo wrote otherwise."""
    row = conn.execute_native("SELECT to_regclass('memo_meta') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    row = conn.execute_native("SELECT value FROM memo_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row is not None else 0


def _check_not_foreign(conn: Any, version: int) -> None:
    if version:
        return
    n = conn.execute_native(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()[0]
    if n:
        raise StoreError("this PostgreSQL database holds other tables and none of memo's: memo will not add "
                         "its tables to it", hint="create an empty database for memo (createdb memo) and pass its URL")


def ensure_schema(conn: Any) -> int:
    """Apply the pending migrations in one transaction under the writers' lock."""
    from memo.store.connect import write_tx

    current = schema_version(conn)
    if current == LATEST:
        return LATEST
    if current > LATEST:
        raise SchemaTooNew(f"database schema v{current} is newer than this memo (v{LATEST})")
    _check_not_foreign(conn, current)
    with write_tx(conn):
        current = schema_version(conn)   # re-read under the lock: another process may have won
        if current > LATEST:
            raise SchemaTooNew(f"database schema v{current} is newer than this memo (v{LATEST})")
        created = current == 0
        for number in range(current, LATEST):
            conn.execute_native(MIGRATIONS[number], None)
            if number in AFTER_SQL:
                AFTER_SQL[number](conn)
        if created:     # its caches' epochs its own, not another database's (memo.store.epochs)
            epochs.new_database(conn)
        conn.execute_native(
            "INSERT INTO memo_meta(key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(LATEST),))
    return LATEST


def check_schema(conn: Any) -> None:
    """Read path: verify, never change."""
    current = schema_version(conn)
    if current > LATEST:
        raise SchemaTooNew(f"database schema v{current} is newer than this memo (v{LATEST})")
    if current == 0:
        _check_not_foreign(conn, 0)
        raise StoreError("no memo database at this PostgreSQL URL yet",
                         hint="add something first (`memo add` / `memo import`) with the same --db")
    if current < READ_FROM:
        raise StoreError(f"database schema is v{current}, this memo needs v{LATEST}",
                         hint="run any write command (e.g. `memo stats --migrate`) to migrate")
