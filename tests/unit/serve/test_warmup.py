"""The servers' background warm-up (issue 31.2, memo.embed.warmup): until it has finished a
search runs without the semantic arm, degraded with the loading reason, and the keyword
arm answers; once it has finished the real semantic service decides (a model that failed
to load keeps the searches degraded with its own reason, never an exception)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memo import metrics
from memo.embed import service
from memo.embed.warmup import LOADING, LoadingService, Warmup
from memo.errors import ModelUnavailable
from memo.serve.mcp_tools import MemoTools

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _fresh_caches():
    service.clear_caches()
    yield
    service.clear_caches()


def _gated() -> tuple[threading.Event, object]:
    gate = threading.Event()

    def load(warmup: Warmup) -> None:
        warmup.model_id = "some-model"
        assert gate.wait(30)
    return gate, load


def test_loading_until_the_thread_finishes():
    gate, load = _gated()
    warm = Warmup("unused.db", load=load)
    assert not warm.loading                      # never started: not loading (load on first search)
    warm.start()
    assert warm.loading and not warm.wait(0.05)
    ok, why = warm.stand_in().status()
    assert not ok and LOADING in why
    gate.set()
    assert warm.wait(10) and not warm.loading and warm.error is None


def test_a_failed_load_ends_the_warm_up_with_its_reason():
    def load(warmup: Warmup) -> None:
        raise ModelUnavailable("model file missing: /nowhere/model.onnx")

    warm = Warmup("unused.db", load=load).start()
    assert warm.wait(10) and not warm.loading
    assert "model file missing" in warm.error


def test_stand_in_never_embeds():
    stand_in = LoadingService("m")
    assert stand_in.index is None and stand_in.fact_index is None
    with pytest.raises(ModelUnavailable, match=re.escape(LOADING)):
        stand_in.embed_query("anything")


def _degraded_runs() -> float:
    return metrics.SEARCH_DEGRADED.labels(reason="arm_unavailable")._value.get()


def test_search_while_loading_is_keyword_only_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))    # after the warm-up: no model
    tools = MemoTools(tmp_path / "m.db")
    try:
        rid = tools.add("the proxy drops idle connections after ninety seconds", wait=True)["record_id"]
        gate, load = _gated()
        tools.warmup = Warmup(tools.db_path, load=load).start()
        before = _degraded_runs()
        res = tools.search("proxy idle connections", response_format="explain")
        degraded = res["trace"]["degraded"]
        assert degraded["flag"] and LOADING in degraded["reason"] and "some-model" in degraded["reason"]
        assert res["results"] and res["results"][0]["record_id"] == rid
        assert set(res["results"][0]["why"]["arms"]) == {"keyword"}
        semantic = next(a for a in res["trace"]["arms"] if a["name"] == "semantic")
        assert not semantic["ran"] and LOADING in semantic["reason"]
        assert _degraded_runs() == before + 1
        assert tools._services is None           # the stand-in is not kept: the next search asks again

        gate.set()
        assert tools.warmup.wait(10)
        # Finished: the real service decides.  Here the registry has no model, so the search
        # stays degraded, with that reason instead of "loading".
        res = tools.search("proxy idle connections")
        degraded = res["trace"]["degraded"]
        assert degraded["flag"] and LOADING not in degraded["reason"], degraded
        assert res["results"][0]["record_id"] == rid
    finally:
        tools.close()


def test_real_warm_up_without_a_model_keeps_searches_degraded(tmp_path, monkeypatch):
    """The server's own warm-up (MemoTools.start_warmup) when the model cannot be
    resolved: it finishes with the error, and searches report it, without raising."""
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    tools = MemoTools(tmp_path / "m.db")
    try:
        tools.add("tomatoes need full sun", wait=True)
        warm = tools.start_warmup()
        assert tools.start_warmup() is warm      # once
        assert warm.wait(30) and warm.error
        res = tools.search("tomatoes sun")
        assert res["results"] and res["trace"]["degraded"]["flag"]
        assert LOADING not in res["trace"]["degraded"]["reason"]
    finally:
        tools.close()


def test_deferred_imports_from_several_threads_at_once(tmp_path):
    """The server's deferred imports run on several threads at once (warm-up, embedder, tool
    calls).  Two first imports of memo.retrieve / memo.ops in parallel hand one thread a
    partially initialised module or a _DeadlockError unless they go through memo.deferred
    (one at a time).  A fresh interpreter: in this one they are imported already."""
    script = tmp_path / "race.py"
    script.write_text(
        "import threading\n"
        "from memo.serve import mcp_tools\n"
        "from memo import deferred\n"
        "errors = []\n"
        "def run(names):\n"
        "    try:\n"
        "        deferred.load(*names)\n"
        "        from memo.ops.guard import store_errors  # noqa: F401\n"
        "        from memo.retrieve import SearchRequest  # noqa: F401\n"
        "    except Exception as exc:\n"
        "        errors.append(repr(exc))\n"
        "orders = [mcp_tools.SEARCH_DEFERRED, ('memo.ops.guard', 'memo.retrieve'), ('memo.retrieve.services',),\n"
        "          ('memo.ops',), ('memo.embed.backfill',), mcp_tools.DEFERRED]\n"
        "threads = [threading.Thread(target=run, args=(o,)) for o in orders]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(errors)\n")
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for _ in range(3):
        out = subprocess.run([sys.executable, str(script)], cwd=repo, capture_output=True, text=True, timeout=120,
                             env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == "[]", out.stdout
