"""Folder import: absolute import paths (no collisions between folders) and files deleted
from an imported folder (reported as missing; forgotten with prune)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memo import ops
from memo.errors import StoreError, ValidationError
from memo.ingest import files as files_mod
from memo.ops import store_batch as store_batch_mod
from memo.ops.importer import ImportOptions
from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.stored import RecordDraft
from tests.unit.ops.statements import is_write_begin, traced


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _imp(conn, root: Path, **kw):
    return ops.import_path(conn, root, ImportOptions(namespace=kw.pop("namespace", "kb"), **kw))


def _by_path(conn) -> dict[str, object]:
    return {r.import_path: r for r in ops.list_records(conn, ops.ListFilter(
        include_forgotten=True, include_superseded=True, limit=1000))}


def _found(conn, query: str) -> set[str]:
    prof = load_profile("rrf").with_overrides({"cutoff.gap": 1.0})
    return {r.record_id for r in search(conn, SearchRequest(query, mode="keyword", limit=50), prof).results}


def _abs(p: Path) -> str:
    return p.resolve().as_posix()


def test_same_relative_name_in_two_folders_never_collide(fresh_db, tmp_path):
    a = _write(tmp_path / "projA" / "docs", {"README.md": "alpha project readme"})
    b = _write(tmp_path / "projB" / "docs", {"README.md": "bravo project readme"})
    ra, rb = _imp(fresh_db, a), _imp(fresh_db, b)
    assert (ra.added, rb.added, rb.updated) == (1, 1, 0)
    recs = _by_path(fresh_db)
    for root in (a, b):
        rec = recs[_abs(root / "README.md")]
        assert rec.superseded_at is None and rec.forgotten_at is None
    assert ops.get(fresh_db, rb.record_ids[0]).import_path == _abs(b / "README.md")
    for root in (a, b):
        again = _imp(fresh_db, root)
        assert (again.added, again.updated, again.skipped, again.missing) == (0, 0, 1, ())


def test_changed_file_is_updated(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"a.md": "first text", "b.md": "other text"})
    old = _imp(fresh_db, root).record_ids[0]
    (root / "a.md").write_text("first text, changed")
    rep = _imp(fresh_db, root)
    assert (rep.added, rep.updated, rep.skipped, rep.missing) == (0, 1, 1, ())
    assert ops.get(fresh_db, old).superseded_by == rep.record_ids[0]


def test_deleted_file_reported_then_pruned(fresh_db, tmp_path):
    root = _write(tmp_path / "x" / "docs", {"gone.md": "zeppelin manual", "keep.md": "kept walrus notes",
                                            "sub/deep.md": "deep notes"})
    # A sibling whose name shares the prefix: never part of docs/.
    sib = _write(tmp_path / "x" / "docs2", {"other.md": "sibling zeppelin text"})
    ids = {Path(r.import_path).name: r.id for r in (_imp(fresh_db, root), _imp(fresh_db, sib))
           for r in [ops.get(fresh_db, i) for i in r.record_ids]}
    (root / "gone.md").unlink()

    rep = _imp(fresh_db, root)
    assert rep.missing == ("gone.md",) and rep.pruned == 0 and rep.skipped == 2
    assert ops.get(fresh_db, ids["gone.md"]).forgotten_at is None
    assert ids["gone.md"] in _found(fresh_db, "zeppelin")

    rep = _imp(fresh_db, root, prune=True)
    assert rep.missing == ("gone.md",) and rep.pruned == 1
    assert ops.get(fresh_db, ids["gone.md"]).forgotten_at is not None
    assert _found(fresh_db, "zeppelin") == {ids["other.md"]}
    others = [ops.get(fresh_db, ids[n]) for n in ("keep.md", "deep.md", "other.md")]
    assert all(r.forgotten_at is None and r.superseded_at is None for r in others)
    # Nothing left to report; the sibling folder has nothing missing either.
    assert _imp(fresh_db, root, prune=True).missing == ()
    assert _imp(fresh_db, sib, prune=True).missing == ()


def test_prune_only_touches_the_imports_namespace(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"gone.md": "namespaced text"})
    kept = _imp(fresh_db, root, namespace="other").record_ids[0]
    (root / "gone.md").unlink()
    assert _imp(fresh_db, root, prune=True).missing == ()
    assert ops.get(fresh_db, kept).forgotten_at is None


def test_like_wildcards_in_paths(fresh_db, tmp_path):
    root = _write(tmp_path / "50%_off", {"a.md": "percent folder text", "gone.md": "to be deleted"})
    # Would match a LIKE '.../50%_off/%' pattern: must not be counted as missing.
    look = _write(tmp_path / "50XYoff", {"b.md": "lookalike folder text"})
    _imp(fresh_db, root), _imp(fresh_db, look)
    (look / "b.md").unlink()
    (root / "gone.md").unlink()
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.missing, rep.pruned) == (("gone.md",), 1)
    assert ops.get(fresh_db, _by_path(fresh_db)[_abs(look / "b.md")].id).forgotten_at is None
    assert _imp(fresh_db, look).missing == ("b.md",)


def test_rejected_and_ignored_files_are_not_missing(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"big.md": "word " * 100, "small.md": "tiny"})
    _imp(fresh_db, root)
    (root / "pic.png").write_bytes(b"\x89PNG")
    rep = _imp(fresh_db, root, max_bytes=100, prune=True)
    assert len(rep.rejected) == 1 and rep.ignored == 1
    assert (rep.missing, rep.pruned) == ((), 0)
    assert len(ops.list_records(fresh_db)) == 2


def test_renamed_file_keeps_its_record(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"old.md": "renamed content"})
    rid = _imp(fresh_db, root).record_ids[0]
    (root / "old.md").rename(root / "new.md")
    rep = _imp(fresh_db, root, prune=True)
    # new.md is a duplicate of the old record: forgetting it would lose the text.
    assert (rep.skipped, rep.missing, rep.pruned) == (1, (), 0)
    assert ops.get(fresh_db, rid).forgotten_at is None


def test_records_the_walk_skips_are_not_missing(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"a.md": "visible", ".hidden/h.md": "hidden note",
                                      "recs.jsonl": '{"text": "jsonl line"}\n'})
    _imp(fresh_db, root / ".hidden" / "h.md")
    _imp(fresh_db, root / "recs.jsonl")
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.added, rep.missing, rep.pruned) == (1, (), 0)
    (root / "recs.jsonl").unlink()
    assert _imp(fresh_db, root).missing == ("recs.jsonl:1",)


def test_single_file_and_datasets_never_report_missing(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"a.md": "single file", "b.md": "soon gone"})
    _imp(fresh_db, root)
    (root / "b.md").unlink()
    rep = _imp(fresh_db, root / "a.md")
    assert (rep.skipped, rep.missing, rep.pruned) == (1, (), 0)
    with pytest.raises(ValidationError, match="--prune"):
        _imp(fresh_db, root / "a.md", prune=True)
    (root / "r.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ValidationError):
        _imp(fresh_db, root / "r.jsonl", prune=True)


def test_old_relative_records_are_never_missing(fresh_db, tmp_path):
    root = _write(tmp_path / "docs", {"a.md": "unchanged text"})
    # As stored by versions before absolute import paths.
    ops.add_record(fresh_db, RecordDraft(body="unchanged text", kind="doc", namespace="kb", import_path="a.md"))
    ops.add_record(fresh_db, RecordDraft(body="deleted long ago", kind="doc", namespace="kb", import_path="old.md"))
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.added, rep.skipped, rep.missing, rep.pruned) == (0, 1, (), 0)
    (root / "a.md").write_text("changed text")
    rep = _imp(fresh_db, root, prune=True)
    # Added as a new record: the relative-path record is not superseded (documented).
    assert (rep.added, rep.updated, rep.missing) == (1, 0, ())
    assert len(ops.list_records(fresh_db)) == 3


def test_incomplete_walk_prunes_nothing(fresh_db, tmp_path, monkeypatch):
    root = _write(tmp_path / "docs", {"gone.md": "really deleted", "sub/b.md": "in an unreadable folder"})
    _imp(fresh_db, root)
    (root / "gone.md").unlink()
    real_scandir = files_mod.os.scandir

    def scandir(path):
        if str(path).endswith("/sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(files_mod.os, "scandir", scandir)
    rep = _imp(fresh_db, root, prune=True)
    assert [r.path for r in rep.rejected] == ["sub"] and "not checked" in rep.rejected[0].reason
    # gone.md really is gone, but a walk that missed a folder is not trusted to say so.
    assert (rep.missing, rep.pruned) == ((), 0)
    assert len(ops.list_records(fresh_db)) == 2
    monkeypatch.setattr(files_mod.os, "scandir", real_scandir)
    assert _imp(fresh_db, root, prune=True).missing == ("gone.md",)


def test_failed_import_prunes_nothing(fresh_db, tmp_path, monkeypatch):
    root = _write(tmp_path / "docs", {"gone.md": "will be deleted", "new.md": "placeholder"})
    _imp(fresh_db, root)
    (root / "gone.md").unlink()
    (root / "new.md").write_text("changed, so the batch writes")

    def boom(*a, **k):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr("memo.ops.importer.store_items", boom)
    with pytest.raises(StoreError):
        _imp(fresh_db, root, prune=True)
    assert all(r.forgotten_at is None for r in _by_path(fresh_db).values())
    monkeypatch.setattr("memo.ops.importer.store_items", store_batch_mod.store_items)
    assert _imp(fresh_db, root, prune=True).pruned == 1


def test_prune_writes_inside_begin_immediate(fresh_db, tmp_path, monkeypatch):
    root = _write(tmp_path / "docs", {"gone.md": "bye", "stays.md": "still here"})
    _imp(fresh_db, root)
    (root / "gone.md").unlink()
    with traced(fresh_db, monkeypatch) as statements:
        assert _imp(fresh_db, root, prune=True).pruned == 1
    update = next(i for i, s in enumerate(statements) if s.startswith("UPDATE records SET forgotten_at"))
    begin = max(i for i, s in enumerate(statements[:update]) if s.startswith("BEGIN"))
    assert is_write_begin(fresh_db, statements[begin]) and statements[update + 1:].count("COMMIT") >= 1


def test_prune_refuses_a_folder_that_lists_no_files(fresh_db, tmp_path):
    # An unmounted share looks like an empty folder: prune must not forget everything.
    root = _write(tmp_path / "share", {"a.md": "alpha notes", "b.md": "beta notes"})
    ids = _imp(fresh_db, root).record_ids
    for name in ("a.md", "b.md"):
        (root / name).unlink()
    assert _imp(fresh_db, root).missing == ("a.md", "b.md")          # reported without prune
    with pytest.raises(ValidationError, match="lists no files"):
        _imp(fresh_db, root, prune=True)
    assert all(ops.get(fresh_db, i).forgotten_at is None for i in ids)
