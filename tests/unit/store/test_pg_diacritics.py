"""Diacritics and case in PostgreSQL's keyword indexes (memo/store/postgres/keyword_form.py,
M005): folded as SQLite's unicode61 folds them, on the passages' and the facts' index, so
`café`, `cafe` and `CAFÉ` find the same notes on both backends; a database an older memo
wrote (schema v4: tsvectors with their accents) is re-indexed at the first write-mode open.
Each test compares with SQLite, the reference (FINDINGS.md of the PostgreSQL probe, defect 1:
before the fix PostgreSQL found no accented word at all, even typed exactly)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from memo import search
from memo.ops import facts as fops
from memo.retrieve import SearchRequest
from memo.retrieve import search as run_search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.keyword_form import keyword_index_mismatches
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from memo.types import Scope
from tests.pg_server import drop_database, new_database

pytestmark = pytest.mark.postgresql   # the session's server (tests/pg_server.py)

ACCENTED = "Zürich office meeting about the café menu, naïve résumé"
DECOMPOSED = unicodedata.normalize("NFD", "Crème brûlée recipe from the Sørensen family")
PLAIN = "The cafe on the corner is naive about the resume"
ENGLISH = "We back up the database every night (net/http, v2.31.0)."
QUERIES = ("café", "cafe", "CAFÉ", "Zürich", "zurich", "ZÜRICH", "naïve", "résumé",
           unicodedata.normalize("NFD", "café"), "creme brulee", "Crème", "brûlée", "sørensen")
IN_STEP = {"kw_columns": 0, "tsv": 0, "postings": 0}


@pytest.fixture
def url():
    u = new_database()
    yield u
    drop_database(u)


def _add(db: str, *texts: str) -> list[str]:
    """Stored without embedding (the keyword index is what is under test)."""
    conn = open_db(db)
    try:
        ids = []
        for text in texts:
            with write_tx(conn):
                ids.append(insert_record(conn, RecordDraft(body=text), (PassageDraft(text=text),)))
        return ids
    finally:
        conn.close()


def _keyword(db: str, query: str) -> set[str]:
    return {r.text for r in search(query, db=db, mode="keyword", services={}).results}


def _fact_arm(db: str, query: str) -> int:
    conn = open_db(db, write=False)
    try:
        resp = run_search(conn, SearchRequest(query, scope=Scope(), response_format="explain",
                                              now="2030-01-01T00:00:00Z"), "rrf", {})
    finally:
        conn.close()
    return next(a for a in resp.trace.arms if a.name == "fact").candidates


def _add_fact(db: str, text: str, evidence: str) -> None:
    conn = open_db(db)
    try:
        fops.add_fact(conn, FactDraft(text=text, evidence=(evidence,)), embed=False)
    finally:
        conn.close()


def test_accented_words_are_found_as_on_sqlite(url: str, tmp_path: Path) -> None:
    lite = str(tmp_path / "memo.db")
    for db in (lite, url):
        _add(db, ACCENTED, DECOMPOSED, PLAIN, ENGLISH)
    for query in QUERIES:
        want = _keyword(lite, query)
        assert want, query                       # the reference finds something for each
        assert _keyword(url, query) == want, query
    assert ACCENTED in _keyword(url, "café") and PLAIN in _keyword(url, "café")
    conn = open_db(url, write=False)
    assert keyword_index_mismatches(conn) == IN_STEP
    conn.close()


def test_the_fact_keyword_arm_folds_as_on_sqlite(url: str, tmp_path: Path) -> None:
    lite = str(tmp_path / "memo.db")
    for db in (lite, url):
        (rid,) = _add(db, "budget meeting notes for quarter three")
        _add_fact(db, "Müller approved the café budget", rid)
    for query in ("Müller café", "muller cafe", "MÜLLER"):
        assert _fact_arm(lite, query) == 1, query
        assert _fact_arm(url, query) == 1, query


def test_the_fold_is_unicode61s(url: str) -> None:
    """One definition: every character the SQLite tokenizer folds, PostgreSQL's index folds
    to the same (a word of each, stored and searched by its folded form)."""
    from memo.store.postgres.keyword_form import fold_table

    table = fold_table()
    assert table["É"] == "e" and table["ü"] == "u" and table["\u0301"] == ""
    letters = [c for c, f in table.items() if f and f.isalpha() and c.isalpha()]
    conn = open_db(url)
    got = conn.execute_native("SELECT w, array_to_string(tsvector_to_array(to_tsvector('simple', memo_fold(w))), ' ')"
                              " FROM unnest(%s::text[]) AS w", ([f"x{c}y" for c in letters],)).fetchall()
    conn.close()
    assert [g for _, g in got] == [f"x{table[c]}y" for c in letters]


def _as_v4(db: str) -> None:
    """Turn the database back into what memo wrote at schema v4: M003's passage trigger,
    M001's fact trigger, no memo_fold, every tsv (and its postings) built with the accents."""
    conn = open_db(db)
    conn.execute_native("""
        CREATE OR REPLACE FUNCTION memo_passages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.tsv := setweight(to_tsvector('english', memo_words(coalesce(NEW.kw_text, NEW.text))), 'A')
                      || setweight(to_tsvector('english', memo_words(coalesce(NEW.kw_section, NEW.section))), 'B');
            NEW.dl := memo_token_count(NEW.tsv);
            RETURN NEW;
        END $$;
        CREATE OR REPLACE FUNCTION memo_facts_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.tsv := to_tsvector('english', memo_words(NEW.text));
            NEW.dl := memo_token_count(NEW.tsv);
            RETURN NEW;
        END $$;
        DROP FUNCTION memo_passage_tsv(text, text);
        DROP FUNCTION memo_fact_tsv(text);
        DROP FUNCTION memo_fold(text);
        UPDATE passages SET text = text;
        UPDATE facts SET text = text;
        UPDATE memo_meta SET value = '4' WHERE key = 'schema_version';
        UPDATE memo_meta SET value = (value::bigint + 1)::text WHERE key = 'generation';
    """, None)
    conn.commit()
    conn.close()


def _tsv_of(db: str, text: str) -> str:
    conn = open_db(db, write=False)
    try:
        return conn.execute_native("SELECT tsv::text FROM passages WHERE text = %s", (text,)).fetchone()[0]
    finally:
        conn.close()


def test_a_v4_database_is_reindexed_at_the_first_write(url: str) -> None:
    (rid, *_) = _add(url, ACCENTED, PLAIN, ENGLISH)
    _add_fact(url, "Müller approved the café budget", rid)
    _as_v4(url)
    english_v4 = _tsv_of(url, ENGLISH)
    assert "'zürich'" in _tsv_of(url, ACCENTED)
    assert _keyword(url, "Zürich") == set()             # v4 (reads do not migrate): as before
    assert _fact_arm(url, "Müller") == 0
    open_db(url).close()                                 # the write path migrates to v5
    conn = open_db(url, write=False)
    assert pg_schema.schema_version(conn) == pg_schema.LATEST >= 5
    assert keyword_index_mismatches(conn) == IN_STEP
    conn.close()
    assert _keyword(url, "Zürich") == {ACCENTED}
    assert _keyword(url, "café") == _keyword(url, "cafe") == {ACCENTED, PLAIN}
    assert _fact_arm(url, "Müller") == 1
    assert _tsv_of(url, ENGLISH) == english_v4          # a row without accents: untouched


def test_a_word_counted_for_routing_folds_as_on_sqlite(url: str, tmp_path: Path) -> None:
    """An entity's key keeps its accents (``memo.text.entities.entity_key``); the corpus's use
    of the word (``memo.retrieve.route.scoped_word_df``) counts it folded, as FTS5 does."""
    from memo.retrieve.route import scoped_word_df

    lite = str(tmp_path / "memo.db")
    counts = {}
    for db in (lite, url):
        _add(db, ACCENTED, "the Zurich team", PLAIN)
        conn = open_db(db, write=False)
        counts[db] = [scoped_word_df(conn, word, "", ()) for word in ("zürich", "zurich", "naïve")]
        conn.close()
    assert counts[url] == counts[lite] == [2, 2, 2]
