"""memo.serve.guard: the Host / Origin / cross-site / token predicates, socket-free."""

from __future__ import annotations

import pytest

from memo.serve import guard

PORT = 8765


@pytest.mark.parametrize("value, expected", [
    ("127.0.0.1:8765", ("127.0.0.1", 8765)), ("LocalHost:80", ("localhost", 80)), ("[::1]:8765", ("::1", 8765)),
    ("localhost", ("localhost", None)), ("[::1]", ("::1", None)),
    ("::1:8765", None), ("[::1", None), ("a b:1", None), ("host:port", None), ("host:", None), (":8765", None),
    ("user@127.0.0.1:8765", None), ("127.0.0.1:8765/x", None), ("", None), ("h:1234567", None),
])
def test_split_authority(value: str, expected: tuple[str, int | None] | None) -> None:
    assert guard.split_authority(value) == expected


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:8765", True), ("localhost:8765", True), ("[::1]:8765", True), ("LOCALHOST:8765", True),
    ("127.0.0.1:8766", False), ("127.0.0.1", False), ("evil.example:8765", False), ("0.0.0.0:8765", False),
    ("127.0.0.2:8765", False), ("localhost.evil.example:8765", False), (None, False), ("", False),
])
def test_host_allowed(host: str | None, ok: bool) -> None:
    assert guard.host_allowed(host, PORT) is ok


def test_host_without_port_means_80() -> None:
    assert guard.host_allowed("localhost", 80) and not guard.host_allowed("localhost", 8080)


@pytest.mark.parametrize("origin, ok", [
    (None, True), ("http://127.0.0.1:8765", True), ("http://localhost:8765", True), ("http://[::1]:8765", True),
    ("http://127.0.0.1:8765/", True),
    ("null", False), ("NULL", False), ("http://0.0.0.0:8765", False), ("http://evil.example", False),
    ("http://evil.example:8765", False), ("https://127.0.0.1:8765", False), ("http://127.0.0.1:9999", False),
    ("http://127.0.0.1", False), ("http://127.0.0.1:8765/path", False), ("http://u@127.0.0.1:8765", False),
    ("http://127.0.0.1:99999", False), ("file://", False), ("", False), ("http://[::]:8765", False),
])
def test_origin_allowed(origin: str | None, ok: bool) -> None:
    assert guard.origin_allowed(origin, PORT) is ok


def test_wildcard_names_accept_any_host_but_only_same_origin() -> None:
    names = guard.allowed_names("0.0.0.0", allow_remote=True)
    assert guard.host_allowed("192.0.2.10:8765", PORT, names)
    assert not guard.host_allowed("192.0.2.10:8766", PORT, names)
    assert guard.origin_allowed("http://192.0.2.10:8765", PORT, names, "192.0.2.10:8765")
    assert not guard.origin_allowed("http://evil.example:8765", PORT, names, "192.0.2.10:8765")
    assert not guard.origin_allowed("http://0.0.0.0:8765", PORT, names, "0.0.0.0:8765")


def test_allowed_names() -> None:
    assert guard.allowed_names("127.0.0.1", allow_remote=False) == guard.LOOPBACK_NAMES
    assert guard.allowed_names("192.0.2.10", allow_remote=False) == guard.LOOPBACK_NAMES
    assert guard.allowed_names("192.0.2.10", allow_remote=True) == guard.LOOPBACK_NAMES | {"192.0.2.10"}
    assert "*" in guard.allowed_names("::", allow_remote=True)


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.1", False), ("example.com", False), ("", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert guard.is_loopback(host) is loopback


@pytest.mark.parametrize("method, site, blocked", [
    ("POST", "cross-site", True), ("DELETE", "Cross-Site", True), ("PUT", "cross-site", True),
    ("POST", "same-origin", False), ("POST", "same-site", False), ("POST", None, False), ("POST", "none", False),
    ("GET", "cross-site", False), ("HEAD", "cross-site", False),
])
def test_cross_site_write(method: str, site: str | None, blocked: bool) -> None:
    assert guard.cross_site_write(method, site) is blocked


def test_bearer_ok() -> None:
    token = "abcdefghijklmnop0123"
    assert guard.bearer_ok(f"Bearer {token}", token)
    assert guard.bearer_ok(f"bearer  {token} ", token)
    for bad in (None, "", token, f"Bearer {token}x", f"Bearer {token[:-1]}", f"Basic {token}",
                f"Bearer {token} extra", "Bearer", f"Bearer\t{token}", "Bearer ünïcode"):
        assert not guard.bearer_ok(bad, token), bad
