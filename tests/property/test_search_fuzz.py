"""Library search under arbitrary input (issue 9 point 4): whatever the query text
(surrogates included), scope fields, dates (year 1, year 9999, offsets that overflow in
UTC), trust, limit, max_tokens, mode and format, ``memo.search_api.search`` and
``memo.retrieve.search`` either answer or raise a ``MemoError`` subclass, and the answer
serialises to JSON (``memo.serialize``).  The semantic arm is the real MiniLM model when
it is installed, a fake otherwise."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memo.embed import service
from memo.embed.registry import load_registry
from memo.errors import MemoError
from memo.retrieve import SearchRequest, SearchResponse
from memo.retrieve import search as retrieve_search
from memo.retrieve.types import FORMATS, MODES
from memo.search_api import search as api_search
from memo.serialize import to_jsonable
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.text.limits import MAX_QUERY_CHARS
from memo.types import KINDS, Scope
from tests.fast_examples import examples

SURROGATES = [chr(c) for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D, 0xDE00)]
SPECIAL = ["\x00", "\ufeff", "\u200d", "\u0301", "ß", "ﬁ", "😀", "🏽", '"', "*", "NEAR(", "-", ":",
           "net/http", "ERR_CONN_RESET", "fox", "Straße", " ", "\n"]
ANY_TEXT = st.text(max_size=40)                                     # may hold surrogates
TEXT = st.one_of(ANY_TEXT,
                 st.text(alphabet=st.characters(categories=("Cs", "L", "N", "So", "Zs")), max_size=30),
                 st.lists(st.sampled_from(SURROGATES + SPECIAL), max_size=12).map("".join))
WORDS = st.lists(st.sampled_from(["fox", "dog", "pool", "SQLite", "café", "Straße", "ﬁnance", "deploy",
                                  "ERR_CONN_RESET", "net/http", "the", "日本語"]), min_size=1, max_size=5)
QUERY = st.one_of(TEXT, st.tuples(WORDS, TEXT).map(lambda t: " ".join(t[0]) + " " + t[1]),
                  TEXT.map(lambda s: (s or "x") * (MAX_QUERY_CHARS // max(1, len(s or "x")) + 2)))
EXTREME_DATES = ["0001-01-01", "9999-12-31", "0001-01-01T00:00:00", "9999-12-31T23:59:59",
                 "9999-12-31T23:59:59.999999", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
                 "0001-01-01T00:00:00-23:59", "9999-12-31T23:59:59+23:59", "0500-01-01T00:00:00Z"]
BAD_DATES = ["2024-02-30", "2024-13-01", "2024-05-01T25:00", "0000-01-01", "10000-01-01", "2024-05-01Z",
             "+2024-05-01", "2024-W01-1", "20240501", "", " ", "now", "\ud800"]


def _mostly(valid: st.SearchStrategy, invalid: st.SearchStrategy) -> st.SearchStrategy:
    """Valid about 7 times in 8: a request with one bad field stops at the first check, so
    the deeper stages (arms, recency, results) need requests that are mostly valid."""
    return st.sampled_from(range(8)).flatmap(lambda i: invalid if i == 7 else valid)


SOME_DATE = st.one_of(st.sampled_from(EXTREME_DATES),
                      st.datetimes(timezones=st.timezones() | st.none()).map(lambda d: d.isoformat()),
                      st.dates().map(lambda d: d.isoformat()))
DATE = st.sampled_from(range(8)).flatmap(lambda i: st.none() if i < 5 else SOME_DATE if i < 7 else
                                         st.one_of(st.sampled_from(BAD_DATES), TEXT))
TRUST = _mostly(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)),
                st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.integers(min_value=-(2**70), max_value=2**1100)))
LIMIT = _mostly(st.one_of(st.none(), st.integers(min_value=1, max_value=100)),
                st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.booleans()))
MAX_TOKENS = _mostly(st.one_of(st.none(), st.integers(min_value=1, max_value=2**70)),
                     st.one_of(st.integers(min_value=-(2**70), max_value=0), st.booleans()))
VALUES = st.lists(_mostly(st.sampled_from(["default", "work", "s1", "s2", "adr"]), TEXT), max_size=3)
KIND_VALUES = st.lists(_mostly(st.sampled_from(KINDS), TEXT), max_size=3)
MODE = _mostly(st.sampled_from(MODES), TEXT)
FORMAT = _mostly(st.sampled_from(FORMATS), TEXT)
PROFILE = st.sampled_from(["rrf", "minmax"])
OPTIONAL_TEXT = _mostly(st.none(), TEXT)

CORPUS = [("the quick brown fox jumps over the lazy dog", "note", "0001-01-01"),
          ("net/http returns ERR_CONN_RESET when the pool is exhausted", "code", "9999-12-31T23:59:59"),
          ("naïve Straße café ﬁnance 日本語", "doc", "2024-05-01"),
          ("we chose SQLite in WAL mode", "note", "9999-12-31T23:59:59-05:00"),
          ("yesterday's standup: deploy on friday", "conversation", "0001-01-01T00:00:00+05:00")]
SETTINGS = settings(max_examples=examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


class _FakeIndex:
    def search(self, conn, qvec, allowed, k):  # noqa: ANN001 - mirrors memo.embed.index
        pks = [r[0] for r in conn.execute("SELECT pk FROM passages ORDER BY pk")]
        ok = None if allowed is None else set(np.asarray(allowed).tolist())
        return [(pk, 0.5) for pk in pks if ok is None or pk in ok][:k]


class _FakeSemantic:
    """Stands in for the real service when the model is not installed; it tokenises
    nothing, so it checks only that the pipeline hands it a str."""

    model_id = "all-minilm-l6-v2-int8"
    index = _FakeIndex()

    def status(self) -> tuple[bool, str]:
        return True, "fake model"

    def embed_query(self, text: str) -> np.ndarray:
        assert isinstance(text, str) and len(text) <= MAX_QUERY_CHARS
        text.encode("utf-8")                     # the real tokenizer refuses lone surrogates
        return np.full(384, 1 / math.sqrt(384), dtype=np.float32)


REAL = load_registry().get()
HAVE_MODEL = REAL.onnx.is_file() and REAL.tokenizer.is_file()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    conn = open_db(path)
    with write_tx(conn):
        for i, (text, kind, when) in enumerate(CORPUS):
            insert_record(conn, RecordDraft(body=text, kind=kind, event_at=when, tags=("adr",) if i % 2 else (),
                                            namespace="work" if i % 2 else "default", source=f"s{i}"),
                          (PassageDraft(text=text, section="s"),))
    if HAVE_MODEL:
        from memo.embed.backfill import backfill
        backfill(conn, progress=False)
    conn.close()
    yield path
    service.clear_caches()


@pytest.fixture(scope="module")
def conn(db: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(db, write=False)
    yield c
    c.close()


@pytest.fixture(scope="module")
def services(conn: sqlite3.Connection) -> dict[str, Any]:
    if HAVE_MODEL:
        from memo.embed.service import semantic_services
        return semantic_services(conn)
    return {"semantic": _FakeSemantic()}


def _check(resp: SearchResponse) -> None:
    assert isinstance(resp, SearchResponse)
    assert len(resp.query) <= MAX_QUERY_CHARS
    json.dumps(to_jsonable(resp), ensure_ascii=False).encode("utf-8")   # CLI --json / MCP


full_scopes = st.builds(Scope, namespaces=VALUES.map(tuple), kinds=KIND_VALUES.map(tuple),
                        sources=VALUES.map(tuple), library=OPTIONAL_TEXT, version=OPTIONAL_TEXT,
                        tags=VALUES.map(tuple), date_from=DATE, date_to=DATE, min_trust=TRUST, as_of=DATE)
# Half the requests filter on dates and trust only, so many reach the results stage.
scopes = st.sampled_from(range(2)).flatmap(
    lambda i: full_scopes if i else st.builds(Scope, date_from=DATE, date_to=DATE, min_trust=TRUST, as_of=DATE))


def _retrieve(conn, services, query, scope, mode, limit, max_tokens, fmt, now, profile) -> None:
    request = SearchRequest(query, scope=scope, mode=mode, limit=limit, max_tokens=max_tokens,
                            response_format=fmt, now=now)
    try:
        resp = retrieve_search(conn, request, profile, services)
    except MemoError as err:
        event(f"MemoError {type(err).__name__}: {str(err).split()[0]}")
        return
    event("answered, with results" if resp.results else "answered, no result")
    _check(resp)


REQUESTS = st.tuples(QUERY, scopes, MODE, LIMIT, MAX_TOKENS, FORMAT, DATE, PROFILE)


@SETTINGS
@given(REQUESTS)
def test_retrieve_search_raises_only_memo_errors(conn, services, args):
    _retrieve(conn, services, *args)


@pytest.mark.slow
@settings(SETTINGS, max_examples=5_000)
@given(REQUESTS)
def test_retrieve_search_fuzz_five_thousand(conn, services, args):
    _retrieve(conn, services, *args)


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(QUERY, VALUES, KIND_VALUES, VALUES, OPTIONAL_TEXT, OPTIONAL_TEXT, VALUES, DATE, DATE, TRUST, DATE,
       MODE, PROFILE, LIMIT, MAX_TOKENS, st.booleans(), DATE)
def test_search_api_raises_only_memo_errors(db, services, query, namespaces, kinds, sources, library, version,
                                            tags, date_from, date_to, min_trust, as_of, mode, profile, limit,
                                            max_tokens, explain, now):
    try:
        resp = api_search(query, db=db, namespaces=namespaces, kinds=kinds, sources=sources, library=library,
                          version=version, tags=tags, date_from=date_from, date_to=date_to,
                          min_trust=min_trust, as_of=as_of, mode=mode, profile=profile, limit=limit,
                          max_tokens=max_tokens, explain=explain, now=now,
                          services=None if HAVE_MODEL else services)
    except MemoError as err:
        event(f"MemoError {type(err).__name__}: {str(err).split()[0]}")
        return
    event("answered, with results" if resp.results else "answered, no result")
    _check(resp)


# --- pinned cases -----------------------------------------------------------------------
@pytest.mark.parametrize("now", ["0001-01-01", "9999-12-31T23:59:59", "0001-01-01T00:00:00+05:00",
                                 "9999-12-31T23:59:59-05:00", "9999-12-31"])
def test_now_at_the_ends_of_time(conn, services, now):
    resp = retrieve_search(conn, SearchRequest("fox", now=now, response_format="explain"), "rrf", services)
    assert resp.results
    _check(resp)


@pytest.mark.parametrize("field", ["as_of", "date_from", "date_to"])
@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01",
                                  "9999-12-31T23:59:59"])
def test_extreme_scope_dates(conn, services, field, when):
    resp = retrieve_search(conn, SearchRequest("fox", scope=Scope(**{field: when})), "rrf", services)
    _check(resp)


def test_early_and_late_bounds_compare_as_times(conn, services):
    """Bounds are written with four-digit years ('0500-...', not strftime's '500-...', which
    sorted after '2024'), and a bound that overflows in UTC is clamped to the first/last
    moment rather than raising."""
    def in_scope(**scope: str) -> int:
        resp = retrieve_search(conn, SearchRequest("fox", mode="keyword", scope=Scope(**scope)), "rrf", services)
        return resp.trace.filter["in_scope"]
    assert in_scope() == 5
    assert in_scope(date_from="0500-01-01T00:00:00") == 3         # all but the two year-1 records
    assert in_scope(date_to="0500-01-01T00:00:00") == 2
    assert in_scope(date_from="0001-01-01") == 5
    assert in_scope(date_to="9999-12-31T23:59:59-05:00") == 5     # clamped to the last UTC moment
    assert in_scope(as_of="0001-01-01") == 0                       # nothing recorded that early
    assert in_scope(as_of="0001-01-01T00:00:00+05:00") == 0        # clamped to the first UTC moment
    assert in_scope(as_of="9999-12-31T23:59:59-05:00") == 5


def test_surrogates_reach_no_tokenizer(conn, services):
    for query in ("fox \ud800", "\udfff" * 5 + " dog", "\ud83d\ude00 fox"):
        for mode in MODES:
            resp = retrieve_search(conn, SearchRequest(query, mode=mode), "rrf", services)
            _check(resp)
            assert "\ud800" not in resp.query and "\udfff" not in resp.query
    resp = retrieve_search(conn, SearchRequest("fox \ud800"), "rrf", services)
    assert any("surrogate" in n for n in resp.trace.notes)


def test_a_long_query_is_cut_once_with_a_note(conn, services):
    query = "fox " * 10_000                                        # 40,000 characters
    resp = retrieve_search(conn, SearchRequest(query), "rrf", services)
    assert len(resp.query) <= MAX_QUERY_CHARS and not resp.query.endswith("fo")
    assert resp.results and len(resp.trace.notes) == 1 and "10,000" in resp.trace.notes[0]
    assert to_jsonable(resp)["trace"]["notes"] == list(resp.trace.notes)
    short = retrieve_search(conn, SearchRequest("fox"), "rrf", services)
    assert short.trace.notes == ()


@pytest.mark.skipif(not HAVE_MODEL, reason="the real embedding model is not installed")
def test_the_semantic_arm_embeds_only_the_cut_query(conn, services, monkeypatch):
    seen: list[int] = []
    model = services["semantic"]
    real = type(model).embed_query
    monkeypatch.setattr(type(model), "embed_query", lambda self, text: (seen.append(len(text)), real(self, text))[1])
    retrieve_search(conn, SearchRequest("x" * 3_000_000, mode="semantic"), "rrf", services)
    assert seen and max(seen) <= MAX_QUERY_CHARS
