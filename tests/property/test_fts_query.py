"""The FTS query compiler turns ANY text into a safe MATCH expression (reliability.md R5):
no exception except the typed QuerySyntaxError, through the compiler, through a real
FTS5 query, and through the whole search pipeline."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.errors import QuerySyntaxError, ValidationError
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record, validate_draft
from memo.stored import PassageDraft, RecordDraft
from memo.text import limits
from memo.text.fts_query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    STOP_WORDS,
    exact_match,
    keyword_match,
    query_words,
)
from tests.fast_examples import examples

OPERATORS = ['"', "'", "AND", "OR", "NOT", "NEAR", "NEAR(", "*", ":", "^", "-", "(", ")", "{", "}", "+",
             "text:", "section:", "\x00", "\\", "''", '""', "col:x*", "NEAR(a b, 3)", "^start", "a-b", "net/http"]
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
QUERIES = st.one_of(
    ANY_TEXT,
    st.lists(st.one_of(ANY_TEXT, st.sampled_from(OPERATORS)), max_size=12).map(" ".join),
    st.lists(st.sampled_from(OPERATORS), max_size=20).map("".join),
)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path_factory.mktemp("fts") / "fts.db")
    with write_tx(c):
        for i, text in enumerate(["the quick brown fox", "net/http ERR_CONN_RESET", "naïve Straße 日本語",
                                  "NEAR AND OR NOT operators as words", "x² and 2026.4.10"]):
            insert_record(c, RecordDraft(body=text, id=f"r{i}"), (PassageDraft(text=text, section="s"),))
    yield c
    c.close()


def _compile(fn, query):
    try:
        return fn(query)
    except QuerySyntaxError:
        return None


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES)
def test_any_text_compiles_and_runs_in_fts5(conn, query):
    kw = _compile(keyword_match, query)
    if kw is not None:
        conn.execute("SELECT rowid FROM passages_fts WHERE passages_fts MATCH ? LIMIT 5", (kw,)).fetchall()
    ex = _compile(exact_match, query)
    if ex is not None:
        conn.execute("SELECT rowid FROM exact_fts WHERE exact_fts MATCH ? LIMIT 5", (ex,)).fetchall()


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES, st.sampled_from(["auto", "keyword", "exact"]))
def test_any_text_through_the_whole_pipeline(conn, query, mode):
    try:
        search(conn, SearchRequest(query, mode=mode), "rrf", {})
    except QuerySyntaxError:
        pass


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES.map(lambda s: (s or "x") * (12_000 // max(1, len(s or "x")) + 1)))
def test_ten_kilobyte_queries(conn, query):
    try:
        search(conn, SearchRequest(query, mode="auto"), "rrf", {})
    except QuerySyntaxError:
        pass


def test_words_are_quoted_ored_and_stop_words_dropped():
    assert keyword_match('what is "multi-agent" NEAR(x) col:y*') == '"multi" OR "agent" OR "near" OR "x" OR "col" OR "y"'
    assert keyword_match("the and of") == '"the" OR "and" OR "of"'          # only stop words: keep them
    assert query_words("Fox fox FOX") == ["fox"]
    assert {"the", "is", "what"} <= STOP_WORDS
    with pytest.raises(QuerySyntaxError):
        keyword_match("?!* :^ -")
    with pytest.raises(QuerySyntaxError):
        exact_match("   ")


def test_exact_terms_are_encoded_identifiers():
    assert exact_match("net/http ERR_CONN_RESET") == '"x6e65742f68747470" OR "x6572725f636f6e6e5f7265736574"'


def test_length_caps():
    long = "alpha " * 5000
    assert len(long) > MAX_QUERY_CHARS
    assert keyword_match(long) == '"alpha"'
    many = " ".join(f"w{i}" for i in range(200))
    assert len(query_words(many)) == MAX_TERMS
    # one definition of the cap (memo.text.limits), cut at a word boundary
    assert MAX_QUERY_CHARS == limits.MAX_QUERY_CHARS
    cut = limits.clip_query("ab " * 4000 + "tail")
    assert len(cut) <= MAX_QUERY_CHARS and cut.endswith("ab")
    assert limits.clip_query("short") == "short"


def test_an_add_over_the_body_cap_is_refused_with_an_import_hint():
    validate_draft(RecordDraft(body="x" * limits.MAX_BODY_CHARS))
    with pytest.raises(ValidationError) as err:
        validate_draft(RecordDraft(body="x" * (limits.MAX_BODY_CHARS + 1)))
    assert "cap" in str(err.value) and "memo import" in err.value.hint


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES, st.sampled_from(["auto", "keyword", "exact"]))
def test_fuzz_ten_thousand_queries_through_search(conn, query, mode):
    """reliability.md R5: 10k examples per CI run (slow)."""
    try:
        search(conn, SearchRequest(query, mode=mode), "rrf", {})
    except QuerySyntaxError:
        pass
