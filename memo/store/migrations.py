"""Numbered schema migrations, gated by ``PRAGMA user_version``.

Canonical rows: ``records``, ``record_tags``, ``passages``.  Derived (rebuildable with
``memo reindex`` / ``memo backfill``): ``passages_fts`` (keyword arm), ``exact_fts``
(exact arm) and ``vectors`` (semantic arm).

Migrations run only from the write path (``ensure_schema``), all pending ones inside one
``BEGIN IMMEDIATE``; the read path only *checks* the version (``check_schema``) and never
issues DDL, so concurrent readers never race on schema objects (tobi/qmd #925).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from memo.errors import SchemaTooNew, StoreCorrupt, StoreError
from memo.store import epochs, kw_postings
from memo.store.connect import write_tx
from memo.store.damage import RESTORE_HINT, db_path_of, mark_damaged, read_marker
from memo.store.derived import keyword_form_current, note_keyword_form, reindex_cjk_passages
from memo.store.mentions import m003_entities
from memo.stored import CURRENT
from memo.text.when import stored_when


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute statements one by one.  ``executescript`` would COMMIT the open
    transaction first, breaking the all-or-nothing migration."""
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""
    if buf.strip():
        raise StoreError(f"incomplete migration statement: {buf[:80]!r}")


def m001_core(conn: sqlite3.Connection) -> None:
    _run_script(conn, 
        """
        CREATE TABLE records (
            id            TEXT PRIMARY KEY,
            namespace     TEXT NOT NULL DEFAULT 'default',
            kind          TEXT NOT NULL CHECK (kind IN ('note','conversation','doc','code')),
            title         TEXT,
            source        TEXT,
            library       TEXT,
            version       TEXT,
            event_at      TEXT,              -- when the thing happened (ISO-8601), may be NULL
            recorded_at   TEXT NOT NULL,     -- when memo learned it (UTC ISO-8601)
            superseded_at TEXT,
            superseded_by TEXT REFERENCES records(id),
            forgotten_at  TEXT,              -- soft delete: hidden from every search
            trust         REAL NOT NULL DEFAULT 1.0 CHECK (trust >= 0.0 AND trust <= 1.0),
            author        TEXT,              -- provenance: who or what wrote it
            import_path   TEXT,              -- provenance: file (relative to import root) or URL
            ext_id        TEXT,              -- identifier in the source (BEIR doc id, ...)
            content_hash  TEXT NOT NULL,     -- sha256 of the normalised body
            body          TEXT NOT NULL,
            meta          TEXT NOT NULL DEFAULT '{}'
        );
        -- Re-importing the same content adds nothing: one live (not forgotten) record per
        -- (namespace, content).
        CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash)
            WHERE forgotten_at IS NULL;
        CREATE INDEX records_scope ON records(namespace, kind);
        CREATE INDEX records_import ON records(namespace, import_path);
        CREATE INDEX records_ext ON records(namespace, ext_id);

        CREATE TABLE record_tags (
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            tag       TEXT NOT NULL,
            PRIMARY KEY (record_id, tag)
        ) WITHOUT ROWID;
        CREATE INDEX record_tags_tag ON record_tags(tag, record_id);

        CREATE TABLE passages (
            pk        INTEGER PRIMARY KEY,   -- rowid shared by the FTS tables and vectors
            id        TEXT NOT NULL UNIQUE,  -- stable public id: '<record_id>:<ord>'
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            ord       INTEGER NOT NULL,
            section   TEXT NOT NULL DEFAULT '',  -- heading path, symbol, or speaker line
            text      TEXT NOT NULL,
            speaker   TEXT,
            event_at  TEXT,
            ext_id    TEXT,                  -- e.g. a LoCoMo turn id 'D1:3'
            tokens    INTEGER NOT NULL,      -- memo.text.tokens.count_tokens(section + text)
            UNIQUE (record_id, ord)
        );
        CREATE INDEX passages_record ON passages(record_id);

        CREATE VIRTUAL TABLE passages_fts USING fts5(
            text, section,
            content='passages', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        -- Exact arm: identifier tokens, each encoded so FTS5's ascii tokenizer keeps it
        -- whole (memo.text.identifiers).
        CREATE VIRTUAL TABLE exact_fts USING fts5(terms, tokenize='ascii');

        CREATE TABLE vectors (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,  -- lets readers load only new rows
            passage_pk INTEGER NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
            model_id   TEXT NOT NULL,
            vec        BLOB NOT NULL,                      -- little-endian float32, unit norm
            UNIQUE (model_id, passage_pk)
        );

        CREATE TABLE memo_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        INSERT INTO memo_meta(key, value) VALUES ('vectors_epoch', '0');
        """
    )


def m002_facts(conn: sqlite3.Connection) -> None:
    """Facts (canonical: ``facts``, ``fact_evidence``) and their derived indexes
    (``facts_fts``, kept in step by triggers in the writing transaction; ``fact_vectors``,
    queued and backfilled like passage vectors).  memo/store/facts.py."""
    _run_script(conn,
        """
        CREATE TABLE facts (
            pk            INTEGER PRIMARY KEY,   -- rowid shared by facts_fts and fact_vectors
            id            TEXT NOT NULL UNIQUE,  -- stable public id 'f<time><random>'
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
            trust         REAL NOT NULL DEFAULT 1.0 CHECK (trust >= 0.0 AND trust <= 1.0),
            author        TEXT,
            source        TEXT,
            content_hash  TEXT NOT NULL,         -- sha256 of the text and the evidence ids
            meta          TEXT NOT NULL DEFAULT '{}'
        );
        CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE forgotten_at IS NULL;
        CREATE INDEX facts_scope ON facts(namespace);

        CREATE TABLE fact_evidence (
            fact_pk    INTEGER NOT NULL REFERENCES facts(pk) ON DELETE CASCADE,
            passage_pk INTEGER NOT NULL REFERENCES passages(pk) ON DELETE CASCADE,
            PRIMARY KEY (fact_pk, passage_pk)
        ) WITHOUT ROWID;
        CREATE INDEX fact_evidence_passage ON fact_evidence(passage_pk, fact_pk);

        CREATE VIRTUAL TABLE facts_fts USING fts5(
            text,
            content='facts', content_rowid='pk',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
            INSERT INTO facts_fts(rowid, text) VALUES (new.pk, new.text);
        END;
        CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
            INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', old.pk, old.text);
        END;
        CREATE TRIGGER facts_fts_update AFTER UPDATE OF text ON facts BEGIN
            INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', old.pk, old.text);
            INSERT INTO facts_fts(rowid, text) VALUES (new.pk, new.text);
        END;

        CREATE TABLE fact_vectors (
            seq      INTEGER PRIMARY KEY AUTOINCREMENT,
            fact_pk  INTEGER NOT NULL REFERENCES facts(pk) ON DELETE CASCADE,
            model_id TEXT NOT NULL,
            vec      BLOB NOT NULL,                 -- little-endian float32, unit norm
            UNIQUE (model_id, fact_pk)
        );
        """
    )


def m003_mentions(conn: sqlite3.Connection) -> None:
    """Entities, aliases and mentions (derived from passages and facts; rebuilt by
    ``memo reindex``), filled from the rows already stored.  memo/store/mentions.py."""
    m003_entities(conn, _run_script)


def m004_ext_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for evidence ids given as ext_ids (``memo.store.facts.resolve_evidence``):
    ``records_ext`` leads with the namespace, so a record ext_id looked up in every
    namespace, and any passage ext_id, was a full table scan; 20,000 bogus evidence ids
    took 22 s on 4,156 passages (issue 33.1).  Partial: most rows have no ext_id, and an
    ``ext_id = ?`` lookup implies ``ext_id IS NOT NULL``, so SQLite uses them."""
    _run_script(conn,
        """
        CREATE INDEX records_ext_id ON records(ext_id) WHERE ext_id IS NOT NULL;
        CREATE INDEX passages_ext ON passages(ext_id) WHERE ext_id IS NOT NULL;
        """
    )


def m005_hash_index(conn: sqlite3.Connection) -> None:
    """A second, plain index on ``records.content_hash``: a write cross-checks the dedup
    index through it (``memo.store.records.find_live_duplicate``), so a dedup index that
    lost an entry is caught at the write on a file of any size, not only by the open
    check on files up to 64 MiB (issue 33.2: on a 364 MB file a damaged ``records_dedup``
    let ``memo add`` store a second live copy)."""
    _run_script(conn, "CREATE INDEX records_hash ON records(content_hash);")


def m006_keyword_postings(conn: sqlite3.Connection) -> None:
    """The keyword arm's persistent postings (memo/store/kw_postings.py: a base of packed
    per-term postings and a delta every write appends to; built from passages_fts right
    after the migration, by ``_ensure_postings``), and a partial index over the records
    that are not live, so the default scope's statistics read the few excluded passages
    instead of counting every passage (memo.retrieve.scope, issue 31.2)."""
    _run_script(conn, kw_postings.SCHEMA)
    _run_script(conn, "CREATE INDEX records_not_live ON records(id)"
                      " WHERE superseded_at IS NOT NULL OR forgotten_at IS NOT NULL;")


def m007_vector_counts(conn: sqlite3.Connection) -> None:
    """Each model's vector rows, kept by triggers (every insert, delete, cascade from a
    deleted passage, or change of model), so the vector sidecar's check needs no count of
    the table (``memo.embed.sidecar.open_valid``: an index range over every row, 55-100 ms
    of a cold hybrid search at 1M passages; issue 31.2).  ``INSERT OR IGNORE`` of a row
    already there inserts nothing and fires nothing; memo writes vectors no other way."""
    _run_script(conn, VECTOR_COUNTS)


def restamp_event_dates(conn: sqlite3.Connection) -> int:
    """Rewrite the event dates an older memo stored as typed into the stored form
    (``memo.text.when``), so the date filters compare them rightly (schema v8, both
    backends).  Only rows whose value changes are written; returns their number."""
    changed = 0
    for table, key in (("records", "id"), ("passages", "pk"), ("facts", "pk")):
        rows = [(new, k) for k, old in conn.execute(f"SELECT {key}, event_at FROM {table} WHERE event_at IS NOT NULL")
                if (new := stored_when(old)) != old]
        if rows:
            conn.executemany(f"UPDATE {table} SET event_at = ? WHERE {key} = ?", rows)
            changed += len(rows)
    return changed


def m008_dedup_current(conn: sqlite3.Connection) -> None:
    """The dedup indexes hold the *current* records and facts only (not superseded, not
    forgotten): a text an older version held can be current again (a file reverted, JSONL
    lines shifted, ``memo supersede`` back to an earlier text).  Until v8 a superseded
    version kept its text out of every new record, so the text could never be current again.
    And event dates are rewritten in their stored form (``restamp_event_dates``)."""
    _run_script(conn, f"""
        DROP INDEX records_dedup;
        CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash) WHERE {CURRENT};
        DROP INDEX facts_dedup;
        CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE {CURRENT};
        """)
    # Event dates in one stored form from v8 on (memo.text.when): the ones stored as typed
    # before are rewritten, or the date filters would still compare them wrongly.
    restamp_event_dates(conn)


def m009_vector_reuse(conn: sqlite3.Connection) -> None:
    """What the embedding needs to copy a vector instead of computing it again
    (``memo.embed.reuse``: a one-line edit re-embedded the whole file, and a page unchanged
    between two versions of a library's docs was embedded twice): ``vector_keys``, the
    passages holding a vector of each model input (written with the vectors), and a partial
    index on ``records.superseded_by``, which finds a new version's earlier one (and lets a
    purge clear the pointers to a deleted record without a scan of every record).  Partial:
    only superseded records have one, and ``superseded_by IN (...)`` implies ``IS NOT NULL``."""
    _run_script(conn, VECTOR_KEYS)


VECTOR_KEYS = """
CREATE INDEX IF NOT EXISTS records_superseded ON records(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS vector_keys (
    model_id   TEXT NOT NULL,
    input_key  TEXT NOT NULL,      -- memo.embed.reuse.input_key: sha256 of the model input, 128 bits
    passage_pk INTEGER NOT NULL,   -- a passage with a vector from it (no foreign key: a purge deletes its rows)
    PRIMARY KEY (model_id, input_key, passage_pk)
) WITHOUT ROWID;
"""


VECTOR_COUNTS = """
CREATE TABLE vector_counts (
    model_id TEXT PRIMARY KEY,
    rows     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO vector_counts(model_id, rows) SELECT model_id, count(*) FROM vectors GROUP BY model_id;
CREATE TRIGGER vectors_counted_insert AFTER INSERT ON vectors BEGIN
    INSERT INTO vector_counts(model_id, rows) VALUES (NEW.model_id, 1)
        ON CONFLICT(model_id) DO UPDATE SET rows = rows + 1;
END;
CREATE TRIGGER vectors_counted_delete AFTER DELETE ON vectors BEGIN
    UPDATE vector_counts SET rows = rows - 1 WHERE model_id = OLD.model_id;
END;
CREATE TRIGGER vectors_counted_model AFTER UPDATE OF model_id ON vectors BEGIN
    UPDATE vector_counts SET rows = rows - 1 WHERE model_id = OLD.model_id;
    INSERT INTO vector_counts(model_id, rows) VALUES (NEW.model_id, 1)
        ON CONFLICT(model_id) DO UPDATE SET rows = rows + 1;
END;
"""


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [m001_core, m002_facts, m003_mentions, m004_ext_indexes,
                                                          m005_hash_index, m006_keyword_postings, m007_vector_counts,
                                                          m008_dedup_current, m009_vector_reuse]
LATEST = len(MIGRATIONS)
# The oldest schema a read (search, get, list, stats) takes as it is: the migrations after it
# add only indexes and tables that writes use (m004, m009), so a database from the previous memo searches
# before anything writes to it; the first write migrates it.
READ_FROM = 3
VECTOR_COUNTS_FROM = 7      # ``vector_counts`` and its triggers exist from this version on


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def ensure_schema(conn: sqlite3.Connection) -> int:
    """Apply every pending migration in one IMMEDIATE transaction; return the version.
    Refuses a database that is not memo's or whose tables do not fit its version
    (``check_tables``); a lost version number is restored only when proven
    (``restore_lost_version``)."""
    current = user_version(conn)
    if current == LATEST:
        check_tables(conn, LATEST)
        _ensure_keyword_form(conn)
        _ensure_postings(conn)
        return LATEST
    _refuse_negative(current)
    if current <= LATEST:
        check_tables(conn, current, lost_ok=True)   # refuse a foreign database before any lock
    # reindexing=True: a file marked for `memo reindex` (indexes only) still migrates, or
    # reindex itself could never open it; migrations only add tables and indexes.
    with write_tx(conn, reindexing=True):
        current = user_version(conn)  # re-read under the lock: another process may have won
        if current > LATEST:
            raise SchemaTooNew(f"database schema v{current} is newer than this memo (v{LATEST})")
        _refuse_negative(current)
        if not check_tables(conn, current, lost_ok=True):
            current = restore_lost_version(conn)
        created = current == 0
        for number in range(current, LATEST):
            MIGRATIONS[number](conn)
        if created:     # its caches' epochs its own, not another database's (memo.store.epochs)
            epochs.new_database(conn)
        conn.execute(f"PRAGMA user_version={LATEST}")
        rewrote = 0
        if not keyword_form_current(conn) and not _marked(conn):
            rewrote = reindex_cjk_passages(conn)
            note_keyword_form(conn)
        meta = kw_postings.read_meta(conn)
        if meta is not None and not meta.built and not rewrote and not _marked(conn):
            # In the migration's transaction (one transaction, all or nothing): nothing has
            # written passages_fts in it, so its tables read as committed.
            kw_postings.rebuild(conn)
    _ensure_postings(conn)   # passages_fts rewritten above: built once it is flushed
    return LATEST


def _ensure_postings(conn: sqlite3.Connection) -> None:
    """Build the keyword postings when they do not describe passages_fts (new tables, or
    passages_fts rewritten wholesale), in a transaction of their own: FTS5 has flushed its
    writes by then, so its tables read as they are.  Searches use FTS5 until this is done.
    A marked (damaged) file waits for `memo reindex`."""
    meta = kw_postings.read_meta(conn)
    if meta is None or (meta.built and meta.native) or _marked(conn) or kw_postings.bulk_held(conn):
        return      # a bulk import that holds the lease rebuilds at its end (kw_postings.hold_bulk)
    # Packed outside the write lock, installed in a short write transaction
    # (kw_postings.rebuild_staged): other writers do not wait for the whole rebuild.
    kw_postings.rebuild_staged(conn, if_unbuilt=True)


def _marked(conn: sqlite3.Connection) -> bool:
    """A damaged marker is set: leave the keyword index to `memo reindex`, which rebuilds it
    in memo's form (rebuild_derived) once it may write."""
    path = db_path_of(conn)
    return bool(path) and read_marker(path) is not None


def _ensure_keyword_form(conn: sqlite3.Connection) -> None:
    """Bring ``passages_fts`` to ``memo.store.derived.KEYWORD_FORM`` (one indexed read
    when it already is)."""
    if keyword_form_current(conn) or _marked(conn):
        return
    with write_tx(conn):
        if not keyword_form_current(conn):     # another process may have done it meanwhile
            reindex_cjk_passages(conn)
            note_keyword_form(conn)


def check_schema(conn: sqlite3.Connection) -> None:
    """Read path: verify, never change."""
    current = user_version(conn)
    if current > LATEST:
        raise SchemaTooNew(f"database schema v{current} is newer than this memo (v{LATEST})")
    _refuse_negative(current)
    check_tables(conn, current)
    if current < READ_FROM:
        raise StoreError(f"database schema is v{current}, this memo needs v{LATEST}",
                         hint="run any write command (e.g. `memo stats --migrate` or `memo import`) to migrate")


# --- Schema checks at open (issue 9.7): memo's tables, and nobody else's ------------------

MEMO_TABLES = ("records", "passages")   # in every memo schema since v1
_LOST_HINT = ("`memo doctor` checks the database; a write command (e.g. `memo stats --migrate`) restores the "
              "version number when the tables match one memo schema exactly and quick_check is ok")


def user_tables(conn: sqlite3.Connection) -> set[str]:
    """Tables and views, without SQLite's own (``sqlite_*``)."""
    return {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}


def _refuse_negative(version: int) -> None:
    if version < 0:   # memo never writes one: a damaged header
        raise StoreCorrupt(f"database schema version {version} is negative: the header is damaged",
                           hint=RESTORE_HINT)


def check_tables(conn: sqlite3.Connection, version: int, *, lost_ok: bool = False) -> bool:
    """Do the tables present fit schema ``version``?  True when they do (or the file is
    new: version 0, no tables).  A database with other programs' tables and none of memo's
    is refused (memo never adds its tables to someone else's database).  Version 0 with
    memo's tables means the version number was lost (a damaged header, another tool):
    returns False when ``lost_ok`` (the write path then tries ``restore_lost_version``),
    else StoreCorrupt."""
    tables = user_tables(conn)
    present = [t for t in MEMO_TABLES if t in tables]
    if version == 0 and not tables:
        return True
    if not present:
        shown = ", ".join(sorted(tables)[:5]) + (" ..." if len(tables) > 5 else "")
        raise StoreError(f"{db_path_of(conn) or 'the database'} is not a memo database "
                         f"(schema v{version}, tables: {shown or 'none'}); memo will not add its tables to it",
                         hint="pass --db (or MEMO_DB) with memo's database file, or a new path to start one")
    if version == 0:
        if lost_ok:
            return False
        raise StoreCorrupt(f"{db_path_of(conn) or 'the database'} holds memo's tables but its schema version is "
                           "0: the version number was lost", hint=_LOST_HINT)
    missing = [t for t in MEMO_TABLES if t not in tables]
    if missing:
        raise StoreCorrupt(f"schema v{version} but memo's table(s) {', '.join(missing)} are missing",
                           hint=RESTORE_HINT)
    return True


def _norm_sql(sql: str | None) -> str:
    return " ".join(re.sub(r"--[^\n]*", " ", sql or "").split())


def schema_signature(conn: sqlite3.Connection) -> frozenset[tuple[str, str, str, str]]:
    """Every schema object (type, name, table, SQL without comments and extra blanks),
    without SQLite's own and without FTS5 shadow tables (SQLite writes those itself, and
    their SQL differs between SQLite versions)."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema "
                        "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()
    vtabs = [r[1] for r in rows if (r[3] or "").upper().startswith("CREATE VIRTUAL TABLE")]
    return frozenset((r[0], r[1], r[2], _norm_sql(r[3])) for r in rows
                     if not any(r[1].startswith(v + "_") and r[0] == "table" for v in vtabs))


_SIGNATURES: dict[tuple[int, int], frozenset[tuple[str, str, str, str]]] = {}


def expected_signature(version: int) -> frozenset[tuple[str, str, str, str]]:
    """The schema a database has right after migration ``version`` (built in memory)."""
    key = (id(MIGRATIONS), version)
    if key not in _SIGNATURES:
        mem = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for number in range(version):
                MIGRATIONS[number](mem)
            _SIGNATURES[key] = schema_signature(mem)
        finally:
            mem.close()
    return _SIGNATURES[key]


def proven_version(conn: sqlite3.Connection) -> int | None:
    """The one schema version whose objects match the database's exactly, or None."""
    sig = schema_signature(conn)
    matches = [v for v in range(1, LATEST + 1) if expected_signature(v) == sig]
    return matches[0] if len(matches) == 1 else None


def restore_lost_version(conn: sqlite3.Connection) -> int:
    """Write path, inside the migration transaction: user_version is 0 but memo's tables
    are there.  Restore the number only when it is proven, i.e. the schema objects match
    exactly one memo version and ``quick_check`` is ok (a lost version usually means a
    damaged header: the rest of the file is checked before anything is written).
    Otherwise StoreCorrupt, and nothing is written."""
    version = proven_version(conn)
    path = db_path_of(conn)
    if version is None:
        raise StoreCorrupt(f"{path or 'the database'} holds memo's tables but its schema version is 0, and its "
                           "tables match no memo schema exactly: the version cannot be proven",
                           hint=RESTORE_HINT)
    check = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    if check != ["ok"]:
        if path:
            mark_damaged(path, f"quick_check: {'; '.join(check)}")
        raise StoreCorrupt(f"{path or 'the database'} lost its schema version and quick_check finds damage: "
                           f"{'; '.join(check)[:300]}", hint=RESTORE_HINT)
    conn.execute(f"PRAGMA user_version={version}")
    import logging  # a rare repair's warning: most processes never import logging

    logging.getLogger(__name__).warning(
        "%s: schema version was 0 with memo's tables; restored to v%d (tables match it exactly, quick_check ok)",
        path or "database", version)
    return version
