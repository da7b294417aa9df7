"""CJK text in the keyword index (issue 32.3): memo.text.cjk's two forms, the index they
build (real FTS5, and PostgreSQL's tsv and postings: the backend_db tests), the migration of
an older index, and the token count.  PostgreSQL's own upgrade path: tests/unit/store/test_pg_cjk.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memo import search
from memo.ops import add_record
from memo.ops.records import forget, purge
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.derived import KEYWORD_FORM_KEY, rebuild_derived
from memo.store.dialect import is_db_url
from memo.store.postgres.keyword_form import keyword_index_mismatches
from memo.stored import RecordDraft
from memo.text.cjk import CJK_CHARS, has_cjk, index_form, query_form
from memo.text.fts_query import keyword_match, query_words
from memo.text.tokens import count_tokens

ZH = "我们决定使用数据库备份策略每天凌晨执行"
JA = "毎週月曜日に会議を開きます。議題は新しいデータベースの移行計画です。"
KO = "데이터베이스를 매일 백업합니다"


def test_forms_of_a_run() -> None:
    assert query_form("数据库备份") == " 数据 据库 库备 备份 "
    assert index_form("数据库").split() == ["数", "据", "库", "数据", "据库"]
    assert query_form("猫") == " 猫 " and index_form("猫") == " 猫 "
    # A Latin word glued to CJK text becomes a word of its own.
    assert index_form("使用SQLite数据库").split() == ["使", "用", "使用", "SQLite", "数", "据", "库", "数据", "据库"]
    assert query_words("数据库 backup") == ["数据", "据库", "backup"]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=CJK_CHARS), max_size=60))
def test_text_without_cjk_is_the_same_object(text: str) -> None:
    if not has_cjk(text):
        assert index_form(text) is text and query_form(text) is text


@given(st.text(alphabet=st.sampled_from("数据库备份策略会議議題データベース백업ab "), min_size=1, max_size=30),
       st.integers(0, 29), st.integers(2, 6))
def test_every_query_gram_of_a_piece_is_in_the_index_form(text: str, start: int, size: int) -> None:
    piece = text[start:start + size].strip()
    if not piece or not has_cjk(piece):
        return
    indexed = set(index_form(text).split())
    # a run of the piece cut out of a longer run: its bigrams (or its one character) are indexed
    for run in query_form(piece).split():
        if has_cjk(run):
            assert run in indexed, (text, piece, run)


def _db_at(db: Path | str) -> Path | str:
    conn = open_db(db, write=True)
    for text in (ZH, JA, KO, "We back up the database every night."):
        add_record(conn, RecordDraft(body=text))
    conn.close()
    return db


def _db(tmp_path: Path) -> Path:
    return _db_at(tmp_path / "memo.db")


def _keyword(db: Path, query: str) -> list[str]:
    res = search(query, db=db, mode="keyword")
    return [r.text for r in res.results]


def test_keyword_search_finds_words_inside_cjk_runs(backend_db: str) -> None:
    """Both backends: SQLite's passages_fts and PostgreSQL's tsv hold index_form."""
    db = _db_at(backend_db)
    assert _keyword(db, "备份") == [ZH]
    assert _keyword(db, "数据库的备份策略") == [ZH]
    assert _keyword(db, "会議") == [JA]
    assert _keyword(db, "データベース移行") == [JA]
    assert _keyword(db, "백업") == [KO]
    assert _keyword(db, "database backup") == ["We back up the database every night."]


def test_an_older_index_is_rederived_at_the_next_write_open(tmp_path: Path) -> None:
    db = _db(tmp_path)
    # What memo wrote before: the CJK passage indexed as stored, no keyword_form mark.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM memo_meta WHERE key = ?", (KEYWORD_FORM_KEY,))
    conn.close()
    assert _keyword(db, "备份") == []                      # read-only opens never write
    open_db(db, write=True).close()
    assert _keyword(db, "备份") == [ZH]
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
    conn.close()


def test_rebuild_and_forget_keep_the_index_consistent(backend_db: str) -> None:
    db = _db_at(backend_db)
    conn = open_db(db, write=True)
    with write_tx(conn):
        rebuild_derived(conn)
    conn.close()
    assert _keyword(db, "备份") == [ZH]
    rid = search("备份", db=db, mode="keyword").results[0].record_id
    conn = open_db(db, write=True)
    forget(conn, [rid])
    purge(conn, confirm=True)
    if is_db_url(backend_db):
        # tsv, dl and the postings (passage_terms) in step with index_form of the rows left
        assert keyword_index_mismatches(conn) == {"kw_columns": 0, "tsv": 0, "postings": 0}
        assert conn.execute_native("SELECT count(*) FROM passage_terms WHERE lex = '备份'").fetchone()[0] == 0
    conn.close()
    assert _keyword(db, "备份") == []
    if is_db_url(backend_db):
        return
    conn = sqlite3.connect(db)
    # External content: a 'delete' that repeated other values than those indexed would leave
    # orphan postings that integrity-check against the table reports.
    rows = conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH '\"备份\"'").fetchone()[0]
    assert rows == 0
    conn.close()


def test_token_count_counts_cjk_characters() -> None:
    assert count_tokens(ZH) == 26                   # 19 characters x 4/3
    assert count_tokens("hello world, this is it.") == 10     # unchanged for English
    assert keyword_match("备份") == '"备份"'


def test_doctor_checks_the_keyword_index_against_index_form(tmp_path: Path) -> None:
    """FTS5's own content check would call every CJK row wrong (the index holds index_form,
    not the stored text); doctor compares with index_form instead, and still catches an
    index that differs from it."""
    from memo.ops.doctor import doctor

    db = _db(tmp_path)
    assert doctor(db).status == "ok"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")   # the text as stored
    conn.close()
    report = doctor(db)
    assert report.status == "repair" and any("passages_fts" in f.problem for f in report.findings)


def test_a_hangul_word_typed_decomposed_finds_the_composed_text(tmp_path: Path) -> None:
    """NFD Hangul is jamo; the query's normal forms are taken before its bigrams, so its
    NFC form is the syllable the index holds (a property test of test_folding found
    '한' stored NFKC, queried NFD, missed)."""
    import unicodedata

    db = tmp_path / "memo.db"
    conn = open_db(db, write=True)
    add_record(conn, RecordDraft(body="alpha 한 omega"))
    add_record(conn, RecordDraft(body=KO))
    conn.close()
    assert "한" in query_words(unicodedata.normalize("NFD", "한"))
    assert _keyword(db, unicodedata.normalize("NFD", "한")) == ["alpha 한 omega"]
    assert _keyword(db, unicodedata.normalize("NFD", "백업")) == [KO]
