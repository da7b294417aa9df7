"""The servers' catch-up backfill (memo/serve/pending_vectors.py, memo web and memo-mcp):
when it starts one, and that it never runs two at once, never while the server's own
embedder works, never blocks the caller, waits after a failure and stops with the server.
Fakes stand in for the embedders; tests/integration/test_web_pending.py and
tests/integration/test_mcp_pending.py run the real thing."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from memo.serve.pending_vectors import PendingVectors


class Main:
    """The server's background embedder: running, idle or not."""

    def __init__(self, idle: bool = True, running: bool = True) -> None:
        self.idle, self.running = idle, running
        self.asked: list[float | None] = []

    def wait_idle(self, timeout: float | None = None) -> bool:
        self.asked.append(timeout)
        return self.idle


class Backfill:
    """A one-shot backfill embedder whose backfill lasts until ``release`` is set."""

    def __init__(self, release: threading.Event, error: str | None = None) -> None:
        self.release, self.error = release, error
        self.last_error: str | None = None
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.running = False

    def start(self) -> Backfill:
        self.running = True
        self.started.set()
        return self

    def wait_idle(self, timeout: float | None = None) -> bool:
        self.release.wait(timeout)
        self.last_error = self.error
        return True

    def stop(self, *, drain: bool = True, timeout: float = 10.0) -> bool:
        self.release.set()
        self.running = False
        self.stopped.set()
        return True


class Factory:
    def __init__(self, error: str | None = None) -> None:
        self.release = threading.Event()
        self.error = error
        self.made: list[Backfill] = []

    def __call__(self, db_path: Any) -> Backfill:
        self.made.append(Backfill(self.release, self.error))
        return self.made[-1]


def _pending(main: Main | None, factory: Factory, **kw: Any) -> PendingVectors:
    return PendingVectors("memo.db", lambda: main, make=factory, **kw)


def test_a_poke_starts_one_backfill_and_never_a_second_beside_it() -> None:
    factory = Factory()
    pv = _pending(Main(), factory, min_gap=0.0)
    t0 = time.monotonic()
    assert pv.poke() is True
    assert time.monotonic() - t0 < 0.5            # the caller (a search) never waits for it
    assert factory.made and factory.made[0].started.wait(5)
    assert [pv.poke() for _ in range(5)] == [False] * 5    # one runs: no second one
    assert pv.runs == 1 and len(factory.made) == 1
    factory.release.set()
    assert pv.wait(5)
    assert factory.made[0].stopped.is_set()
    assert pv.poke() is True and pv.runs == 2     # done: the next answer may start another
    assert pv.wait(5)


def test_no_backfill_while_the_servers_embedder_works_or_without_one() -> None:
    factory = Factory()
    factory.release.set()
    busy = Main(idle=False)
    assert _pending(busy, factory).poke() is False
    assert busy.asked == [0]                       # asked without waiting
    assert _pending(None, factory).poke() is False             # create_app alone: no embedder
    assert _pending(Main(running=False), factory).poke() is False
    assert factory.made == []


def test_after_a_failed_backfill_it_waits_before_trying_again() -> None:
    factory = Factory(error="unknown embedding model 'nope'")
    factory.release.set()
    pv = _pending(Main(), factory, min_gap=0.0, retry_after=0.3)
    assert pv.poke() and pv.wait(5)
    assert pv.poke() is False                      # failed: not on every search
    time.sleep(0.35)
    assert pv.poke() is True and pv.wait(5)
    assert pv.runs == 2


def test_runs_start_at_most_every_min_gap() -> None:
    factory = Factory()
    factory.release.set()
    pv = _pending(Main(), factory, min_gap=60.0)
    assert pv.poke() and pv.wait(5)
    assert pv.poke() is False and pv.runs == 1


def test_close_stops_the_running_backfill_and_starts_no_more() -> None:
    factory = Factory()
    pv = _pending(Main(), factory, min_gap=0.0)
    assert pv.poke() and factory.made[0].started.wait(5)
    pv.close(timeout=5)
    assert factory.made[0].stopped.is_set() and not pv.busy
    assert pv.poke() is False and len(factory.made) == 1


@pytest.mark.parametrize("stats, expected", [
    ({"pending_vectors": {"m1": 2}, "pending_fact_vectors": {"m1": 0}}, True),
    ({"pending_vectors": {"m1": 0}, "pending_fact_vectors": {"m1": 3}}, True),
    ({"pending_vectors": {"m1": 0, "old-model": 40}, "pending_fact_vectors": {}}, False),   # not ours
    ({"pending_vectors": {"m1": 0}}, False),
])
def test_stats_show_pending_vectors_of_the_embedding_model_only(stats: dict[str, Any], expected: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pv = _pending(Main(), Factory())
    monkeypatch.setattr(pv, "model_id", lambda: "m1")
    assert pv.stats_pending(stats) is expected


def test_no_model_no_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMO_MODEL", "no-such-model")
    pv = _pending(Main(), Factory())
    assert pv.model_id() is None
    assert pv.stats_pending({"pending_vectors": {"no-such-model": 5}}) is False


def test_a_backfill_that_cannot_even_start_counts_as_failed() -> None:
    def broken(db_path: Any) -> Backfill:
        raise OSError("the database is gone")

    pv = PendingVectors("memo.db", lambda: Main(), make=broken, min_gap=0.0, retry_after=60.0)
    assert pv.poke() and pv.wait(5)
    assert pv.poke() is False and pv.runs == 1     # waits as after any failure


def _search_doc(degraded: bool, cause: str | None = None) -> dict[str, Any]:
    return {"results": [], "cause": cause, "trace": {"degraded": {"flag": degraded, "reason": None}}}


@pytest.mark.parametrize("doc, expected", [
    (_search_doc(True), True),                          # some in-scope passages have no vector yet
    (_search_doc(False, "vectors_pending"), True),      # empty: the answer may be among them
    (_search_doc(False, "abstained"), False),
    (_search_doc(False), False),
])
def test_a_search_answer_pokes_when_it_shows_queued_vectors(doc: dict[str, Any], expected: bool) -> None:
    factory = Factory()
    factory.release.set()
    pv = _pending(Main(), factory, min_gap=0.0)
    assert pv.after_search(doc) is expected and pv.runs == int(expected)
    assert pv.wait(5)


def test_a_stats_answer_pokes_only_in_a_server_with_an_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = Factory()
    factory.release.set()
    stats = {"pending_vectors": {"m1": 2}}
    idle = _pending(None, factory)                       # library use: the registry is not even read
    monkeypatch.setattr(idle, "model_id", lambda: pytest.fail("read the registry without an embedder"))
    assert idle.after_stats(stats) is False
    pv = _pending(Main(), factory, min_gap=0.0)
    monkeypatch.setattr(pv, "model_id", lambda: "m1")
    assert pv.after_stats({"pending_vectors": {"m1": 0}}) is False
    assert pv.after_stats(stats) is True and pv.wait(5)
