"""CJK text in PostgreSQL's keyword index (memo/store/postgres/keyword_form.py, M003): a
database an older memo wrote (schema v2: tsv built from the text as stored) is re-derived
at the first write-mode open; English rows index exactly as M001's trigger indexed them;
the mismatch check finds kw columns, tsv and postings out of step."""

from __future__ import annotations

import pytest

from memo import search
from memo.ops import add_record
from memo.store.db import open_db
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.keyword_form import keyword_index_mismatches
from memo.stored import RecordDraft
from tests.pg_server import drop_database, new_database

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)

ZH = "我们决定使用数据库备份策略每天凌晨执行"
EN = "We back up the database every night (net/http, v2.31.0)."
IN_STEP = {"kw_columns": 0, "tsv": 0, "postings": 0}
# M001's trigger body: what a v2 database's tsv is.
_OLD_TSV = ("setweight(to_tsvector('english', memo_words(text)), 'A')"
            " || setweight(to_tsvector('english', memo_words(section)), 'B')")


@pytest.fixture
def url():
    u = new_database()
    yield u
    drop_database(u)


def _keyword(db: str, query: str) -> list[str]:
    return [r.text for r in search(query, db=db, mode="keyword").results]


def _as_v2(db: str) -> None:
    """Turn the database back into what memo wrote at schema v2: no kw columns, M001's
    triggers, every tsv (and its postings) built from the text as stored."""
    conn = open_db(db)
    conn.execute_native("""
        ALTER TABLE passages DROP COLUMN kw_text CASCADE, DROP COLUMN kw_section CASCADE;
        CREATE OR REPLACE FUNCTION memo_passages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.tsv := setweight(to_tsvector('english', memo_words(NEW.text)), 'A')
                      || setweight(to_tsvector('english', memo_words(NEW.section)), 'B');
            NEW.dl := memo_token_count(NEW.tsv);
            RETURN NEW;
        END $$;
        DROP TRIGGER IF EXISTS passages_tsv ON passages;
        DROP TRIGGER IF EXISTS passages_postings ON passages;
        CREATE TRIGGER passages_tsv BEFORE INSERT OR UPDATE OF text, section ON passages
            FOR EACH ROW EXECUTE FUNCTION memo_passages_tsv();
        CREATE TRIGGER passages_postings AFTER INSERT OR UPDATE OF text, section ON passages
            FOR EACH ROW EXECUTE FUNCTION memo_postings('passage_terms');
        UPDATE passages SET text = text;
        UPDATE memo_meta SET value = '2' WHERE key = 'schema_version';
        UPDATE memo_meta SET value = (value::bigint + 1)::text WHERE key = 'generation';
    """, None)
    conn.commit()
    conn.close()


def test_an_older_database_is_rederived_at_the_first_write(url: str) -> None:
    conn = open_db(url)
    for text in (ZH, EN):
        add_record(conn, RecordDraft(body=text))
    conn.close()
    _as_v2(url)
    assert _keyword(url, "备份") == []                  # v2: the run is one word; reads do not migrate
    open_db(url).close()                                # the write path migrates to v3
    conn = open_db(url, write=False)
    assert pg_schema.schema_version(conn) == pg_schema.LATEST >= 3     # migrated to the newest
    assert keyword_index_mismatches(conn) == IN_STEP
    conn.close()
    assert _keyword(url, "备份") == [ZH]
    assert _keyword(url, "数据库的备份策略") == [ZH]
    assert _keyword(url, "database backup") == [EN]


def test_english_indexes_exactly_as_before_and_cjk_rows_hold_the_index_form(url: str) -> None:
    conn = open_db(url)
    add_record(conn, RecordDraft(body=EN))
    add_record(conn, RecordDraft(body="## 备份\n\nnightly backup of 数据库"))
    rows = conn.execute_native(
        f"SELECT text, kw_text, kw_section, tsv = ({_OLD_TSV}) FROM passages ORDER BY pk").fetchall()
    conn.close()
    (en_text, en_kw, en_kws, en_same), (_, kw, _, cjk_same) = rows
    assert en_text == EN and en_kw is None and en_kws is None and en_same   # M001's tsv, byte for byte
    assert kw is not None and "数据 据库" in kw and not cjk_same


def test_the_mismatch_check_finds_each_kind_of_drift(url: str) -> None:
    conn = open_db(url)
    add_record(conn, RecordDraft(body=ZH))
    add_record(conn, RecordDraft(body=EN))
    assert keyword_index_mismatches(conn) == IN_STEP
    # (each statement commits on its own: outside write_tx the session autocommits)
    # postings lost, tsv intact
    conn.execute_native("DELETE FROM passage_terms WHERE lex = '备份'")
    assert keyword_index_mismatches(conn) == {**IN_STEP, "postings": 1}
    # kw column cleared by a write that bypassed memo: the trigger rebuilt tsv from the text
    conn.execute_native("UPDATE passages SET kw_text = NULL WHERE text = %s", (ZH,))
    assert keyword_index_mismatches(conn)["kw_columns"] == 1
    conn.close()


def test_doctor_on_postgresql_checks_the_keyword_index_and_reindex_repairs_it(url: str) -> None:
    from memo.ops.doctor import doctor
    from memo.ops.maintenance import reindex

    conn = open_db(url)
    add_record(conn, RecordDraft(body=ZH))
    conn.close()
    report = doctor(url)
    assert report.status == "ok" and report.schema_version == pg_schema.LATEST
    assert any(c.name == "fts" and c.ok for c in report.checks)
    conn = open_db(url)
    conn.execute_native("UPDATE passages SET kw_text = NULL")      # the index of the text as stored
    conn.close()
    report = doctor(url)
    assert report.status == "repair" and report.exit_code == 9
    assert any(f.check == "fts" and "memo reindex" in f.action for f in report.findings)
    conn = open_db(url)
    reindex(conn)
    conn.close()
    assert doctor(url).status == "ok"
    assert _keyword(url, "备份") == [ZH]


def test_m004_keeps_one_current_copy_per_text_and_restamps_event_dates(url: str) -> None:
    """PostgreSQL's v4 (SQLite's v8): the dedup indexes hold current records only, and
    event dates an older memo stored as typed are rewritten in the stored form."""
    from memo import ops

    conn = open_db(url)
    a = add_record(conn, RecordDraft(body="the port is 8080", event_at="2026-03-10")).record_id
    b = ops.supersede(conn, a, "the port is 9090").new_id
    conn.execute_native("""
        DROP INDEX records_dedup; DROP INDEX facts_dedup;
        CREATE UNIQUE INDEX records_dedup ON records(namespace, content_hash) WHERE forgotten_at IS NULL;
        CREATE UNIQUE INDEX facts_dedup ON facts(namespace, content_hash) WHERE forgotten_at IS NULL;
        UPDATE records SET event_at = '2026-03-10T23:30:00-05:00';
        UPDATE memo_meta SET value = '3' WHERE key = 'schema_version';
    """, None)
    conn.commit()
    conn.close()
    conn = open_db(url)                                  # the write path migrates to v4
    assert pg_schema.schema_version(conn) == pg_schema.LATEST >= 4
    assert conn.execute("SELECT event_at FROM records WHERE id = ?", (a,)).fetchone()[0] == "2026-03-11T04:30:00.000000Z"
    c = ops.supersede(conn, b, "the port is 8080").new_id   # refused under v3's index
    assert ops.get(conn, c).body == "the port is 8080"
    conn.close()
