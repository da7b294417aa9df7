"""memo.ops.prepare_pool: records prepared by worker processes are stored exactly as records
prepared in the importing process, in input order; the input is read a bounded window
ahead; a pool that fails is replaced by this process without losing a record."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path

import pytest

from memo.errors import ValidationError
from memo.ingest.files import FileItem
from memo.ops import importer, prepare_pool
from memo.ops.importer import ImportOptions, import_path
from memo.store.db import open_db
from memo.stored import RecordDraft
from tests.unit.ops.test_store_batch import _dump, _fixed_clock, _inputs

REPO = Path(__file__).resolve().parents[3]


def _import_all(tmp_path: Path, monkeypatch, db: Path | str, workers: int) -> tuple[dict, list]:  # noqa: ANN001
    """The store_batch differential's inputs (duplicates, versions, a folder, CJK...) plus a
    file with bad lines, imported with ``workers``; the tables, the reports and the progress."""
    bad = tmp_path / "in" / "bad.jsonl"
    bad.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"n{i}", "text": f"Note {i} on Kestrel DB and the Lighthouse project."})
             for i in range(40)]
    lines[7] = json.dumps({"id": "d", "text": "a dated line", "event_date": "2024-13-45"})    # rejected: bad date
    lines[20] = "{not json"                                                               # rejected when read
    lines[31] = json.dumps({"id": "s", "text": "lone \ud800 surrogate"})                      # rejected: not Unicode
    bad.write_text("\n".join(lines) + "\n")
    with monkeypatch.context() as m:
        _fixed_clock(m)
        m.setattr(prepare_pool, "CHUNK", 2)          # many chunks, a window of a few of them
        conn = open_db(db)
        out = []
        runs = [*_inputs(tmp_path / "in"), (bad, None, ImportOptions(namespace="bad", batch_size=4))]
        for path, text, opts in runs:
            if text is not None:
                path.write_text(text)
            seen: list[tuple] = []
            rep = import_path(conn, path, ImportOptions(**{**_fields(opts), "workers": workers}),
                              progress=lambda p, seen=seen: seen.append((p.done, p.total, p.current)))
            out.append((rep.added, rep.updated, rep.skipped, rep.passages, rep.rejected, rep.batches,
                        rep.record_ids, seen))
        conn.close()
    return _dump(db), out


def _fields(opts: ImportOptions) -> dict:
    return {f: getattr(opts, f) for f in opts.__slots__}


def test_workers_store_what_this_process_stores(new_db, tmp_path, monkeypatch):
    here, here_reports = _import_all(tmp_path, monkeypatch, new_db("here"), 0)
    pool, pool_reports = _import_all(tmp_path, monkeypatch, new_db("pool"), 2)
    assert pool_reports == here_reports
    for table in here:
        assert pool[table] == here[table], table
    rejected = here_reports[-1][4]
    assert [r.path for r in rejected] == ["bad.jsonl:8", "bad.jsonl:21", "bad.jsonl:32"]
    assert here_reports[-1][0] == 37 and len(here["mentions"]) > 20


def _draft(i: int) -> RecordDraft:
    return RecordDraft(body=f"Record {i} about Acme Corp.", kind="note", namespace="t",
                       import_path=f"in.jsonl:{i}")


class _Done(Future):
    def __init__(self, value=None, exc: BaseException | None = None) -> None:  # noqa: ANN001
        super().__init__()
        self.set_exception(exc) if exc is not None else self.set_result(value)


class _FakePool:
    """Runs each chunk at once (or fails: ``broken_after`` chunks, then BrokenProcessPool)."""

    made: list[_FakePool] = []

    def __init__(self, *args, broken_after: int | None = None, submit_fails: bool = False, **kw) -> None:  # noqa: ANN002, ANN003
        self.broken_after, self.submit_fails, self.sent, self.shut = broken_after, submit_fails, 0, False
        _FakePool.made.append(self)

    def submit(self, fn, *args):  # noqa: ANN001, ANN002, ANN202
        if self.submit_fails and self.sent >= 2:
            raise RuntimeError("cannot start a worker")
        self.sent += 1
        if self.broken_after is not None and self.sent > self.broken_after:
            return _Done(exc=BrokenProcessPool("a worker died"))
        return _Done(fn(*args))

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.shut = True


def _outcomes(items: list[FileItem], workers: int) -> list:
    got = list(prepare_pool.outcomes(iter(items), Path("/base"), True, workers, ahead=8))
    return [(item.rel, o) for item, o in got]


def _items(n: int) -> list[FileItem]:
    out = [FileItem(f"in.jsonl:{i}", draft=_draft(i)) for i in range(n)]
    out[5] = FileItem("in.jsonl:5", rejected="bad line")
    out[9] = FileItem("x.bin", ignored=True)
    return out


@pytest.mark.parametrize("how", [{"broken_after": 3}, {"broken_after": 0}, {"submit_fails": True}])
def test_a_failing_pool_is_replaced_by_this_process(monkeypatch, caplog, how):
    """Chunks whose worker's answer is lost, and every chunk after, are prepared here: the
    same outcomes in the same order, the pool shut down, one warning."""
    items = _items(40)
    expected = _outcomes(items, 0)
    monkeypatch.setattr(prepare_pool, "CHUNK", 3)
    monkeypatch.setattr(prepare_pool, "ProcessPoolExecutor", lambda *a, **k: _FakePool(**how))
    _FakePool.made.clear()
    with caplog.at_level(logging.WARNING, logger="memo.ops.prepare_pool"):
        assert _outcomes(items, 1) == expected
    assert _FakePool.made[0].shut
    assert len([r for r in caplog.records if "preparing here" in r.message]) == 1
    assert expected[5][1] is None and expected[9][1] is None and expected[0][1].prepared is not None
    assert expected[0][1].prepared.draft.import_path == "/base/in.jsonl:0"


def test_a_pool_that_cannot_start_leaves_the_work_here(monkeypatch, caplog):
    items = _items(20)
    expected = _outcomes(items, 0)

    def no_pool(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise OSError("no semaphores")

    monkeypatch.setattr(prepare_pool, "ProcessPoolExecutor", no_pool)
    with caplog.at_level(logging.WARNING, logger="memo.ops.prepare_pool"):
        assert _outcomes(items, 2) == expected
    assert [r.message for r in caplog.records] == ["import: cannot start preparing processes; preparing here"]


def test_a_daemonic_process_prepares_here(monkeypatch):
    """A multiprocessing.Pool's worker may not start processes: it prepares its import itself."""
    monkeypatch.setattr(prepare_pool, "ProcessPoolExecutor", lambda *a, **k: pytest.fail("a pool was made"))
    monkeypatch.setattr(prepare_pool.multiprocessing.current_process(), "daemon", True, raising=False)
    items = _items(12)
    assert _outcomes(items, 2) == _outcomes(items, 0)


def test_the_input_is_read_a_bounded_window_ahead(monkeypatch):
    """At the first outcome the pool has been sent at most ``max(WINDOW * workers, ahead /
    CHUNK)`` chunks: an import of any length holds a window of records, not its input."""
    monkeypatch.setattr(prepare_pool, "CHUNK", 4)
    monkeypatch.setattr(prepare_pool, "ProcessPoolExecutor", lambda *a, **k: _FakePool())
    read = []

    def endless():
        i = 0
        while i < 10_000:            # past the window: the test fails (an unbounded read would never end)
            read.append(i)
            yield FileItem(f"in.jsonl:{i}", draft=_draft(i))
            i += 1

    gen = prepare_pool.outcomes(endless(), Path("/base"), True, 2, ahead=40)
    first, _ = next(gen)
    assert first.rel == "in.jsonl:0"
    window = max(prepare_pool.WINDOW * 2, 40 // 4)
    assert len(read) == window * 4
    gen.close()
    assert _FakePool.made[-1].shut


def test_large_records_go_out_in_smaller_chunks(monkeypatch):
    """A chunk ends at ``CHUNK`` records or at ``CHUNK_CHARS`` of text, whichever comes first
    (a record longer than that goes alone): the window of chunks out holds little text
    whatever the records' size.  Rejected and ignored items count no text."""
    monkeypatch.setattr(prepare_pool, "CHUNK", 4)
    monkeypatch.setattr(prepare_pool, "CHUNK_CHARS", 100)

    def item(i: int, size: int) -> FileItem:
        return FileItem(f"in.jsonl:{i}", draft=replace(_draft(i), body="x" * size))

    sizes = [10, 10, 10, 10, 10, 60, 50, 500, 30, 30, 30]
    items = [item(i, n) for i, n in enumerate(sizes)] + [FileItem("bad", rejected="bad line")]
    got = [[int(x.rel.split(":")[1]) if ":" in x.rel else x.rel for x in c] for c in prepare_pool._chunks(iter(items))]
    assert got == [[0, 1, 2, 3], [4, 5, 6], [7], [8, 9, 10, "bad"]]


def test_worker_counts(monkeypatch):
    monkeypatch.setattr(prepare_pool.os, "sched_getaffinity", lambda _pid: {0})
    assert prepare_pool.default_workers() == 0                  # one core: it writes and prepares
    monkeypatch.setattr(prepare_pool.os, "sched_getaffinity", lambda _pid: set(range(16)))
    assert prepare_pool.default_workers() == prepare_pool.MAX_WORKERS
    monkeypatch.setattr(prepare_pool.os, "sched_getaffinity", lambda _pid: {0, 1})
    small, uncounted = ImportOptions(), ImportOptions()
    assert importer._workers(small, importer.PARALLEL_MIN_ITEMS - 1) == 0
    assert importer._workers(uncounted, None) == 0               # LoCoMo, chat exports: not counted
    assert importer._workers(small, importer.PARALLEL_MIN_ITEMS) == 1
    assert importer._workers(ImportOptions(workers=3), 10) == 3  # asked for: as asked


def test_a_bad_worker_count_is_refused(new_db, tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"text": "x"}) + "\n")
    conn = open_db(new_db("w"))
    for bad in (-1, importer.MAX_IMPORT_WORKERS + 1):
        with pytest.raises(ValidationError, match="workers must be 0 to"):
            import_path(conn, src, ImportOptions(workers=bad))
    conn.close()


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    """A program that imports at its top level, outside ``if __name__ == "__main__":``: the
    workers do not run it again (spawn would, as ``__mp_main__``: the script's output twice,
    the whole import done in a worker, and the importing process's report "added 0")."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"n{i}", "text": f"Note {i} on the Lighthouse project."}) + "\n"
                           for i in range(30)))
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import os
        from memo.ops.importer import ImportOptions, import_path
        from memo.store.db import open_db
        print("top level", os.getpid(), flush=True)
        rep = import_path(open_db({str(tmp_path / "u.db")!r}), {str(src)!r}, ImportOptions(workers=1))
        print("added", rep.added, "skipped", rep.skipped, flush=True)
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["top", "added"], proc.stdout
    assert lines[-1] == "added 30 skipped 0"
    assert "bootstrapping" not in proc.stderr
