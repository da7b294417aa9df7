"""Start-up (issue 12.8): a keyword search loads no numpy, onnxruntime or vector matrix; a
cold hybrid search reports model and matrix loading apart from its own latency."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTES = REPO / "datasets" / "sample" / "notes"
HEAVY = ("numpy", "onnxruntime", "scipy", "memo.embed.service", "memo.embed.index", "memo.embed.model")


def _memo(*args: str, db: Path, importtime: bool = False, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMO_DB=str(db), **extra_env)
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "memo", *args]
    res = subprocess.run(cmd, env=env, cwd=db.parent, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def _imported(stderr: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", stderr, re.M)}


def test_keyword_search_loads_no_numpy_onnxruntime_or_matrix(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    _memo("import", str(NOTES), "--json", db=db)           # embeds: the database has vectors
    res = _memo("search", "what to do when the database is locked", "--mode", "keyword", "--json",
                db=db, importtime=True)
    doc = json.loads(res.stdout)
    assert doc["results"] and doc["trace"]["mode"] == "keyword"
    assert not {k for k in doc["trace"]["stage_ms"] if k.endswith("_load")}
    loaded = _imported(res.stderr)
    heavy = sorted(m for m in loaded if m in HEAVY or m.split(".")[0] in ("numpy", "onnxruntime", "scipy"))
    assert not heavy, ("`memo search --mode keyword` imported " + ", ".join(heavy[:8]) + ": import them inside "
                       "the function that needs the model or the matrix (see memo/retrieve/arms/semantic.py)")
    # exact mode too
    res = _memo("search", "ERR_CONN_RESET", "--mode", "exact", "--json", db=db, importtime=True)
    assert not {m for m in _imported(res.stderr) if m.split(".")[0] in ("numpy", "onnxruntime")}


def test_cold_hybrid_search_reports_loading_apart(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    _memo("import", str(NOTES), "--json", db=db)
    # The model's session made the slow way (no cached optimised graph: onnxruntime optimises
    # it, ~130 ms and more): the search waits for it, and that wait must show as model_load,
    # not inside the arms stage.  (From the cached graph the session is ready before the
    # search asks for it, and model_load is a fraction of a millisecond.)
    doc = json.loads(_memo("search", "what to do when the database is locked", "--json", db=db,
                           MEMO_ONNX_CACHE="off").stdout)
    trace = doc["trace"]
    assert not trace["degraded"]["flag"], trace
    stages = trace["stage_ms"]
    assert stages["model_load"] > 0 and stages["matrix_load"] > 0, stages
    search_stages = sum(v for k, v in stages.items() if not k.endswith("_load"))
    # latency_ms is the search alone: its stages, not the loads
    assert trace["latency_ms"] >= search_stages - 1.0
    assert trace["latency_ms"] < search_stages + 50.0, (trace["latency_ms"], stages)
    assert stages["arms"] < stages["model_load"]


def test_warm_service_reports_no_second_load(tmp_path: Path) -> None:
    """In one process (the servers), the second search loads nothing."""
    from memo.embed.backfill import backfill
    from memo.embed.service import semantic_services
    from memo.ops import import_path
    from memo.ops.importer import ImportOptions
    from memo.retrieve import SearchRequest, search
    from memo.store.db import open_db

    db = tmp_path / "warm.db"
    conn = open_db(db)
    import_path(conn, NOTES, ImportOptions())
    backfill(conn, progress=False)
    services = semantic_services(conn)
    first = search(conn, SearchRequest("database is locked"), "rrf", services)
    second = search(conn, SearchRequest("database is locked"), "rrf", services)
    conn.close()
    assert "matrix_load" in first.trace.stage_ms
    assert not {k for k in second.trace.stage_ms if k.endswith("_load")}, second.trace.stage_ms


def test_mcp_answers_initialize_before_importing_the_search_stack(tmp_path: Path) -> None:
    """Issue 31.2: memo-mcp answers initialize having imported the SDK and the few memo
    modules that open the database and register the tools: not numpy, onnxruntime, scipy,
    the search pipeline, the write path or the web UI.  The warm-up is held at its gate
    ($MEMO_WARMUP_GATE) and --no-backfill keeps the embedder from importing anything before
    a write, so every module in the log was imported to answer (or to shut down)."""
    env = dict(os.environ, MEMO_WARMUP_GATE=str(tmp_path / "never"))
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "memo.serve.mcp", "--db", str(tmp_path / "m.db"),
                             "--no-backfill"], env=env, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(init) + "\n").encode())
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "memo", reply
    _, err = proc.communicate(timeout=60)          # stdin closed: the server exits
    loaded = _imported(err.decode())
    assert "memo.serve.mcp_tools" in loaded          # the log is the server's
    heavy = sorted(m for m in loaded if m.split(".")[0] in ("numpy", "onnxruntime", "scipy", "tokenizers")
                   or m.startswith(("memo.retrieve", "memo.ops", "memo.embed.service", "memo.graph", "memo.serve.web",
                                    "memo.search_api", "memo.ingest")))
    assert not heavy, "memo-mcp imported before answering initialize: " + ", ".join(heavy[:12])


def test_mcp_backfill_never_imports_the_sdk(tmp_path: Path) -> None:
    """`memo-mcp backfill` embeds and exits: the command imports the SDK only to serve."""
    from memo.store.db import open_db

    open_db(tmp_path / "m.db").close()          # an existing database: a missing one is exit 6
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memo.serve.mcp", "backfill", "--db",
                           str(tmp_path / "m.db")], cwd=REPO, capture_output=True, timeout=120,
                          env=dict(os.environ, MEMO_ONNX_CACHE="off"))
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert json.loads(proc.stdout)["embedded"] == 0
    loaded = _imported(proc.stderr.decode())
    assert "memo.embed.backfill" in loaded                          # the log is the command's
    sdk = sorted(m for m in loaded if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio"))
    assert not sdk, "memo-mcp backfill imported " + ", ".join(sdk[:12])
