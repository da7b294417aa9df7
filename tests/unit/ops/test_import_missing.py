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
    """A rename supersedes the record with the file's new path (memo.ops.file_moves); the
    text keeps a live record and the old path is not missing."""
    root = _write(tmp_path / "docs", {"old.md": "renamed content"})
    rid = _imp(fresh_db, root).record_ids[0]
    (root / "old.md").rename(root / "new.md")
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.added, rep.updated, rep.skipped, rep.missing, rep.pruned) == (0, 1, 0, (), 0)
    new = ops.get(fresh_db, rep.record_ids[0])
    assert new.import_path == _abs(root / "new.md") and new.title == "new"     # a note is known by its name
    old = ops.get(fresh_db, rid)
    assert old.forgotten_at is None and old.superseded_by == new.id
    assert [(n.path, n.reason) for n in rep.notices] == [
        ("new.md", f"moved from old.md: the same text as record {rid}, whose file is gone, "
                   "so this file's version supersedes it")]
    assert _found(fresh_db, "renamed content") == {new.id}
    again = _imp(fresh_db, root, prune=True)                         # settled: nothing more to do
    assert (again.updated, again.skipped, again.missing, again.notices) == (0, 1, (), ())


def _sections(conn, record_id: str) -> list[str]:
    return [p.section for p in ops.get(conn, record_id).passages]


CODE = 'def shared_helper():\n    """Return the pelican count."""\n    return 42\n'


def test_moved_code_file_takes_its_new_module_name(fresh_db, tmp_path):
    """The tester's repro: a code file moved to another folder kept naming the old path and
    module (section a.x.shared_helper) in every search result."""
    root = _write(tmp_path / "proj", {"a/x.py": CODE})
    rid = _imp(fresh_db, root).record_ids[0]
    assert _sections(fresh_db, rid) == ["a.x.shared_helper"]
    (root / "b").mkdir()
    (root / "a" / "x.py").rename(root / "b" / "x.py")
    rep = _imp(fresh_db, root)
    assert (rep.added, rep.updated, rep.skipped, rep.missing) == (0, 1, 0, ())
    new = rep.record_ids[0]
    assert ops.get(fresh_db, new).import_path == _abs(root / "b" / "x.py")
    assert _sections(fresh_db, new) == ["b.x.shared_helper"]
    assert ops.get(fresh_db, rid).superseded_by == new
    assert _found(fresh_db, "pelican count") == {new}


def test_a_duplicate_of_a_file_still_there_is_not_moved(fresh_db, tmp_path):
    root = _write(tmp_path / "dup", {"a/x.py": CODE, "b/x.py": CODE})
    first = _imp(fresh_db, root)
    assert (first.added, first.skipped) == (1, 1)
    rep = _imp(fresh_db, root)
    assert (rep.added, rep.updated, rep.skipped, rep.missing) == (0, 0, 2, ())
    rid = first.record_ids[0]        # b/x.py's text is a/x.py's record: said at every import
    assert [(n.path, n.reason) for n in rep.notices] == [
        ("b/x.py", f"the same text as {_abs(root / 'a' / 'x.py')}'s record {rid}: stored once, there")]
    assert ops.get(fresh_db, rid).import_path == _abs(root / "a" / "x.py")


def test_prune_after_deleting_one_of_two_identical_files_follows_the_survivor(fresh_db, tmp_path):
    root = _write(tmp_path / "dup", {"a/x.py": CODE, "b/x.py": CODE})
    rid = _imp(fresh_db, root).record_ids[0]                       # b/x.py skipped as its duplicate
    (root / "a" / "x.py").unlink()
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.added, rep.updated, rep.skipped, rep.missing, rep.pruned) == (0, 1, 0, (), 0)
    new = ops.get(fresh_db, rep.record_ids[0])
    assert new.import_path == _abs(root / "b" / "x.py") and _sections(fresh_db, new.id) == ["b.x.shared_helper"]
    assert ops.get(fresh_db, rid).forgotten_at is None and ops.get(fresh_db, rid).superseded_by == new.id
    assert _found(fresh_db, "pelican count") == {new.id}           # the only live copy was never forgotten


def test_a_move_onto_a_path_with_a_record_supersedes_both(fresh_db, tmp_path):
    """mv a.md b.md over an imported b.md: b.md's record of its old text would stay live
    beside the moved one."""
    root = _write(tmp_path / "docs", {"a.md": "alpha heron text", "b.md": "bravo heron text"})
    ids = {Path(ops.get(fresh_db, i).import_path).name: i for i in _imp(fresh_db, root).record_ids}
    (root / "a.md").replace(root / "b.md")
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.added, rep.updated, rep.skipped, rep.missing) == (0, 1, 0, ())
    assert ops.get(fresh_db, ids["a.md"]).superseded_by == rep.record_ids[0]
    assert ops.get(fresh_db, ids["b.md"]).superseded_by == rep.record_ids[0]
    assert "it also supersedes " + ids["b.md"] in rep.notices[0].reason
    assert _found(fresh_db, "heron") == {rep.record_ids[0]}


def test_a_move_with_kind_re_splits_the_moved_record(fresh_db, tmp_path):
    """With --kind the moved record is the file's own: re-split as asked, not skipped with
    the note for a text another record holds as another kind."""
    root = _write(tmp_path / "docs", {"a.md": "Ann: the pelican count is 42.\nBob: noted.\n"})
    rid = _imp(fresh_db, root).record_ids[0]
    (root / "a.md").rename(root / "chat.md")
    rep = _imp(fresh_db, root, kind="conversation")
    assert (rep.updated, rep.skipped) == (1, 0)
    assert ops.get(fresh_db, rep.record_ids[0]).kind == "conversation"
    assert ops.get(fresh_db, rid).superseded_by == rep.record_ids[0]


def _deny_folder(monkeypatch, name: str) -> None:
    """The walk cannot read folder ``name`` (permission denied), so it is incomplete."""
    real_scandir = files_mod.os.scandir

    def scandir(path):
        if str(path).endswith(f"/{name}"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(files_mod.os, "scandir", scandir)


def test_an_incomplete_walk_moves_nothing(fresh_db, tmp_path, monkeypatch):
    root = _write(tmp_path / "docs", {"old.md": "walrus notes", "sub/b.md": "in an unreadable folder"})
    rid = _imp(fresh_db, root).record_ids[0]
    (root / "old.md").rename(root / "new.md")
    _deny_folder(monkeypatch, "sub")
    rep = _imp(fresh_db, root)
    assert (rep.updated, rep.skipped) == (0, 1)                      # not trusted to say what is gone
    assert ops.get(fresh_db, rid).superseded_at is None


def test_emptied_file_is_reported_and_pruned(fresh_db, tmp_path):
    root = _write(tmp_path / "proj", {"sub/ledger.md": "# Ledger\n\nThe ostrich ledger lists feathers.\n",
                                      "keep.md": "kept walrus notes"})
    ids = {Path(ops.get(fresh_db, i).import_path).name: i for i in _imp(fresh_db, root).record_ids}
    (root / "sub" / "ledger.md").write_text("")
    rep = _imp(fresh_db, root)
    assert (rep.missing, rep.emptied, rep.pruned) == (("sub/ledger.md",), ("sub/ledger.md",), 0)
    assert [(r.path, r.reason) for r in rep.ignored_files] == [("sub/ledger.md", "empty file (no text to import)")]
    assert [(n.path, n.reason) for n in rep.notices] == [
        ("sub/ledger.md", f"now empty: record {ids['ledger.md']} still holds its old text, which stays "
                          "searchable; `memo import --prune` forgets it")]
    assert ids["ledger.md"] in _found(fresh_db, "ostrich ledger")
    (root / "sub" / "ledger.md").write_text("  \n\n")                   # whitespace only: as empty
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.missing, rep.emptied, rep.pruned) == (("sub/ledger.md",), ("sub/ledger.md",), 1)
    assert "was forgotten (--prune" in rep.notices[0].reason
    assert ops.get(fresh_db, ids["ledger.md"]).forgotten_at is not None
    assert ops.get(fresh_db, ids["keep.md"]).forgotten_at is None
    assert _found(fresh_db, "ostrich ledger") == set()
    again = _imp(fresh_db, root, prune=True)                            # forgotten: only ignored now
    assert (again.missing, again.emptied, again.notices, again.ignored) == ((), (), (), 1)


def test_an_empty_file_without_a_record_is_only_ignored(fresh_db, tmp_path):
    root = _write(tmp_path / "pkg", {"__init__.py": "", "mod.py": CODE})
    for _ in range(2):
        rep = _imp(fresh_db, root, prune=True)
        assert (rep.ignored, rep.missing, rep.emptied, rep.notices, rep.pruned) == (1, (), (), (), 0)


def test_an_emptied_file_whose_text_another_file_holds_keeps_its_record(fresh_db, tmp_path):
    """The same-text rule: b.md was skipped as a duplicate of a.md's record, which is then
    the only live copy of b.md's text; --prune does not forget it, a notice says why."""
    root = _write(tmp_path / "docs", {"a.md": "twin pelican text", "b.md": "twin pelican text"})
    rid = _imp(fresh_db, root).record_ids[0]
    (root / "a.md").write_text("")
    rep = _imp(fresh_db, root, prune=True)
    assert (rep.missing, rep.emptied, rep.pruned) == ((), (), 0)
    assert [(n.path, n.reason) for n in rep.notices] == [
        ("b.md", f"the same text as {_abs(root / 'a.md')}'s record {rid}: stored once, there"),
        ("a.md", f"now empty, but b.md has the same text (skipped as a duplicate of record {rid}), so {rid} "
                 f"stays live under this path; to store it from b.md, `memo forget {rid}` and import again")]
    assert _found(fresh_db, "twin pelican") == {rid}


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
    _deny_folder(monkeypatch, "sub")
    rep = _imp(fresh_db, root, prune=True)
    assert [r.path for r in rep.rejected] == ["sub"] and "not checked" in rep.rejected[0].reason
    # gone.md really is gone, but a walk that missed a folder is not trusted to say so.
    assert (rep.missing, rep.pruned) == ((), 0)
    assert len(ops.list_records(fresh_db)) == 2
    monkeypatch.undo()                                               # the folder readable again
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


def test_a_moved_folder_takes_its_records_along(fresh_db, tmp_path):
    """The vault moved to a new place: its files' records follow them (they were skipped as
    duplicates, kept naming the old paths, and an edit then added a second live record)."""
    old = _write(tmp_path / "old", {"hugo.md": "Hugo is my manager.\n", "garden.md": "Tomatoes need sun.\n"})
    first = _imp(fresh_db, old)
    new = old.rename(tmp_path / "new")
    moved = _imp(fresh_db, new)
    assert (moved.added, moved.updated, moved.skipped) == (0, 2, 0)
    assert all(n.reason.startswith(f"moved from {_abs(tmp_path)}/old/") for n in moved.notices)
    (new / "hugo.md").write_text("Hugo is my manager. He prefers Slack.\n")
    edited = _imp(fresh_db, new, prune=True)
    assert (edited.added, edited.updated) == (0, 1)
    live = [r for r in ops.list_records(fresh_db, ops.ListFilter(limit=10))]
    assert sorted(r.import_path for r in live) == [_abs(new / "garden.md"), _abs(new / "hugo.md")]
    assert {r.id for r in live}.isdisjoint(first.record_ids)


def test_a_copied_folder_moves_nothing(fresh_db, tmp_path):
    old = _write(tmp_path / "old", {"hugo.md": "Hugo is my manager.\n"})
    _imp(fresh_db, old)
    copy = _write(tmp_path / "copy", {"hugo.md": "Hugo is my manager.\n"})
    rep = _imp(fresh_db, copy)
    assert (rep.added, rep.updated, rep.skipped) == (0, 0, 1)
    assert [n.reason.split("'s record")[0] for n in rep.notices] == [f"the same text as {_abs(old / 'hugo.md')}"]


def test_excluded_files_and_folders_are_left_out_and_not_missing(fresh_db, tmp_path):
    """``--exclude``: an Obsidian vault's Templates folder and canvas files (templates were
    stored as notes titled ``{{title}}`` and ranked above the real ones, and a forgotten
    template came back at the next import)."""
    root = _write(tmp_path / "vault", {"Templates/meeting.md": "# {{title}}\n\n## Agenda\n",
                                        "Notes/m.md": "We chose Postgres.\n", "Notes/board.canvas": "{}",
                                        "Daily/2023-01-01.md": "Old day.\n", "Daily/2024-01-01.md": "New day.\n"})
    rep = _imp(fresh_db, root, exclude=("Templates", "*.canvas", "Daily/2023-*"))
    assert rep.added == 2
    assert {(r.path, r.reason) for r in rep.ignored_files} >= {
        ("Templates", "excluded (--exclude 'Templates')"),
        ("Notes/board.canvas", "excluded (--exclude '*.canvas')"),
        ("Daily/2023-01-01.md", "excluded (--exclude 'Daily/2023-*')")}
    everything = _imp(fresh_db, root)                  # without it: the templates come in
    assert everything.added == 2
    again = _imp(fresh_db, root, exclude=("Templates",), prune=True)
    assert (again.missing, again.pruned) == ((), 0)    # still on disk: not missing, not pruned


def test_an_exclude_pattern_that_matches_nothing_says_so(fresh_db, tmp_path):
    root = _write(tmp_path / "vault", {"Templates/meeting.md": "# {{title}}\n\nAgenda\n", "a.md": "A note.\n"})
    rep = _imp(fresh_db, root, exclude=("templates", "Templates"))
    assert rep.added == 1
    assert [(n.path, n.reason.split(",")[0]) for n in rep.notices] == [
        ("--exclude templates", "matched no file or folder")]
