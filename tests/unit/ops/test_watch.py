"""``memo import --watch`` (memo.ops.watch): a folder kept imported as it changes, and the two
states of a folder that must never run an import with --prune (gone, or listing nothing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memo import ops
from memo.errors import ValidationError
from memo.ops import ListFilter
from memo.ops.importer import ImportOptions
from memo.ops.reports import ImportReport
from memo.ops.watch import Waiting, listing, watch


def _until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


class _Watch:
    """watch() on a thread, its reports and waits collected."""

    def __init__(self, conn, path: Path, opts: ImportOptions) -> None:
        self.reports: list[ImportReport] = []
        self.waits: list[Waiting] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

        def run() -> None:
            try:
                watch(conn, path, opts, interval=0.1, stop=self.stop, on_import=self.reports.append,
                      on_wait=self.waits.append)
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def imports(self, n: int) -> ImportReport:
        _until(lambda: len(self.reports) >= n or self.error is not None)
        assert self.error is None
        return self.reports[n - 1]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _titles(conn) -> set[str]:
    return {r.title for r in ops.list_records(conn, ListFilter())}


def test_a_watched_folder_follows_adds_edits_moves_and_deletes(fresh_db, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "alpha.md").write_text("Alpha is the first note.\n")
    w = _Watch(fresh_db, vault, ImportOptions(prune=True))
    try:
        assert w.imports(1).added == 1
        (vault / "beta.md").write_text("Beta arrives while watched.\n")
        added = w.imports(2)
        assert (added.added, added.skipped, added.missing) == (1, 0, ())     # that file alone
        (vault / "beta.md").write_text("Beta was edited.\n")
        assert w.imports(3).updated == 1
        (vault / "notes").mkdir()
        (vault / "alpha.md").rename(vault / "notes" / "alpha.md")
        moved = w.imports(4)
        assert (moved.added, moved.updated) == (0, 1) and "moved from alpha.md" in moved.notices[0].reason
        (vault / "beta.md").unlink()
        gone = w.imports(5)
        assert (gone.missing, gone.pruned) == (("beta.md",), 1)
        time.sleep(0.3)
        assert len(w.reports) == 5            # nothing changed: no import
        (vault / "gamma.md").write_text("Gamma, soon emptied.\n")
        w.imports(6)
        (vault / "gamma.md").write_text("")
        emptied = w.imports(7)
        assert (emptied.emptied, emptied.pruned) == (("gamma.md",), 1)
    finally:
        w.close()
    assert _titles(fresh_db) == {"alpha"}


def test_an_emptied_or_vanished_folder_runs_no_import(fresh_db, tmp_path: Path) -> None:
    """An unmounted disk or a renamed vault would otherwise be pruned to nothing."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("A note that must survive an unmounted disk.\n")
    w = _Watch(fresh_db, vault, ImportOptions(prune=True))
    try:
        w.imports(1)
        (vault / "a.md").rename(tmp_path / "a.md")
        _until(lambda: len(w.waits) == 1)
        assert (w.waits[0].state, len(w.reports)) == ("empty", 1)
        vault.rename(tmp_path / "elsewhere")
        _until(lambda: len(w.waits) == 2)
        assert w.waits[1].state == "gone"
        time.sleep(0.3)
        assert len(w.waits) == 2 and len(w.reports) == 1     # said once each, nothing imported
        (tmp_path / "elsewhere").rename(vault)
        (tmp_path / "a.md").rename(vault / "a.md")
        time.sleep(0.3)
        assert len(w.reports) == 1            # back as it was: nothing to import
        (vault / "b.md").write_text("And a new one.\n")
        assert w.imports(2).added == 1
    finally:
        w.close()
    assert _titles(fresh_db) == {"a", "b"}


def test_a_changed_file_is_read_as_the_folder_import_reads_it(fresh_db, tmp_path: Path) -> None:
    """A symlink out of the folder is refused as the folder import refuses it (the watch
    imported /etc/passwd through one), and a file of a type the import ignores (a JSONL, which
    imported alone would be read as records; Thumbs.db) is no change at all."""
    vault = tmp_path / "vault"
    vault.mkdir()
    outside = tmp_path / "secret.md"
    outside.write_text("A file outside the watched folder.\n")
    (vault / "a.md").write_text("A note.\n")
    w = _Watch(fresh_db, vault, ImportOptions())
    try:
        w.imports(1)
        (vault / "records.jsonl").write_text('{"body": "a record from a JSONL file"}\n')
        (vault / "Thumbs.db").write_bytes(b"\0" * 64)
        time.sleep(0.5)
        assert len(w.reports) == 1
        (vault / "link.md").symlink_to(outside)
        got = w.imports(2)
        assert (got.added, [(r.path, r.reason) for r in got.rejected]) == (
            0, [("link.md", "symlink points outside the import root")])
    finally:
        w.close()
    assert _titles(fresh_db) == {"a"}


def test_a_save_that_empties_a_file_first_is_seen_whole(fresh_db, tmp_path: Path) -> None:
    """An editor that truncates a file and writes it again: with --prune the empty moment
    forgot the record and the next look stored the text under a new id."""
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "a.md"
    note.write_text("First version of the note.\n")
    w = _Watch(fresh_db, vault, ImportOptions(prune=True))
    try:
        first = w.imports(1).record_ids[0]
        note.write_text("")
        time.sleep(0.12)                   # one look sees it empty, the next one full again
        note.write_text("Second version of the note.\n")
        got = w.imports(2)
        assert (got.updated, got.pruned) == (1, 0)
    finally:
        w.close()
    assert ops.get(fresh_db, first).superseded_by == got.record_ids[0]


def test_only_files_and_folders_are_watched(fresh_db, tmp_path: Path) -> None:
    lines = tmp_path / "records.jsonl"
    lines.write_text('{"body": "a record"}\n')
    stop = threading.Event()
    with pytest.raises(ValidationError, match="read as jsonl, which is imported once"):
        watch(fresh_db, lines, ImportOptions(), stop=stop, on_import=lambda r: None)
    with pytest.raises(ValidationError, match="--interval"):
        watch(fresh_db, tmp_path, ImportOptions(), interval=0, stop=stop, on_import=lambda r: None)
    assert ops.list_records(fresh_db, ListFilter()) == ()


def test_the_listing_is_what_the_import_reads(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    (tmp_path / ".hidden.md").write_text("h")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.md").write_text("x")
    (tmp_path / "Templates").mkdir()
    (tmp_path / "Templates" / "t.md").write_text("t")
    assert set(listing(tmp_path, ("Templates",))) == {"a.md"}
    assert listing(tmp_path / "nowhere") is None


def test_an_import_the_write_lock_holds_off_is_tried_again(fresh_db, tmp_path: Path, monkeypatch) -> None:
    """Another process writing past the busy timeout ended the watch (exit 6)."""
    from memo.errors import StoreBusy
    from memo.ops import watch as watch_module

    real_import = watch_module.import_path
    calls = {"n": 0}

    def busy_once(conn, path, opts):
        calls["n"] += 1
        if calls["n"] == 2:
            raise StoreBusy("database stayed locked for 30 s")
        return real_import(conn, path, opts)

    monkeypatch.setattr(watch_module, "import_path", busy_once)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("A note.\n")
    w = _Watch(fresh_db, vault, ImportOptions())
    try:
        w.imports(1)
        (vault / "b.md").write_text("Written while the lock was held.\n")
        assert w.imports(2).added == 1
        assert [x.state for x in w.waits] == ["busy"] and calls["n"] == 3
    finally:
        w.close()


def test_a_folder_gone_between_the_look_and_the_import_is_waited_for(fresh_db, tmp_path: Path, monkeypatch) -> None:
    from memo.ops import watch as watch_module

    real_import = watch_module.import_path
    vault = tmp_path / "vault"
    calls = {"n": 0}

    def vanishing(conn, path, opts):
        calls["n"] += 1
        if calls["n"] == 2:
            vault.rename(tmp_path / "away")
            raise ValidationError(f"no such file or folder: {vault}")
        return real_import(conn, path, opts)

    monkeypatch.setattr(watch_module, "import_path", vanishing)
    vault.mkdir()
    (vault / "a.md").write_text("A note.\n")
    w = _Watch(fresh_db, vault, ImportOptions(prune=True))
    try:
        w.imports(1)
        (vault / "b.md").write_text("Another.\n")
        _until(lambda: len(w.waits) == 1 or w.error is not None)
        assert w.error is None and w.waits[0].state == "gone"
    finally:
        w.close()
    assert _titles(fresh_db) == {"a"}
