"""memo web's guard and API (reliability.md R12, R14; docs/web.md).

Most checks run in-process through starlette's TestClient, whose requests carry
``Host: 127.0.0.1:8765`` and an ASGI ``server`` of ("127.0.0.1", 8765), just as uvicorn
gives; the real server (``memo web --port 0`` in a subprocess) is checked over real HTTP
for the bind address, the printed URL and the same guard answers.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner
from web_server import REPO, memo_web

from memo import __version__
from memo.cli import app as cli_app
from memo.cli.options import SEARCH_OPTIONS
from memo.errors import ValidationError
from memo.profile import load_profile, profile_names
from memo.serve import guard
from memo.serve.web import CSP, FLAG_PARAMS, MAX_BODY_BYTES, create_app
from memo.serve.web_input import FLAG_WORDS, SEARCH_KEYS

TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1:8765"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NOTE = "The staging deploy key rotates every 30 days; ask the platform team for a new one."


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(tmp_path / "memo.db", token=TOKEN), base_url=BASE) as c:
        yield c


def assert_error(resp: httpx.Response, status: int, type_name: str | None = None) -> dict[str, str]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    doc = resp.json()
    assert set(doc) == {"error", "type", "hint"}, doc
    assert doc["error"] and doc["hint"], doc
    assert "Traceback" not in resp.text
    if type_name:
        assert doc["type"] == type_name, doc
    return doc


# --- Host / Origin / cross-site ----------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1:9999", "0.0.0.0:8765",
                                  "localhost.evil.example:8765", "127.0.0.1.nip.io:8765", "[::2]:8765",
                                  "127.0.0.1:99999"])
@pytest.mark.parametrize("path", ["/", "/healthz", "/api/stats", "/static/app.js"])
def test_foreign_host_is_forbidden(client: TestClient, host: str, path: str) -> None:
    assert_error(client.get(path, headers={"Host": host, **AUTH}), 403, "Forbidden")


# Issue 33.5: '127.0.0.1:²' passed str.isdigit() and int() raised: a plain-text 500 without
# the security headers.  Latin-1 bytes, as a client can send them.
MALFORMED_HOSTS = ["127.0.0.1:\u00b2", "127.0.0.1:8765\u00b2", "127.0.0.1:\u00b9\u00b2", "127.0.0.1:", ":8765",
                   "127.0.0.1:87 65", "127.0.0.1:+8765", "127.0.0.1:-1", "127.0.0.1:0x2", "[::1", "::1:8765",
                   "127.0.0.1/x:8765", "user@127.0.0.1:8765", "127.0.0.1:8765:8765", "\u00ff\u00fe", ""]


@pytest.mark.parametrize("host", MALFORMED_HOSTS)
@pytest.mark.parametrize("path", ["/", "/healthz", "/api/stats"])
def test_malformed_host_is_a_bad_request_with_security_headers(client: TestClient, host: str, path: str) -> None:
    resp = client.get(path, headers={"Host": host.encode("latin-1"), **AUTH})
    assert_error(resp, 400, "BadRequest")
    assert resp.headers["content-security-policy"] == CSP
    assert resp.headers["x-content-type-options"] == "nosniff"


def test_unicode_digits_in_content_length_are_not_a_crash(tmp_path: Path) -> None:
    """Raw ASGI (an HTTP client would set Content-Length itself): the guard's size check
    read '²' with str.isdigit() and int()."""
    app = create_app(tmp_path / "memo.db", token=TOKEN)
    sent: list[dict[str, object]] = []
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "path": "/api/memories",
             "raw_path": b"/api/memories", "root_path": "", "query_string": b"", "server": ("127.0.0.1", 8765),
             "client": ("127.0.0.1", 50000),
             "headers": [(b"host", b"127.0.0.1:8765"), (b"authorization", f"Bearer {TOKEN}".encode()),
                         (b"content-type", b"application/json"), (b"content-length", "\u00b2".encode("latin-1"))]}

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    try:
        anyio.run(app, scope, receive, send)
    finally:
        app.state.tools.close()
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}  # type: ignore[union-attr]
    assert start["status"] < 500, sent
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765"])
def test_loopback_hosts_are_served(client: TestClient, host: str) -> None:
    assert client.get("/api/stats", headers={"Host": host, **AUTH}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://0.0.0.0:8765", "http://127.0.0.1:9999",
                                    "https://127.0.0.1:8765", "http://localhost:8765.evil.example",
                                    "http://127.0.0.1", "http://user@127.0.0.1:8765", "file://"])
def test_foreign_origin_is_forbidden_even_with_token(client: TestClient, origin: str) -> None:
    assert_error(client.get("/api/stats", headers={"Origin": origin, **AUTH}), 403, "Forbidden")
    assert_error(client.post("/api/memories", json={"text": NOTE}, headers={"Origin": origin, **AUTH}), 403)
    assert_error(client.get("/", headers={"Origin": origin}), 403)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"])
def test_loopback_origins_are_served(client: TestClient, origin: str) -> None:
    assert client.get("/api/stats", headers={"Origin": origin, **AUTH}).status_code == 200


def test_cross_site_write_is_forbidden(client: TestClient) -> None:
    resp = client.post("/api/memories", json={"text": NOTE}, headers={"Sec-Fetch-Site": "cross-site", **AUTH})
    assert_error(resp, 403, "Forbidden")
    assert client.get("/api/stats", headers=AUTH).json()["records"] == 0   # nothing was written
    ok = client.post("/api/memories", json={"text": NOTE}, headers={"Sec-Fetch-Site": "same-origin", **AUTH})
    assert ok.status_code == 201, ok.text


# --- token -------------------------------------------------------------------------------------
@pytest.mark.parametrize("auth", [None, "Bearer wrong-token-0123456789", f"Bearer {TOKEN}x", f"Basic {TOKEN}",
                                  "Bearer", f"bearer{TOKEN}", f"Bearer {TOKEN[:-1]}"])
def test_api_needs_the_token(client: TestClient, auth: str | None) -> None:
    headers = {"Authorization": auth} if auth is not None else {}
    for resp in (client.get("/api/search", params={"q": "deploy"}, headers=headers),
                 client.get("/api/stats", headers=headers),
                 client.get("/api/records/r1", headers=headers),
                 client.get("/api/nowhere", headers=headers),
                 client.get("/nowhere", headers=headers),
                 client.post("/api/memories", json={"text": NOTE}, headers=headers)):
        assert_error(resp, 401, "Unauthorized")
        assert resp.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/api/stats", headers=AUTH).json()["records"] == 0


def test_page_and_health_need_no_token_and_hold_no_memories(client: TestClient) -> None:
    client.post("/api/memories", json={"text": NOTE}, headers=AUTH)
    for path in ("/", "/healthz", "/static/app.js", "/static/app.css"):
        resp = client.get(path)
        assert resp.status_code == 200, path
        assert "deploy key" not in resp.text
    assert client.get("/healthz").json() == {"ok": True, "version": __version__}


def test_token_from_environment_and_its_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMO_WEB_TOKEN", "env-token-abcdefghijklmnop")
    app = create_app(tmp_path / "a.db")
    assert app.state.token == "env-token-abcdefghijklmnop"
    app.state.tools.close()
    monkeypatch.delenv("MEMO_WEB_TOKEN")
    random_app = create_app(tmp_path / "b.db")
    assert len(random_app.state.token) >= 40     # secrets.token_urlsafe(32)
    random_app.state.tools.close()
    for bad in ("short", "has space in it 1234567", "x" * 600, "tok#en-0123456789abcdef"):
        with pytest.raises(ValidationError):
            create_app(tmp_path / "c.db", token=bad)


# --- the API through the library ---------------------------------------------------------------
def test_add_then_search_with_explain_and_record(client: TestClient) -> None:
    added = client.post("/api/memories", json={"text": NOTE, "kind": "note", "namespace": "ops",
                                               "tags": ["keys", "staging"], "title": "Deploy keys"}, headers=AUTH)
    assert added.status_code == 201, added.text
    report = added.json()
    assert report["status"] == "added" and report["passages"] >= 1
    client.post("/api/memories", json={"text": "Lunch on Fridays is pizza.", "namespace": "ops"}, headers=AUTH)
    again = client.post("/api/memories", json={"text": NOTE, "namespace": "ops"}, headers=AUTH)
    assert again.status_code == 200 and again.json()["status"] == "skipped"

    compact = client.get("/api/search", params={"q": "deploy key rotation", "namespace": "ops"}, headers=AUTH)
    assert compact.status_code == 200, compact.text
    doc = compact.json()
    assert doc["results"][0]["record_id"] == report["record_id"]
    assert doc["results"][0]["why"] is None and doc["trace"]["arms"]
    assert compact.headers["cache-control"] == "no-store"

    explained = client.get("/api/search", params={"q": "deploy key rotation", "explain": "1", "tags": "keys,staging",
                                                  "kind": "note", "limit": "5"}, headers=AUTH).json()
    top = explained["results"][0]
    assert top["record_id"] == report["record_id"]
    why = top["why"]
    assert why["arms"] and why["final"] == top["score"]
    assert {"rank", "raw", "contribution"} <= set(next(iter(why["arms"].values())))
    trace = explained["trace"]
    assert {a["name"] for a in trace["arms"] if a["ran"]} >= {"keyword"}
    assert {"cutoff_kind", "budget", "degraded", "drops", "filter"} <= set(trace)

    rec = client.get(f"/api/records/{report['record_id']}", headers=AUTH).json()
    assert rec["body"] == NOTE and rec["namespace"] == "ops" and sorted(rec["tags"]) == ["keys", "staging"]
    stats = client.get("/api/stats", headers=AUTH).json()
    assert stats["live"] == 2
    profiles = client.get("/api/profiles", headers=AUTH).json()
    assert profiles["default"] == "zscore" and {"rrf", "minmax", "zscore"} <= set(profiles["profiles"])


def test_stored_markup_comes_back_verbatim_as_json_data(client: TestClient) -> None:
    evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> pwnedmarker'
    rid = client.post("/api/memories", json={"text": evil}, headers=AUTH).json()["record_id"]
    resp = client.get("/api/search", params={"q": "pwnedmarker"}, headers=AUTH)
    assert resp.headers["content-type"] == "application/json"      # never served as HTML
    assert resp.json()["results"][0]["text"] == evil
    assert client.get(f"/api/records/{rid}", headers=AUTH).json()["body"] == evil


# --- CLI flags -> web parameters (the page words a search's hints with them) -------------------
def test_every_search_flag_has_its_web_parameter() -> None:
    """The flag -> parameter table is derived, not written: every long flag of `memo
    search` but --db and --json maps to a parameter GET /api/search takes."""
    flags = {f for opt in SEARCH_OPTIONS for f in opt.flags if f.startswith("--")} - {"--db", "--json"}
    assert set(FLAG_PARAMS) == flags
    assert set(FLAG_PARAMS.values()) <= set(SEARCH_KEYS)
    assert FLAG_PARAMS["--tag"] == "tags" and FLAG_PARAMS["--from"] == "from"
    assert FLAG_PARAMS["--max-tokens"] == "max_tokens" and FLAG_PARAMS["--namespace"] == "namespace"


# --- the page's form (GET /api/form) ---------------------------------------------------------
def test_the_form_route_gives_each_profiles_limits_and_the_explain_words(client: TestClient) -> None:
    doc = client.get("/api/form", headers=AUTH).json()
    assert set(doc["limits"]) == set(profile_names())
    for name, limits in doc["limits"].items():
        prof = load_profile(name)
        assert limits == {"default": prof.limit.default, "max": prof.limit.max}, name
    assert doc["explain"] == {"true": list(FLAG_WORDS[True]), "false": list(FLAG_WORDS[False])}
    assert doc["flags"] == FLAG_PARAMS
    assert_error(client.get("/api/form"), 401, "Unauthorized")


@pytest.mark.parametrize("word", [*FLAG_WORDS[True], *FLAG_WORDS[False], "YES", "Off"])
def test_the_api_takes_every_explain_word_the_page_is_given(client: TestClient, word: str) -> None:
    client.post("/api/memories", json={"text": NOTE}, headers=AUTH)
    doc = client.get("/api/search", params={"q": "deploy key", "explain": word}, headers=AUTH).json()
    assert (doc["results"][0]["why"] is not None) == (word.lower() in FLAG_WORDS[True]), word


# --- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("params, type_name", [
    ({"q": "x", "limit": "ten"}, "ValidationError"),
    ({"q": "x", "limit": "0"}, "ValidationError"),
    ({"q": "x", "limit": "100000"}, "ValidationError"),
    ({"q": "x", "mode": "fuzzy"}, "ValidationError"),
    ({"q": "x", "kind": "poem"}, "ValidationError"),
    ({"q": "x", "explain": "maybe"}, "ValidationError"),
    ({"q": "x", "min_trust": "high"}, "ValidationError"),
    ({"q": "x", "from": "yesterday"}, "ValidationError"),
    ({"q": "x", "namespcae": "ops"}, "ValidationError"),
    ({"q": "x", "profile": "../../etc/passwd"}, "ProfileError"),
    ({"q": "x", "profile": "nosuchprofile"}, "ProfileError"),
    ({"q": "   "}, "QuerySyntaxError"),
    ({}, "ValidationError"),
    ({"q": ["a", "b"]}, "ValidationError"),
])
def test_bad_search_params_are_4xx_json(client: TestClient, params: dict[str, str], type_name: str) -> None:
    doc = assert_error(client.get("/api/search", params=params, headers=AUTH), 400, type_name)
    assert "\n" not in doc["error"]


def test_bad_bodies_are_4xx_json(client: TestClient) -> None:
    post = client.post
    assert_error(post("/api/memories", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"}),
                 400, "ValidationError")
    assert_error(post("/api/memories", data={"text": NOTE}, headers=AUTH), 415, "UnsupportedMediaType")
    assert_error(post("/api/memories", content=NOTE, headers={**AUTH, "Content-Type": "text/plain"}), 415)
    assert_error(post("/api/memories", json=["a list"], headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": NOTE, "colour": "red"}, headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": NOTE, "trust": "1"}, headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": NOTE, "trust": 7}, headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": NOTE, "kind": "poem"}, headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": "  "}, headers=AUTH), 400, "ValidationError")
    assert_error(post("/api/memories", json={"text": NOTE, "event_at": "soon"}, headers=AUTH), 400)
    assert_error(post("/api/memories", json={"text": NOTE, "tags": "a,b"}, headers=AUTH), 400)
    assert_error(client.get("/api/records/r-does-not-exist", headers=AUTH), 404, "NotFound")
    assert_error(client.get("/api/memories", headers=AUTH), 405, "MethodNotAllowed")
    assert_error(client.get("/api/nowhere", headers=AUTH), 404, "NotFound")


def test_body_over_the_cap_is_413(client: TestClient) -> None:
    big = json.dumps({"text": "x" * MAX_BODY_BYTES}).encode()
    assert_error(client.post("/api/memories", content=big, headers={**AUTH, "Content-Type": "application/json"}),
                 413, "ContentTooLarge")

    def chunks() -> Iterator[bytes]:       # no Content-Length: counted as it streams in
        yield b'{"text": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 1):
            yield b"y" * 65536
        yield b'"}'

    assert_error(client.post("/api/memories", content=chunks(), headers={**AUTH, "Content-Type": "application/json"}),
                 413, "ContentTooLarge")
    assert client.get("/api/stats", headers=AUTH).json()["records"] == 0


# --- headers and page hygiene ------------------------------------------------------------------
def test_security_headers_on_every_response(client: TestClient) -> None:
    responses = [client.get("/"), client.get("/static/app.js"), client.get("/healthz"),
                 client.get("/api/stats", headers=AUTH), client.get("/api/stats"),
                 client.get("/", headers={"Host": "evil.example:8765"}), client.get("/nowhere"),
                 client.get("/api/search", params={"q": "x", "limit": "ten"}, headers=AUTH)]
    for resp in responses:
        assert resp.headers["content-security-policy"] == CSP, resp.request.url
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.headers["referrer-policy"] == "no-referrer"
        assert "server" not in resp.headers
    for resp in responses[3:5] + responses[-1:]:
        assert resp.headers["cache-control"] == "no-store"
    assert responses[1].headers["content-type"].startswith(("text/javascript", "application/javascript"))


def test_page_has_no_inline_code_or_html_sinks() -> None:
    static = REPO / "memo" / "serve" / "static"
    html = (static / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)           # no inline script (CSP would block it)
    assert not re.search(r"<style|\sstyle=|\son[a-z]+\s*=", html)  # no inline style, no handler attributes
    assert "http://" not in html and "https://" not in html       # no external resources
    code = "\n".join(line for line in (static / "app.js").read_text().splitlines()
                     if not line.lstrip().startswith("//"))
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in code, sink


# --- the real server over real HTTP ------------------------------------------------------------
def _non_loopback_ip() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))      # TEST-NET: no packet is sent for UDP connect
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if guard.is_loopback(ip) else ip


def test_real_server_binds_loopback_and_guards(tmp_path: Path) -> None:
    with memo_web(tmp_path / "memo.db") as srv:
        assert srv.url.startswith("http://127.0.0.1:") and srv.host == "127.0.0.1"
        assert len(srv.token) >= 40 and f"#token={srv.token}" in srv.url
        assert srv.stderr().count("memo web:") == 1
        ip = _non_loopback_ip()
        if ip is not None:       # listening on 127.0.0.1 only: another interface refuses
            with pytest.raises(OSError), socket.create_connection((ip, srv.port), timeout=2):
                pass
        with httpx.Client(base_url=srv.base, timeout=30) as http:
            assert http.get("/healthz").json()["ok"] is True
            assert_error(http.get("/healthz", headers={"Host": f"evil.example:{srv.port}"}), 403, "Forbidden")
            assert_error(http.get("/api/stats", headers={"Origin": "http://evil.example", **srv.auth()}), 403)
            assert_error(http.get("/api/stats", headers={"Origin": f"http://0.0.0.0:{srv.port}", **srv.auth()}), 403)
            assert_error(http.get("/api/stats", headers={"Origin": "null", **srv.auth()}), 403)
            assert_error(http.get("/api/stats"), 401, "Unauthorized")
            assert_error(http.post("/api/memories", json={"text": NOTE},
                                   headers={"Sec-Fetch-Site": "cross-site", **srv.auth()}), 403)
            added = http.post("/api/memories", json={"text": NOTE, "tags": ["keys"]}, headers=srv.auth())
            assert added.status_code == 201, added.text
            found = http.get("/api/search", params={"q": "who rotates the deploy key", "explain": "1"},
                             headers=srv.auth()).json()
            assert found["results"][0]["record_id"] == added.json()["record_id"]
            assert found["results"][0]["why"]["arms"] and found["trace"]["arms"]
            assert http.get("/").headers["content-security-policy"] == CSP
            assert_error(http.get("/api/search", params={"q": "x", "limit": "-1"}, headers=srv.auth()), 400)
    assert "Traceback" not in srv.stderr(), srv.stderr()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_cli_refuses_a_non_loopback_host(tmp_path: Path, host: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "memo", "web", "--host", host, "--port", "0"], cwd=REPO,
                          env={**os.environ, "MEMO_DB": str(tmp_path / "memo.db")},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "--allow-remote" in proc.stderr and "memo web:" not in proc.stderr
    assert not (tmp_path / "memo.db").exists()      # refused before anything was opened


def test_allow_remote_warns_and_widens_host_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("memo.serve.web.serve", lambda **kw: calls.append(kw))
    result = CliRunner().invoke(cli_app, ["web", "--host", "0.0.0.0", "--allow-remote", "--port", "0",
                                          "--db", str(tmp_path / "memo.db")])
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.output and calls[0]["allow_remote"] is True and calls[0]["host"] == "0.0.0.0"
    # A wildcard bind answers any Host on its port, but an Origin must be that same host.
    app = create_app(tmp_path / "memo.db", token=TOKEN, allowed_hosts=guard.allowed_names("0.0.0.0", True))
    with TestClient(app, base_url="http://192.0.2.10:8765") as c:
        assert c.get("/api/stats", headers=AUTH).status_code == 200
        assert c.get("/api/stats", headers={"Origin": "http://192.0.2.10:8765", **AUTH}).status_code == 200
        assert_error(c.get("/api/stats", headers={"Origin": "http://evil.example:8765", **AUTH}), 403)
        assert_error(c.get("/api/stats"), 401)
