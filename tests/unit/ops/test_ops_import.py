import os
from pathlib import Path

import pytest

from memo import ops
from memo.errors import ImportRejected, ValidationError
from memo.ops import importer
from memo.ops.importer import ImportOptions
from memo.store.dialect import is_postgres


def _tree(root: Path) -> Path:
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "install.md").write_text("# Install\n## Linux\napt-get install memo\n## Mac\nbrew install memo\n")
    (root / "notes.txt").write_text("first paragraph\n\nsecond paragraph\n")
    (root / "lib.py").write_text('"""Lib."""\ndef parse_url(u: str) -> str:\n    """Parse a URL."""\n')
    (root / "bad.txt").write_bytes(bytes(range(0x80, 0x100)) * 3)   # no encoding decodes it
    (root / "pic.png").write_bytes(b"\x89PNG")
    return root


def _live(conn, root: Path) -> dict[str, str]:
    """Live records by import path relative to ``root`` (import stores absolute paths)."""
    base = root.resolve().as_posix() + "/"
    out = {}
    for r in ops.list_records(conn):
        assert r.import_path.startswith(base), r.import_path
        out[r.import_path[len(base):]] = r.id
    return out


def _count(conn, table="records"):
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_import_folder_then_reimport_adds_nothing(fresh_db, tmp_path):
    root = _tree(tmp_path / "docs")
    events = []
    rep = ops.import_path(fresh_db, root, ImportOptions(namespace="kb", tags=("imported",), author="bot"),
                          progress=events.append)
    assert (rep.added, rep.updated, rep.skipped, rep.ignored) == (3, 0, 0, 1)
    assert [(r.path, r.reason.split(" (")[0]) for r in rep.rejected] == [("bad.txt", "not UTF-8 text")]
    assert rep.format == "files" and rep.batches == 1 and rep.passages == 2 + 2 + 2
    assert events[-1].done == events[-1].total == 5
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert rec.namespace == "kb" and rec.tags == ("imported",) and rec.author == "bot"
    base = root.resolve().as_posix() + "/"
    kinds = {r.import_path.removeprefix(base): r.kind for r in ops.list_records(fresh_db)}
    assert kinds == {"guide/install.md": "doc", "notes.txt": "doc", "lib.py": "code"}
    sections = [p.section for p in ops.get(fresh_db, [r for r in rep.record_ids][0]).passages]
    assert sections == ["Install > Linux", "Install > Mac"]
    # Code passages are named by the path relative to the folder, not where it lives.
    lib = ops.get(fresh_db, _live(fresh_db, root)["lib.py"])
    assert all(p.section.startswith("lib") for p in lib.passages), [p.section for p in lib.passages]

    again = ops.import_path(fresh_db, root, ImportOptions(namespace="kb"))
    assert (again.added, again.updated, again.skipped) == (0, 0, 3)
    assert _count(fresh_db) == 3


def test_changed_file_supersedes_old_version(fresh_db, tmp_path):
    root = _tree(tmp_path / "docs")
    ops.import_path(fresh_db, root)
    old = _live(fresh_db, root)["notes.txt"]
    (root / "notes.txt").write_text("first paragraph, changed\n")
    rep = ops.import_path(fresh_db, root)
    assert (rep.added, rep.updated, rep.skipped) == (0, 1, 2)
    prev = ops.get(fresh_db, old)
    assert prev.superseded_by == rep.record_ids[0]
    assert _live(fresh_db, root)["notes.txt"] == rep.record_ids[0]
    # Same file in another namespace is a separate record, not an update.
    other = ops.import_path(fresh_db, root / "notes.txt", ImportOptions(namespace="other"))
    assert other.added == 1


def test_batches(fresh_db, tmp_path):
    for i in range(7):
        (tmp_path / f"n{i}.md").write_text(f"note number {i}")
    rep = ops.import_path(fresh_db, tmp_path, ImportOptions(batch_size=3))
    assert rep.added == 7 and rep.batches == 3


def test_a_batch_of_large_records_ends_at_its_text_bound(fresh_db, tmp_path, monkeypatch):
    """A batch ends at ``batch_size`` records or at ``BATCH_CHARS`` of text, whichever comes
    first: memory holds one batch, and large records would make 500 of them gigabytes."""
    monkeypatch.setattr(importer, "BATCH_CHARS", 2_000)
    # batches (the files in name order): 4 records | 2 (2,000 characters reached) | 3 (again) | the last
    sizes = [300, 300, 300, 300, 900, 2_500, 100, 100, 2_500, 100]
    for i, n in enumerate(sizes):
        (tmp_path / f"n{i}.md").write_text(f"note {i} " + "word " * (n // 5))
    rep = ops.import_path(fresh_db, tmp_path, ImportOptions(batch_size=4))
    assert rep.added == len(sizes) and rep.batches == 4


def test_root_confinement(fresh_db, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.md").write_text("secret")
    with pytest.raises(ImportRejected):
        ops.import_path(fresh_db, tmp_path / "outside.md", ImportOptions(root=root))
    with pytest.raises(ImportRejected):
        ops.import_path(fresh_db, root / ".." / "outside.md", ImportOptions(root=root))
    os.symlink(tmp_path / "outside.md", root / "link.md")
    with pytest.raises(ImportRejected):
        ops.import_path(fresh_db, root / "link.md", ImportOptions(root=root))
    rep = ops.import_path(fresh_db, root, ImportOptions(root=root))
    assert rep.added == 0 and rep.rejected[0].reason == "symlink points outside the import root"
    assert _count(fresh_db) == 0


def test_missing_path_and_bad_format(fresh_db, tmp_path):
    with pytest.raises(ValidationError):
        ops.import_path(fresh_db, tmp_path / "nope")
    with pytest.raises(ValidationError):
        ops.import_path(fresh_db, tmp_path, ImportOptions(format="zip"))
    with pytest.raises(ValidationError):
        ops.import_path(fresh_db, tmp_path, ImportOptions(format="jsonl"))


def test_oversize_rejected_rest_goes_on(fresh_db, tmp_path):
    (tmp_path / "big.md").write_text("word " * 100)
    (tmp_path / "small.md").write_text("word")
    rep = ops.import_path(fresh_db, tmp_path, ImportOptions(max_bytes=100))
    assert rep.added == 1 and "cap" in rep.rejected[0].reason


def test_jsonl_import_and_update_by_id(fresh_db, tmp_path):
    f = tmp_path / "recs.jsonl"
    f.write_text('{"id": "a", "text": "alpha v1", "tags": ["x"], "kind": "doc"}\n'
                 '{"text": "no id line"}\n\n{"text": 5}\n')
    events = []
    rep = ops.import_path(fresh_db, f, progress=events.append)
    # on SQLite an import into an empty database is a bulk one: the last event names the
    # keyword index's rebuild (memo.store.kw_postings.end_bulk), shown while it runs
    bulk = [] if is_postgres(fresh_db) else [(3, 3)]
    assert [(e.done, e.total) for e in events] == [(1, 3), (2, 3), (3, 3), *bulk]
    assert bulk == [] or events[-1].current == "building the keyword index"
    assert rep.format == "jsonl" and rep.added == 2 and rep.rejected[0].path == "recs.jsonl:4"
    f.write_text('{"id": "a", "text": "alpha v2", "kind": "doc"}\n{"text": "no id line"}\n')
    rep2 = ops.import_path(fresh_db, f)
    assert (rep2.added, rep2.updated, rep2.skipped) == (0, 1, 1)
    live = ops.list_records(fresh_db)
    # JSONL records carry the input file's absolute path (':<line>' without an id).
    path = f.resolve().as_posix()
    assert sorted(r.import_path for r in live) == [path, f"{path}:2"]
    assert {r.ext_id for r in [ops.get(fresh_db, x.id) for x in live]} == {"a", None}


def test_kind_override_conversation(fresh_db, tmp_path):
    (tmp_path / "chat.txt").write_text("2024-03-01\nAnn: we chose sqlite\nBob: good\n")
    rep = ops.import_path(fresh_db, tmp_path / "chat.txt", ImportOptions(kind="conversation"))
    ps = ops.get(fresh_db, rep.record_ids[0]).passages
    assert [(p.speaker, p.event_at) for p in ps] == [("Ann", "2024-03-01"), ("Bob", "2024-03-01")]


def test_hidden_and_tool_folders_are_listed_as_ignored(fresh_db, tmp_path):
    """The README promises every ignored file with why: hidden files and folders and tool
    folders were passed over silently (a folder is listed once, not its contents)."""
    root = tmp_path / "notes"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text("{}")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "index.js").write_text("module.exports = 1\n")
    (root / ".draft.md").write_text("# draft\n")
    (root / "a.md").write_text("# A\nkept\n")
    rep = ops.import_path(fresh_db, root)
    assert rep.added == 1
    why = {r.path: r.reason for r in rep.ignored_files}
    assert set(why) == {".obsidian", "node_modules", ".draft.md"} and rep.ignored == 3
    assert why[".obsidian"].startswith("hidden folder") and why[".draft.md"].startswith("hidden file")
    assert why["node_modules"].startswith("tool folder")
