"""Issue 9.3: an import never aborts (or hangs) on one item.

A folder holding a FIFO, a unix socket, symlink loops, an undecodable file name and a
1,100-deep folder; a JSONL file with a lone surrogate and a 3,000-deep line; a BEIR corpus
with an invalid UTF-8 line; a LoCoMo file with one malformed conversation.  Every import
returns, the good items are stored, each bad one is a rejection with a reason, and the CLI
exits with the partial-failure code (5) and prints valid JSON, never a traceback.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo import ops
from memo.errors import ImportRejected
from memo.ingest.files import MAX_FOLDER_DEPTH
from memo.ops.importer import ImportOptions

pytestmark = pytest.mark.timeout(60)

DEEP = 1100


def _make_deep(base: Path, levels: int) -> Path:
    """``levels`` nested folders ``d/d/...`` built one at a time (os.makedirs recurses)."""
    cur = base
    for _ in range(levels):
        cur = cur / "d"
        os.mkdir(cur)
    return cur


def _rm_deep(base: Path) -> None:
    """Remove the deep chain bottom-up without recursion (shutil.rmtree recurses)."""
    chain = [base]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for child in os.listdir(folder):
            p = folder / child
            if not p.is_dir() or p.is_symlink():
                p.unlink()
        folder.rmdir()


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "hostile"
    root.mkdir()
    (root / "good.md").write_text("# Good\nthe good note survives the hostile folder\n")
    (root / "sub").mkdir()
    (root / "sub" / "also.txt").write_text("another good file in a subfolder\n")
    os.mkfifo(root / "pipe.md")                      # a known extension: would be read
    os.mkfifo(root / "fifo")                         # no extension: a text file by name
    monkeypatch.chdir(root)                          # AF_UNIX paths are limited to ~108 bytes
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind("sock.txt")
    os.symlink("loop_b.md", root / "loop_a.md")      # a -> b -> a
    os.symlink("loop_a.md", root / "loop_b.md")
    os.symlink("self.md", root / "self.md")          # points at itself
    bad_name = os.fsencode(str(root)) + b"/bad\xff\xfename.md"
    with open(bad_name, "wb") as fh:
        fh.write(b"# undecodable name\ntext\n")
    bad_dir = os.fsencode(str(root)) + b"/dir\xff"
    os.mkdir(bad_dir)
    with open(bad_dir + b"/inner.md", "wb") as fh:
        fh.write(b"inside a folder with an undecodable name\n")
    (root / "deep").mkdir()
    (root / "deep" / "d").mkdir()
    (root / "deep" / "d" / "shallow.md").write_text("a file a little way down is imported\n")
    bottom = _make_deep(root / "deep" / "d", DEEP - 1)
    (bottom / "bottom.md").write_text("far too deep to be walked\n")
    try:
        yield root
    finally:
        sock.close()
        _rm_deep(root / "deep")


def _by_path(rep) -> dict[str, str]:
    return {r.path: r.reason for r in rep.rejected}


def test_hostile_folder_import_returns_with_rejections(fresh_db, hostile):
    rep = ops.import_path(fresh_db, hostile)
    live = {r.import_path.rsplit("/", 1)[-1] for r in ops.list_records(fresh_db)}
    assert live == {"good.md", "also.txt", "shallow.md"}
    rej = _by_path(rep)
    for name in ("pipe.md", "fifo"):
        assert "FIFO" in rej[name] and "not opened" in rej[name], rej
    assert "socket" in rej["sock.txt"]
    for name in ("loop_a.md", "loop_b.md", "self.md"):
        assert "symlink loop" in rej[name], rej
    assert "not valid UTF-8" in rej["bad\\xff\\xfename.md"]
    assert "not valid UTF-8" in rej["dir\\xff"]
    deep = [p for p in rej if p.startswith("deep/")]
    assert len(deep) == 1 and deep[0].count("/") == MAX_FOLDER_DEPTH, deep
    assert f"deeper than {MAX_FOLDER_DEPTH}" in rej[deep[0]]
    for path, reason in rej.items():
        assert reason and path.encode("utf-8")   # every path prints (no lone surrogates)


def test_fifo_as_the_import_path_is_rejected_not_opened(fresh_db, hostile):
    rep = ops.import_path(fresh_db, hostile / "pipe.md")
    assert rep.added == 0 and "FIFO" in _by_path(rep)["pipe.md"]
    for fmt in ("jsonl", "beir", "locomo"):     # nor as a data set file
        rep = ops.import_path(fresh_db, hostile / "fifo", ImportOptions(format=fmt))
        assert rep.added == 0 and [r.path for r in rep.rejected] == ["fifo"], fmt
        assert "FIFO" in rep.rejected[0].reason, rep.rejected


def _jsonl(path: Path) -> Path:
    deep_meta = '{"text": "deep meta", "meta": ' + "[" * 3000 + "]" * 3000 + "}"
    lines = [
        '{"text": "first good line", "id": "g1"}',
        '{"text": "lone surrogate \\ud800 here", "id": "s1"}',
        '{"text": "surrogate in meta", "meta": {"k": "\\udfff"}}',
        "[" * 3000 + "]" * 3000,
        deep_meta,
        '{"text": "meta nested 100 deep", "meta": ' + '{"a": ' * 100 + "1" + "}" * 100 + "}",
        "[1, 2, 3]",
        '"just a string"',
        '{"text": "last good line", "id": "g2"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_bad_values_are_rejected(fresh_db, tmp_path):
    f = _jsonl(tmp_path / "recs.jsonl")
    rep = ops.import_path(fresh_db, f)
    assert rep.added == 2
    assert sorted(r.ext_id for r in (ops.get(fresh_db, i) for i in rep.record_ids)) == ["g1", "g2"]
    rej = _by_path(rep)
    assert set(rej) == {f"recs.jsonl:{n}" for n in range(2, 9)}
    assert "surrogate" in rej["recs.jsonl:2"] and "surrogate" in rej["recs.jsonl:3"]
    assert "nested" in rej["recs.jsonl:4"] and "nested" in rej["recs.jsonl:5"]
    assert "nested" in rej["recs.jsonl:6"]
    assert "not a JSON object" in rej["recs.jsonl:7"] and "not a JSON object" in rej["recs.jsonl:8"]


def _beir(path: Path) -> Path:
    path.write_bytes(b"\n".join([
        b'{"_id": "b1", "title": "Aspirin", "text": "Aspirin reduces fever."}',
        b'{"_id": "b2", "title": "Bad", "text": "caf\xe9 in latin-1"}',
        b'{"title": "no id", "text": "missing _id"}',
        b'{"_id": "b4", "text": ["not", "a", "string"]}',
        b'{"_id": {"nested": 1}, "text": "id of the wrong type"}',
        b'{"_id": "b6", "text": "lone \\ud800 surrogate"}',
        b"[" * 3000 + b"]" * 3000,
        b'{"_id": "b8", "title": "Statins", "text": "Statins lower cholesterol."}',
    ]) + b"\n")
    return path


def test_beir_malformed_lines_are_rejected(fresh_db, tmp_path):
    f = _beir(tmp_path / "corpus.jsonl")
    rep = ops.import_path(fresh_db, f, ImportOptions(format="beir", namespace="sf"))
    assert rep.added == 2
    assert sorted(ops.get(fresh_db, i).ext_id for i in rep.record_ids) == ["b1", "b8"]
    rej = _by_path(rep)
    assert set(rej) == {f"corpus.jsonl:{n}" for n in range(2, 8)}
    assert "not UTF-8" in rej["corpus.jsonl:2"]
    assert "_id" in rej["corpus.jsonl:3"] and "_id" in rej["corpus.jsonl:5"]
    assert "text" in rej["corpus.jsonl:4"]
    assert "surrogate" in rej["corpus.jsonl:6"] and "nested" in rej["corpus.jsonl:7"]


def _locomo(path: Path) -> Path:
    good = {"sample_id": "conv-1", "qa": [], "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."}]}}
    half = {"sample_id": "conv-2", "qa": [], "conversation": {
        "session_1": [{"speaker": "Cy", "dia_id": "D1:1", "text": "this session is fine"}],
        "session_2": "not a list of turns",
        "session_3": [{"speaker": "Cy", "dia_id": "D3:1", "text": 42}],
        "session_4": ["a turn that is a string"]}}
    data = [good, half,
            {"sample_id": "conv-3", "conversation": ["not", "an", "object"]},
            {"conversation": {"session_1": []}},
            "not a sample at all",
            {"sample_id": {"wrong": "type"}, "conversation": {}}]
    path.write_text(json.dumps(data))
    return path


def test_locomo_malformed_conversations_are_rejected(fresh_db, tmp_path):
    f = _locomo(tmp_path / "locomo.json")
    rep = ops.import_path(fresh_db, f, ImportOptions(format="locomo"))
    titles = sorted(ops.get(fresh_db, i).title for i in rep.record_ids)
    assert titles == ["conv-1 session 1", "conv-2 session 1"]
    rej = _by_path(rep)
    assert set(rej) == {"locomo.json#conv-2/session_2", "locomo.json#conv-2/session_3",
                        "locomo.json#conv-2/session_4", "locomo.json#conv-3", "locomo.json#3",
                        "locomo.json#4", "locomo.json#5"}, rej
    assert all(rej.values())
    # A file that is not LoCoMo at all is one rejection, not a crash.
    (tmp_path / "bad.json").write_text("[" * 3000 + "]" * 3000)
    rep = ops.import_path(fresh_db, tmp_path / "bad.json", ImportOptions(format="locomo"))
    assert rep.added == 0 and "nested" in rep.rejected[0].reason


def test_cli_import_exits_5_with_valid_json(db_path, tmp_path, hostile):
    from memo.cli import app

    runner = CliRunner()
    db = str(db_path)
    jsonl, beir, locomo = _jsonl(tmp_path / "r.jsonl"), _beir(tmp_path / "c.jsonl"), _locomo(tmp_path / "l.json")
    for args in ([str(hostile)], [str(jsonl)], [str(beir), "--format", "beir"],
                 [str(locomo), "--format", "locomo"]):
        result = runner.invoke(app, ["import", *args, "--db", db, "--json", "--no-embed"])
        assert result.exit_code == ImportRejected.exit_code, (args, result.output, result.exception)
        assert "Traceback" not in result.output
        doc = json.loads(result.stdout)
        assert doc["added"] >= 2 and doc["rejected"], doc
        assert all(r["reason"] for r in doc["rejected"])
    # and the human-readable form prints too (rejections on stderr, one line each)
    result = runner.invoke(app, ["import", str(hostile), "--db", db, "--no-embed", "--no-progress"])
    assert result.exit_code == ImportRejected.exit_code, result.output
    assert "rejected bad\\xff\\xfename.md" in result.stderr


def test_unexpected_error_on_one_item_rejects_only_that_item(fresh_db, tmp_path, monkeypatch):
    from memo.ops import importer, prepare_pool

    root = tmp_path / "docs"
    root.mkdir()
    for name in ("a.md", "boom.md", "c.md"):
        (root / name).write_text(f"# {name}\ntext of {name}\n")
    real_read = importer.read_file

    def flaky(path, rel, *args):
        if rel == "boom.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real_read(path, rel, *args)

    monkeypatch.setattr(importer, "read_file", flaky)
    real_split = prepare_pool.prepare      # the importer prepares through memo.ops.prepare_pool

    def split(draft, **kw):
        if "c.md" in draft.body:
            raise IndexError("splitter bug")
        return real_split(draft, **kw)

    monkeypatch.setattr(prepare_pool, "prepare", split)
    rep = ops.import_path(fresh_db, root)
    assert rep.added == 1
    assert _by_path(rep) == {"boom.md": "cannot read: RecursionError: maximum recursion depth exceeded",
                             "c.md": "cannot split into passages: IndexError: splitter bug"}


def test_reading_that_breaks_off_keeps_what_was_read(fresh_db, tmp_path):
    import gzip

    data = b"".join(b'{"_id": "d%d", "text": "document number %d"}\n' % (i, i) for i in range(200))
    packed = gzip.compress(data)
    f = tmp_path / "corpus.jsonl.gz"
    f.write_bytes(packed[: len(packed) * 2 // 3])             # a truncated download
    rep = ops.import_path(fresh_db, f, ImportOptions(format="beir"))
    assert 0 < rep.added < 200
    [rej] = rep.rejected
    assert rej.path.startswith("corpus.jsonl.gz:") and "truncated or corrupt" in rej.reason


def test_a_python_package_folder_imports_with_its_empty_init_files_skipped(db_path, tmp_path):
    """Issue 32: empty ``__init__.py`` files were "rejected: file is empty", so importing a
    package exited 5.  An empty (or whitespace-only) file is skipped and listed as ignored
    with its reason; the import succeeds (exit 0)."""
    from memo.cli import app

    pkg = tmp_path / "mypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("\n  \n")
    (pkg / "core.py").write_text("def rotate_key(days: int) -> int:\n    return days * 2\n")
    result = CliRunner().invoke(app, ["import", str(pkg), "--db", str(db_path), "--json", "--no-embed"])
    assert result.exit_code == 0, (result.output, result.exception)
    doc = json.loads(result.stdout)
    assert doc["added"] == 1 and doc["rejected"] == []
    assert {(f["path"], f["reason"]) for f in doc["ignored_files"]} == {
        ("__init__.py", "empty file (no text to import)"), ("sub/__init__.py", "empty file (no text to import)")}
