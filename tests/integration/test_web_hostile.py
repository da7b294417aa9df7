"""Hostile input for ``memo web``'s API (issue 9, points 4 and 8: the web skin).

Every ``/api`` route is driven in-process (starlette's TestClient, as test_web_guard.py)
with arbitrary Unicode (lone surrogates as JSON escapes and as invalid UTF-8 in the
query string), out-of-range dates, odd numbers and nested JSON.  Only 2xx and 4xx answers
come out, each 4xx a JSON error document; never a 500.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from memo.serve.web import MAX_JSON_DEPTH, create_app

TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1:8765"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}
NOTE = "The staging deploy key rotates every 30 days."


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("webhostile") / "memo.db"
    with TestClient(create_app(db, token=TOKEN), base_url=BASE) as c:
        assert c.post("/api/memories", json={"text": NOTE, "tags": ["keys"]}, headers=AUTH).status_code == 201
        yield c


def assert_4xx(resp: httpx.Response, status: int | None = None) -> dict[str, str]:
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:500])
    if status is not None:
        assert resp.status_code == status, resp.text[:500]
    doc = resp.json()
    assert set(doc) == {"error", "type", "hint"}, doc
    assert "Traceback" not in resp.text
    return doc


def assert_answer(resp: httpx.Response) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.text[:500])
    if resp.status_code >= 400:
        assert_4xx(resp)
    else:
        resp.json()


def post_raw(client: TestClient, body: bytes | str) -> httpx.Response:
    return client.post("/api/memories", content=body.encode() if isinstance(body, str) else body,
                       headers=JSON_HEADERS)


# --- the three findings -------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    '{"text": "\\ud800"}', '{"text": "ok", "title": "a\\udfffb"}', '{"text": "ok", "tags": ["\\udc80"]}',
    '{"text": "ok", "meta": {"\\ud800": 1}}', '{"text": "ok", "meta": {"k": ["\\ud83d"]}}',
])
def test_lone_surrogate_in_a_body_is_400(client: TestClient, body: str) -> None:
    doc = assert_4xx(post_raw(client, body), 400)
    assert doc["type"] == "ValidationError" and "surrogate" in doc["error"], doc


def test_a_paired_surrogate_escape_is_fine(client: TestClient) -> None:
    resp = post_raw(client, '{"text": "emoji \\ud83d\\ude00 in a note"}')
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 100_000])
def test_deep_json_is_400(client: TestClient, depth: int) -> None:
    body = '{"text": "x", "meta": {"a": ' + "[" * depth + "]" * depth + "}}"
    doc = assert_4xx(post_raw(client, body), 400)
    assert "deep" in doc["error"], doc
    assert_4xx(post_raw(client, "[" * depth + "]" * depth), 400)


def test_nesting_within_the_limit_is_stored(client: TestClient) -> None:
    meta: Any = []
    for _ in range(MAX_JSON_DEPTH - 3):
        meta = [meta]
    resp = client.post("/api/memories", json={"text": "nested meta is fine", "meta": {"a": meta}}, headers=AUTH)
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("date", ["99999-01-01", "2024-02-30", "-0001-01-01", "1e309", "2024-01-01T00:00:00+99:00",
                                  "2024-01-01T24:00:01", "9" * 5000])
def test_out_of_range_dates_are_400(client: TestClient, date: str) -> None:
    assert_4xx(client.post("/api/memories", json={"text": f"dated {date}", "event_at": date}, headers=AUTH), 400)
    for key in ("from", "to", "as_of"):
        assert_4xx(client.get("/api/search", params={"q": "deploy", key: date}, headers=AUTH), 400)


@pytest.mark.parametrize("date", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "9999-12-31",
                                  "0001-01-01"])
def test_dates_at_the_edge_of_the_calendar_are_answered(client: TestClient, date: str) -> None:
    """Valid ISO dates whose UTC moment leaves datetime's range: an answer, never a 500."""
    assert_answer(client.post("/api/memories", json={"text": f"dated {date}", "event_at": date}, headers=AUTH))
    for key in ("from", "to", "as_of"):
        assert_answer(client.get("/api/search", params={"q": "deploy", key: date}, headers=AUTH))


@pytest.mark.parametrize("raw", ["q=%ED%A0%80", "q=deploy&namespace=%FF", "q=%C3", "q=deploy&tags=%ED%BF%BF",
                                 "q=deploy&from=%ED%A0%80", "q=%00"])
def test_invalid_utf8_in_the_query_string(client: TestClient, raw: str) -> None:
    assert_answer(client.get(f"/api/search?{raw}", headers=AUTH))


@pytest.mark.parametrize("body", ["1e309", '{"text": "x", "trust": 1e309}', '{"text": "x", "trust": NaN}',
                                  '{"text": "x", "trust": -Infinity}', '{"text": "x", "trust": ' + "9" * 5000 + "}",
                                  '{"text": "x", "meta": {"n": ' + "9" * 5000 + "}}", '"\\ud800"', "null", "[]"])
def test_odd_numbers_and_documents_are_400(client: TestClient, body: str) -> None:
    assert_4xx(post_raw(client, body), 400)


def test_record_ids_of_any_shape(client: TestClient) -> None:
    for rid in ["%ED%A0%80", "%FF", "a" * 5000, "%00", "r1:99999999999999999999999", "..%2F..%2Fetc"]:
        assert_answer(client.get(f"/api/records/{rid}", headers=AUTH))


# --- hypothesis over every input --------------------------------------------------------------
TEXT = st.text(max_size=30)            # surrogates included (st.text draws them)
DATES = st.sampled_from(["9999-12-31T23:59:59", "0001-01-01", "99999-01-01", "2024-13-01", "2024-01-01T25:00",
                         "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "", "now", "2024-01-01"])
NUMBERS = st.one_of(st.integers(min_value=-(10 ** 30), max_value=10 ** 30), st.floats(),
                    st.sampled_from([0, 1, 100, 101, -1, 0.5, 10 ** 400]))
JSONISH = st.recursive(st.none() | st.booleans() | NUMBERS | TEXT,
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3),
                       max_leaves=12)
FIELD_VALUES = {"text": st.one_of(TEXT, JSONISH), "kind": st.one_of(st.sampled_from(["note", "doc", "poem"]), JSONISH),
                "namespace": st.one_of(TEXT, JSONISH), "title": TEXT, "source": TEXT, "library": TEXT,
                "version": TEXT, "tags": st.one_of(st.lists(TEXT, max_size=3), JSONISH),
                "event_at": st.one_of(DATES, TEXT, JSONISH), "trust": st.one_of(NUMBERS, JSONISH),
                "author": TEXT, "ext_id": TEXT, "meta": st.one_of(st.dictionaries(TEXT, JSONISH, max_size=3), JSONISH),
                "colour": TEXT}
SEARCH_VALUES = {"q": TEXT, "namespace": TEXT, "kind": TEXT, "source": TEXT, "tags": TEXT, "library": TEXT,
                 "version": TEXT, "from": st.one_of(DATES, TEXT), "to": st.one_of(DATES, TEXT),
                 "as_of": st.one_of(DATES, TEXT), "min_trust": NUMBERS.map(str) | TEXT,
                 "mode": st.sampled_from(["auto", "keyword", "exact", "semantic", "bogus"]) | TEXT,
                 "profile": st.sampled_from(["rrf", "minmax", "../x", "nope"]) | TEXT,
                 "limit": NUMBERS.map(str) | TEXT, "max_tokens": NUMBERS.map(str) | TEXT,
                 "explain": st.sampled_from(["1", "true", "0", "maybe"]) | TEXT, "bogus": TEXT}


def _quote(text: str) -> str:
    """Percent-encode; a lone surrogate becomes the bytes of its (invalid) UTF-8 form."""
    return urllib.parse.quote(text.encode("utf-8", "surrogatepass"), safe="")


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(body=st.fixed_dictionaries({}, optional=FIELD_VALUES) | JSONISH)
def test_any_body_is_2xx_or_4xx(client: TestClient, body: Any) -> None:
    raw = json.dumps(body, ensure_ascii=True)           # surrogates travel as \\udXXX escapes
    assert_answer(post_raw(client, raw))


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(params=st.dictionaries(st.sampled_from(sorted(SEARCH_VALUES)), st.just(None), max_size=6).flatmap(
    lambda keys: st.fixed_dictionaries({k: SEARCH_VALUES[k] for k in keys})))
def test_any_search_is_2xx_or_4xx(client: TestClient, params: dict[str, str]) -> None:
    query = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in params.items())
    assert_answer(client.get(f"/api/search?{query}", headers=AUTH))


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(rid=TEXT)
def test_any_record_id_is_2xx_or_4xx(client: TestClient, rid: str) -> None:
    assert_answer(client.get(f"/api/records/{_quote(rid)}", headers=AUTH))


def test_module_client_survived(client: TestClient, tmp_path: Path) -> None:
    assert client.get("/api/stats", headers=AUTH).status_code == 200
