"""A stop word inside an identifier the query writes is a name, not filler.

``once`` of ``emitter.once``, ``from`` of ``Buffer.from``, ``not`` of
``ERR_MODULE_NOT_FOUND``, ``no`` of ``--no-verify``: dropping them left the keyword arm
with ``emitter`` alone, which ranks every emitter passage alike (found by a probe of
``memo search --mode keyword`` over the Node.js docs)."""

from __future__ import annotations

import pytest

from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.text.fts_query import query_words


@pytest.mark.parametrize(("query", "kept"), [
    ("emitter.once", ["emitter", "once"]),
    ("how do I use Buffer.from()", ["use", "buffer", "from"]),
    ("process.on('exit') handler", ["process", "on", "exit", "handler"]),
    ("Error [ERR_MODULE_NOT_FOUND]", ["error", "err", "module", "not", "found"]),
    ("git commit --no-verify", ["git", "commit", "no", "verify"]),
])
def test_stop_words_of_an_identifier_are_kept(query, kept):
    assert query_words(query) == kept


@pytest.mark.parametrize(("query", "kept"), [
    ("what is the event loop", ["event", "loop"]),
    ("out-of-date files and/or I/O, i.e. slow", ["date", "files", "o", "e", "slow"]),
    ("the and of", ["the", "and", "of"]),
])
def test_prose_still_drops_its_stop_words(query, kept):
    assert query_words(query) == kept


def test_keyword_mode_finds_the_method_the_query_names(tmp_path):
    conn = open_db(tmp_path / "m.db")
    texts = {"on": "emitter.on(eventName, listener) adds the listener to the emitter.",
             "once": "emitter.once(eventName, listener) adds a one-time listener to the emitter.",
             "off": "emitter.off(eventName, listener) is an alias of emitter.removeListener() on the emitter.",
             "emit": "emitter.emit(eventName) calls each listener of the emitter in order."}
    with write_tx(conn):
        for name, text in texts.items():
            insert_record(conn, RecordDraft(body=text, id=name), (PassageDraft(text=text, section=name),))
    res = search(conn, SearchRequest(query="emitter.once", mode="keyword"))
    assert [r.record_id for r in res.results][0] == "once"


@pytest.mark.parametrize(("query", "kept"), [
    ("what's the wifi password", ["wifi", "password"]),
    ("Tom's shoe size", ["tom", "shoe", "size"]),
    ("it doesn't start and we'll retry", ["start", "retry"]),
])
def test_what_a_contraction_leaves_is_not_a_word(query, kept):
    """``s`` of ``what's`` matched every possessive in the knowledge base, so the question
    found ten passages where the same question written out ("what is") found none."""
    assert query_words(query) == kept


def test_a_contraction_only_query_still_searches():
    assert query_words("what's") == ["what", "s"]
