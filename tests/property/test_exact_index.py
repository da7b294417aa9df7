"""Any token present in a passage is found in the exact index by that literal token
(reliability.md R6; tobi/qmd #563: dotted versions never matched after sanitising)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.text.identifiers import encode_token, identifier_tokens
from tests.fast_examples import examples

# Identifier-shaped tokens (net/http, ERR_CONN_RESET, 2026.4.10, multi-agent, path/to/file.py, ...)
IDENT = st.from_regex(r"\A[A-Za-z0-9_]{1,8}(?:[\-./:@#+][A-Za-z0-9_]{1,8}){0,3}\Z")
# Any text except lone surrogates (SQLite stores UTF-8; Python cannot encode those).
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)
PIECES = st.lists(st.one_of(IDENT, ANY_TEXT, st.sampled_from(["naïve", "Straße", "日本語", "ǅ", "İstanbul", "x²"])),
                  min_size=1, max_size=8)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path_factory.mktemp("prop") / "exact.db")
    yield c
    c.close()


def _find(conn: sqlite3.Connection, token: str) -> set[int]:
    rows = conn.execute("SELECT rowid FROM exact_fts WHERE terms MATCH '\"' || ? || '\"'",
                        (encode_token(token),)).fetchall()
    return {r[0] for r in rows}


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(section=st.one_of(st.just(""), IDENT, ANY_TEXT), pieces=PIECES, sep=st.sampled_from([" ", "\n", ", ", ". "]))
def test_every_token_is_found_by_its_literal_text(conn, section, pieces, sep):
    text = sep.join(pieces)
    with write_tx(conn):
        rid = insert_record(conn, RecordDraft(body=f"{text} {uuid.uuid4().hex}"),
                            (PassageDraft(text=text, section=section),))
    pk = conn.execute("SELECT pk FROM passages WHERE record_id = ?", (rid,)).fetchone()[0]
    for token in identifier_tokens(section + "\n" + text):
        assert pk in _find(conn, token), token
    # ...and the literal as a user types it (any case) finds it too.
    for piece in pieces:
        for token in identifier_tokens(piece.upper()):
            if token in identifier_tokens(section + "\n" + text):
                assert pk in _find(conn, token)


@pytest.mark.parametrize("token", ["net/http", "err_conn_reset", "2026.4.10", "multi-agent", "path/to/file.py",
                                   "abc-123", "v2.21", "user@example.com"])
def test_known_identifier_shapes(conn, token):
    with write_tx(conn):
        rid = insert_record(conn, RecordDraft(body=f"see {token} now {uuid.uuid4().hex}"),
                            (PassageDraft(text=f"see {token.upper()} now."),))
    pk = conn.execute("SELECT pk FROM passages WHERE record_id = ?", (rid,)).fetchone()[0]
    assert pk in _find(conn, token)
