"""Surface parity (issue 12.5): the same searches through the CLI (a subprocess), the MCP
server over stdio and over Streamable HTTP (the official SDK client, issue 32.2), the web API (starlette TestClient) and
``memo.search`` give identical JSON documents, latency fields aside, with a pinned "now" and
``$MEMO_PROFILE`` honoured by every surface.  Also: /metrics after a degraded search (12.2),
the MCP metrics resource and stats, and ``memo-mcp backfill`` (12.4)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from starlette.testclient import TestClient

import memo
from memo.embed import integrity, service
from memo.embed.registry import load_registry
from memo.embed.warmup import LOADING
from memo.ops import add_record
from memo.serialize import to_jsonable
from memo.serve.web import create_app
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from tests.integration.mcp_http_server import mcp_http, session

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TOKEN = "parity-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NOW = "2026-03-01T12:00:00Z"
PROFILE = "minmax"          # not the default: proves $MEMO_PROFILE reached every surface

# (query, fields): each is sent through every surface with now=NOW.
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("staging deploy key rotation", {}),
    ("deploy key", {"mode": "keyword", "explain": True}),
    ("ERR_CONN_RESET", {"explain": True}),
    ("pool party", {"namespaces": ["home"], "kinds": ["note"], "explain": True}),
    ("deploy", {"namespaces": ["nowhere"]}),
    ("cake", {"mode": "keyword", "max_tokens": 1}),
]


def _strip_latency(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    tr = doc["trace"]
    tr.pop("latency_ms"), tr.pop("stage_ms")
    for arm in tr["arms"]:
        arm.pop("latency_ms")
    return doc


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parity") / "memo.db"
    conn = open_db(path)
    for text, fields in [
        ("The staging deploy key rotates every 30 days; ask the platform team.",
         {"namespace": "ops", "kind": "doc", "source": "runbook", "tags": ("keys",)}),
        ("Clients see ERR_CONN_RESET after 60 s idle behind the load balancer.",
         {"namespace": "ops", "kind": "note", "event_at": "2026-02-01"}),
        ("Pool party on Saturday, bring towels.", {"namespace": "home", "kind": "note", "event_at": "2026-01-10"}),
        ("Chocolate cake needs cocoa and butter.", {"namespace": "home", "kind": "note"}),
    ]:
        add_record(conn, RecordDraft(body=text, **fields))
    conn.close()
    return path


def _cli(db: Path, query: str, f: dict[str, Any]) -> dict[str, Any]:
    argv = [str(BIN / "memo"), "search", query, "--db", str(db), "--json", "--now", NOW]
    for name, flag in (("namespaces", "--namespace"), ("kinds", "--kind")):
        for v in f.get(name, ()):
            argv += [flag, v]
    if "mode" in f:
        argv += ["--mode", f["mode"]]
    if "max_tokens" in f:
        argv += ["--max-tokens", str(f["max_tokens"])]
    if f.get("explain"):
        argv.append("--explain")
    env = {**os.environ, "MEMO_PROFILE": PROFILE}
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, cwd=db.parent)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _mcp_args(query: str, f: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"query": query, "now": NOW}
    for k in ("namespaces", "kinds", "mode", "max_tokens"):
        if k in f:
            args[k] = f[k]
    if f.get("explain"):
        args["response_format"] = "explain"
    return args


async def _until_model_loaded(s: ClientSession) -> int:
    """memo-mcp loads the model in the background (issue 31.2): searches before it is loaded
    are degraded ("... is loading ..."), so the documents compared below wait for it.
    Returns the searches it took (they count in the server's metrics)."""
    n = 0
    while True:
        n += 1
        res = await s.call_tool("memory_search", _mcp_args(*QUERIES[0]))
        assert not res.is_error, res.content
        if LOADING not in (res.structured_content["trace"]["degraded"]["reason"] or ""):
            return n
        await anyio.sleep(0.05)


def _mcp(db: Path) -> tuple[list[dict[str, Any]], dict[str, Any], str, int]:
    env = {**os.environ, "MEMO_PROFILE": PROFILE}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memo.serve.mcp", "--db", str(db),
                                                                 "--no-backfill"], cwd=str(REPO), env=env)
    docs: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                extra["waits"] = await _until_model_loaded(s)
                for query, f in QUERIES:
                    res = await s.call_tool("memory_search", _mcp_args(query, f))
                    assert not res.is_error, res.content
                    docs.append(res.structured_content)
                extra["stats"] = (await s.call_tool("memory_stats", {})).structured_content
                got = await s.read_resource("memo://metrics")
                extra["metrics"] = got.contents[0].text

    anyio.run(main)
    return docs, extra["stats"], extra["metrics"], extra["waits"]


def _mcp_over_http(db: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    with mcp_http(db, env={"MEMO_PROFILE": PROFILE}) as url:
        async def main() -> None:
            with anyio.fail_after(120):
                async with session(url) as s:
                    await _until_model_loaded(s)
                    for query, f in QUERIES:
                        res = await s.call_tool("memory_search", _mcp_args(query, f))
                        assert not res.is_error, res.content
                        docs.append(res.structured_content)

        anyio.run(main)
    return docs


def _web_params(query: str, f: dict[str, Any]) -> list[tuple[str, str]]:
    params = [("q", query), ("now", NOW)]
    params += [("namespace", v) for v in f.get("namespaces", ())]
    params += [("kind", v) for v in f.get("kinds", ())]
    for k in ("mode", "max_tokens"):
        if k in f:
            params.append((k, str(f[k])))
    if f.get("explain"):
        params.append(("explain", "1"))
    return params


def test_cli_mcp_web_and_library_give_identical_documents(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli = [_cli(db, q, f) for q, f in QUERIES]
    mcp, stats, metrics_text, waits = _mcp(db)
    mcp_http_docs = _mcp_over_http(db)
    monkeypatch.setenv("MEMO_PROFILE", PROFILE)
    with TestClient(create_app(db, token=TOKEN), base_url="http://127.0.0.1:8765") as client:
        web = []
        for q, f in QUERIES:
            r = client.get("/api/search", params=_web_params(q, f), headers=AUTH)
            assert r.status_code == 200, r.text
            web.append(r.json())
    lib = [to_jsonable(memo.search(q, db=db, now=NOW, **f)) for q, f in QUERIES]
    for i, (query, _) in enumerate(QUERIES):
        assert cli[i]["trace"]["profile"] == PROFILE, query
        want = _strip_latency(cli[i])
        assert _strip_latency(mcp[i]) == want, f"MCP differs from the CLI for {query!r}"
        assert _strip_latency(mcp_http_docs[i]) == want, f"MCP over HTTP differs from the CLI for {query!r}"
        assert _strip_latency(web[i]) == want, f"web differs from the CLI for {query!r}"
        assert _strip_latency(lib[i]) == want, f"memo.search differs from the CLI for {query!r}"
    # The pinned now reaches recency: an aging note's age is counted from NOW.
    pool = next(r for r in cli[3]["results"] if "Pool party" in r["text"])
    assert pool["why"]["freshness"]["age_days"] == 50.5
    # Empty answers name their cause on every surface.
    assert cli[4]["cause"] == "no_scope" and cli[5]["cause"] == "budget" and not cli[5]["abstained"]
    # memo-mcp's metrics (stdio only: memory_stats and the memo://metrics resource).
    assert stats["metrics"]["memo_searches_total"][0]["labels"] == {"profile": PROFILE}
    assert stats["metrics"]["memo_searches_total"][0]["value"] == len(QUERIES) + waits
    assert f'memo_searches_total{{profile="{PROFILE}"}} {float(len(QUERIES) + waits)}' in metrics_text
    assert "memo_search_latency_seconds_bucket" in metrics_text and "memo_vectors_pending" in metrics_text


def _counter(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_metrics_scraped_after_a_degraded_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = load_registry().get(None)
    models = tmp_path / "models.toml"
    models.write_text(f'default = "gone"\n[models.gone]\nonnx = "{tmp_path / "gone.onnx"}"\nsha256 = "{real.sha256}"\n'
                      f'tokenizer = "{real.tokenizer}"\ndimensions = 384\npooling = "mean"\nmax_tokens = 256\n'
                      '[models.gone.bands]\nsemantic_floor = 0.3\nweak = 0.4\nmoderate = 0.5\nstrong = 0.6\n')
    monkeypatch.setenv("MEMO_MODELS", str(models))
    service.clear_caches()
    integrity.forget()
    db = tmp_path / "deg.db"
    conn = open_db(db)
    with write_tx(conn):
        insert_record(conn, RecordDraft(body="the connection pool is exhausted"),
                      (PassageDraft(text="the connection pool is exhausted"),))
    conn.close()
    try:
        with TestClient(create_app(db, token=TOKEN), base_url="http://127.0.0.1:8765") as client:
            assert client.get("/metrics").status_code == 401            # same guard as /api
            before = client.get("/metrics", headers=AUTH)
            assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain")
            r = client.get("/api/search", params={"q": "connection pool"}, headers=AUTH).json()
            assert r["trace"]["degraded"]["flag"] and r["results"]
            after = client.get("/metrics", headers=AUTH).text
    finally:
        service.clear_caches()
    name, labels = "memo_search_degraded_total", 'reason="arm_unavailable"'
    assert _counter(after, name, labels) == _counter(before.text, name, labels) + 1
    assert re.search(r'^memo_vectors_pending\{model="[^"]+"\} 1\.0$', after, re.M)     # from the database
    assert 'memo_arm_runs_total{arm="semantic",outcome="degraded"}' in after


def test_memo_mcp_backfill_is_memo_backfill(tmp_path: Path) -> None:
    db = tmp_path / "queued.db"
    conn = open_db(db)
    add_record(conn, RecordDraft(body="an embedded passage about teapots"))      # embedded (real model)
    for text in ("first queued passage about tomatoes", "second queued passage about kettles"):
        with write_tx(conn):
            insert_record(conn, RecordDraft(body=text), (PassageDraft(text=text),))
    conn.close()
    # Partly embedded: degraded with the count and `memo backfill`; the queued passage is
    # still found (by keyword).
    resp = memo.search("kettles", db=db)
    assert resp.trace.degraded["flag"]
    assert "2 of 3 in-scope passages have no vector" in resp.trace.degraded["reason"]
    assert "memo backfill" in resp.trace.degraded["reason"] and "kettles" in resp.results[0].text
    out = subprocess.run([str(BIN / "memo-mcp"), "backfill", "--db", str(db)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["embedded"] == 2 and doc["pending_before"] == 2 and doc["pending_after"] == 0
    assert not memo.search("kettles", db=db).trace.degraded["flag"]
    again = subprocess.run([str(BIN / "memo"), "backfill", "--db", str(db), "--json"], capture_output=True,
                           text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert set(json.loads(again.stdout)) == set(doc)       # the same report, from the same library call
    assert json.loads(again.stdout)["pending_before"] == 0
