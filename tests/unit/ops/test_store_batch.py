"""The batched import path (memo.ops.store_batch, issue 16.4) stores exactly what the
record-by-record path (memo.ops.add.store_draft per record) stores: the same imports run
both ways, with the same ids and clock, and every canonical and derived table compared
row by row (the keyword index through fts5vocab: term, passage, column, offset; on
PostgreSQL each passage's tsv and its postings in passage_terms / exact_terms)."""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path

import pytest

from memo.ops import importer, store_batch
from memo.ops.add import store_draft
from memo.ops.importer import ImportOptions, import_path
from memo.ops.reports import AddReport
from memo.store.db import open_db
from memo.store.dialect import is_postgres

TABLES = {
    "records": "SELECT * FROM records ORDER BY rowid",
    "record_tags": "SELECT * FROM record_tags ORDER BY record_id, tag",
    "passages": "SELECT * FROM passages ORDER BY pk",
    "exact_fts": "SELECT rowid, terms FROM exact_fts ORDER BY rowid",
    "passages_fts": "SELECT term, doc, col, offset FROM temp.kw ORDER BY term, doc, col, offset",
    "entities": "SELECT * FROM entities ORDER BY pk",
    "entity_aliases": "SELECT * FROM entity_aliases ORDER BY alias, entity_pk",
    "mentions": "SELECT * FROM mentions ORDER BY seq",
    # the epochs are random per database (memo.store.epochs): not content
    "memo_meta": "SELECT * FROM memo_meta WHERE key NOT IN ('vectors_epoch', 'mentions_epoch') ORDER BY key",
}
# PostgreSQL: records have no rowid (ids follow the fixed clock's order); the keyword
# index is the passage's tsv (in ``passages``) and the postings bm25 reads; memo_meta's
# ``generation`` counts committed write transactions (readers' caches), like SQLite's
# data_version, which is not a stored row either.
PG_TABLES = {**TABLES, "records": "SELECT * FROM records ORDER BY id",
             "memo_meta": "SELECT * FROM memo_meta WHERE key NOT IN ('generation', 'vectors_epoch', "
                          "'mentions_epoch') ORDER BY key",
             "passages_fts": "SELECT * FROM passage_terms ORDER BY key, lex",
             "exact_terms": "SELECT * FROM exact_terms ORDER BY key, lex"}


def _record_by_record(conn, items: list[store_batch.PreparedItem], *, rekind: bool = False,
                      walked=None) -> list[AddReport]:  # noqa: ANN001
    """What the importer did before issue 16.4: store_draft per record, same transaction
    (imports without --kind: ``rekind`` has no record-by-record form)."""
    assert not rekind
    return [store_draft(conn, it.draft, tuple(p.draft for p in it.passages), replace_previous=True, walked=walked)
            for it in items]


def _inputs(tmp_path: Path) -> list[tuple[Path, str | None, ImportOptions]]:
    """(path, what to write there just before importing it (None: leave it), options)."""
    lines = [{"id": "a", "text": "Alice Smith met Bob at Acme Corp in New York. ERR_CONN_RESET again.", "tags": ["x", "y"]},
             {"id": "b", "text": "Same text twice.", "entities": ["Project X"]},
             {"id": "c", "text": "Same text twice."},                       # duplicate inside the batch
             {"text": "No id: addressed by its line. See net/http and IL-6.", "event_date": "2024-05-01"},
             {"id": "a", "text": "Alice Smith left Acme Corp. A new version in the same file."},   # supersedes 'a' in-batch
             {"id": "conv", "kind": "conversation", "text": "Caroline: I went to the LGBTQ support group.\n"
                                                             "Melanie: That's great, Caroline!"},
             {"id": "long", "text": " ".join(f"Sentence {k} about the Krebs cycle and p53." for k in range(80))},
             {"id": "md", "title": "Guide", "text": "# Install\n\nRun `memo init`.\n\n## Linux\n\napt-get install memo\n"},
             # CJK: the keyword index holds memo.text.cjk.index_form (PostgreSQL: kw_text / kw_section)
             {"id": "zh", "title": "备份", "text": "# 数据库备份\n\n我们决定使用SQLite数据库备份策略。\n\n## English\n\nplain text\n"}]
    first = tmp_path / "one.jsonl"
    second = tmp_path / "two" / "one.jsonl"          # another file: other import paths
    second.parent.mkdir(parents=True, exist_ok=True)
    changed = "".join(json.dumps(x) + "\n" for x in [
        {"id": "a", "text": "Alice Smith is back at Acme Corp: a third version."},   # supersedes across imports
        {"id": "b", "text": "Same text twice."},                                   # skipped (stored)
        {"id": "new", "text": "Brand new line from Dr. Jane Doe about BRCA1."}])
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    (folder / "readme.md").write_text("# Memo\n\nLocal-first memory for AI agents.\n\n## Use\n\nmemo add\n")
    (folder / "sub" / "notes.txt").write_text("first paragraph by @alice\n\nsecond #python paragraph\n")
    (folder / "sub" / "lib.py").write_text('"""Lib."""\ndef parse_url(u: str) -> str:\n    """Parse a URL."""\n')
    opts = ImportOptions(namespace="kb", batch_size=3, tags=("imported",))
    jsonl = "".join(json.dumps(x) + "\n" for x in lines)
    return [(first, jsonl, opts), (second, "".join(json.dumps(x) + "\n" for x in lines[:3]), opts),
            (first, changed, opts), (folder, None, opts),
            (first, jsonl, ImportOptions(namespace="other", batch_size=500))]


def _fixed_clock(monkeypatch) -> None:
    ids, ticks = itertools.count(), itertools.count()

    def new_id() -> str:
        return f"r{next(ids):06d}"

    def now() -> str:
        return f"2026-01-01T00:00:00.{next(ticks):06d}Z"

    for mod in ("memo.store.records", "memo.ops.store_batch", "memo.ops.add", "memo.ops.import_missing"):
        for name, fn in (("new_record_id", new_id), ("utc_now", now)):
            monkeypatch.setattr(f"{mod}.{name}", fn, raising=False)


@contextlib.contextmanager
def _storing(monkeypatch, store):  # noqa: ANN001, ANN202
    """Imports store through ``store`` (the record-by-record reference or the batch), with
    ids and times fixed so that two runs give the same rows."""
    with monkeypatch.context() as m:
        _fixed_clock(m)
        m.setattr(importer, "store_items", store)
        yield


def _dump(db: Path | str) -> dict[str, list[tuple]]:
    conn = open_db(db)
    if is_postgres(conn):
        out = {name: [tuple(r) for r in conn.execute(sql)] for name, sql in PG_TABLES.items()}
        conn.close()
        return out
    conn.execute("CREATE VIRTUAL TABLE temp.kw USING fts5vocab(main, passages_fts, instance)")
    out = {name: [tuple(r) for r in conn.execute(sql)] for name, sql in TABLES.items()}
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')")
    conn.close()
    return out


def _run(tmp_path: Path, monkeypatch, db: Path | str, store) -> tuple[dict[str, list[tuple]], list[tuple]]:  # noqa: ANN001
    with _storing(monkeypatch, store):
        conn = open_db(db)
        counts = []
        for path, text, opts in _inputs(tmp_path / "in"):   # same paths both runs
            if text is not None:
                path.write_text(text)
            rep = import_path(conn, path, opts)
            counts.append((rep.added, rep.updated, rep.skipped, rep.passages, len(rep.rejected), rep.batches))
        conn.close()
    return _dump(db), counts


def test_batched_import_stores_what_record_by_record_stores(new_db, tmp_path, monkeypatch):
    old, old_counts = _run(tmp_path, monkeypatch, new_db("old"), _record_by_record)
    new, new_counts = _run(tmp_path, monkeypatch, new_db("new"), store_batch.store_items)
    assert new_counts == old_counts
    assert old_counts[0][:3] == (7, 1, 1) and old_counts[2][:3] == (1, 1, 1) and old_counts[3][0] == 3
    for table in new:
        assert new[table] == old[table], table
    assert len(old["mentions"]) > 20 and len(old["passages"]) > 15     # the inputs exercise the indexes
    assert any("据库" in row for row in old["passages_fts"])            # CJK as bigrams, both ways
    superseded = [r for r in old["records"] if r[9] is not None]    # superseded_at
    assert len(superseded) == 3                                      # in a batch, across imports


@pytest.mark.parametrize("batch", [1, 2, 500])
def test_batch_size_changes_nothing_stored(new_db, tmp_path, monkeypatch, batch):
    """All-or-nothing per batch is the only thing the batch size decides."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": str(k % 7), "text": f"Line {k % 11} by Alice Smith"}) + "\n"
                           for k in range(40)))
    dumps = []
    for size in (batch, 7):
        with monkeypatch.context() as m:
            _fixed_clock(m)
            db = new_db(f"b{batch}-{size}")
            conn = open_db(db)
            import_path(conn, src, ImportOptions(namespace="kb", batch_size=size))
            conn.close()
        dumps.append(_dump(db))
    assert dumps[0] == dumps[1]


def test_an_initial_entity_is_confirmed_by_a_later_batch(new_db, tmp_path, monkeypatch):
    """An entity stored as 'initial' (a sentence-initial word alone) becomes a name when a
    later batch writes it as one, both ways (write_passage_mentions asks confirm only about
    the stored entities still 'initial', issue 31.3); one already a name stays one."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in [
        {"id": "1", "text": "Paris is lovely in May. Lyon too."},
        {"id": "2", "text": "Rome is old."},
        {"id": "3", "text": "We flew to Paris with Alice Smith. Lyon was next."},
        {"id": "4", "text": "Rome again, with Alice Smith."}]))
    kinds = []
    for name, store in (("old", _record_by_record), ("new", store_batch.store_items)):
        with _storing(monkeypatch, store):
            conn = open_db(new_db(name))
            import_path(conn, src, ImportOptions(namespace="kb", batch_size=1))
            kinds.append(dict(conn.execute("SELECT key, kind FROM entities").fetchall()))
            conn.close()
    assert kinds[0] == kinds[1]
    assert kinds[1]["paris"] == "name" and kinds[1]["alice smith"] == "name"
    assert kinds[1]["rome"] == "initial"              # never written as a name


def test_chat_exports_saved_in_several_folders_both_ways(new_db, tmp_path, monkeypatch):
    """A conversation's versions from several export files (memo.ops.chat_versions): grown,
    older, branched, a legacy copy, in batches of 1 and 500: the same decisions, notices and
    rows record by record and batched."""
    from tests.unit.ops.chat_export_files import claude_export, message

    def msgs(topic: str, n: int, edited: bool = False) -> list:
        out = [message(k, topic=topic) for k in range(n)]
        return [*out[:2], ("m2b", f"message 2 about the {topic}, edited later", 9)] if edited else out

    c1, c2 = "heron migration", "Lisbon trip"          # another text each: not duplicates of each other
    same = {"c3": [message(0, topic="tides")]}
    inputs = [("exp1", {"c1": msgs(c1, 3), "c2": msgs(c2, 5), **same}),
              ("exp2", {"c1": msgs(c1, 5), "c2": msgs(c2, 3), **same}),
              ("exp1", {"c1": msgs(c1, 3), "c2": msgs(c2, 5), **same}),
              ("exp3", {"c1": msgs(c1, 5, edited=True), "c2": msgs(c2, 5, edited=True), **same}),
              ("exp2", {"c1": msgs(c1, 5), "c2": msgs(c2, 3), **same}),
              ("exp1", {"c1": msgs(c1, 5), "c2": [*msgs(c2, 5, edited=True), message(10, topic=c2)]}),
              ("exp3", {"c1": [*msgs(c1, 5, edited=True), message(11, topic=c1)], **same})]  # changed in place
    results = []
    for name, store in (("old", _record_by_record), ("new", store_batch.store_items)):
        for size in (1, 500):
            with _storing(monkeypatch, store):
                db = new_db(f"{name}{size}")
                conn = open_db(db)
                out = []
                for folder, conversations in inputs:
                    path = claude_export(tmp_path / name / str(size) / folder / "conversations.json", conversations)
                    rep = import_path(conn, path, ImportOptions(batch_size=size))
                    out.append((rep.added, rep.updated, rep.skipped,
                                [(n.path, n.reason.replace(str(tmp_path / name / str(size)), "")) for n in rep.notices]))
                conn.close()
            dump = _dump(db)
            # import paths differ by run folder only
            dump["records"] = [tuple(str(v).replace(str(tmp_path / name / str(size)), "") for v in r)
                               for r in dump["records"]]
            results.append((out, dump))
    assert [o for o, _ in results[1:]] == [results[0][0]] * 3
    for _, dump in results[1:]:
        for table in dump:
            assert dump[table] == results[0][1][table], table
    counts = [o[:3] for o in results[0][0]]
    assert counts == [(3, 0, 0), (0, 1, 2), (0, 0, 3), (0, 2, 1), (0, 0, 3), (0, 1, 1), (0, 1, 1)]
    live = [r for r in results[0][1]["records"] if r[9] == "None" and r[11] == "None"]   # superseded_at, forgotten_at
    assert len(live) == 3                              # one live record per conversation


def test_moved_and_emptied_files_both_ways(new_db, tmp_path, monkeypatch):
    """A folder's files renamed, moved over another file, deleted beside an identical copy,
    emptied (memo.ops.file_moves, memo.ops.import_missing), in batches of 1 and 500: the same
    decisions, notices and rows record by record and batched."""
    code = 'def shared_helper():\n    """Return the pelican count."""\n    return 42\n'
    first = {"a/x.py": code, "b/x.py": code, "server.go": 'package srv\n\nfunc Serve() {\n\tprintln("ostrich")\n}\n',
             "docs/one.md": "# One\n\nalpha heron text\n", "docs/two.md": "# Two\n\nbravo heron text\n",
             "sub/ledger.md": "# Ledger\n\nThe ostrich ledger lists feathers.\n", "pkg/__init__.py": ""}

    def change(root: Path) -> None:
        (root / "server.go").rename(root / "srv.go")
        (root / "a" / "x.py").unlink()
        (root / "docs" / "one.md").replace(root / "docs" / "two.md")
        (root / "sub" / "ledger.md").write_text("")

    def copy(root: Path) -> None:
        (root / "c").mkdir()
        (root / "c" / "x.py").write_text(code)

    steps = [(None, False), (change, False), (None, True), (copy, True)]
    results = []
    for name, store in (("old", _record_by_record), ("new", store_batch.store_items)):
        for size in (1, 500):
            run = tmp_path / name / str(size)
            root = run / "proj"
            for rel, text in first.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            with _storing(monkeypatch, store):
                db = new_db(f"{name}{size}")
                conn = open_db(db)
                out = []
                for edit, prune in steps:
                    if edit is not None:
                        edit(root)
                    rep = import_path(conn, root, ImportOptions(batch_size=size, prune=prune))
                    out.append((rep.added, rep.updated, rep.skipped, rep.missing, rep.emptied, rep.pruned,
                                [(n.path, n.reason.replace(str(run), "")) for n in rep.notices]))
                conn.close()
            dump = _dump(db)
            dump["records"] = [tuple(str(v).replace(str(run), "") for v in r) for r in dump["records"]]
            results.append((out, dump))
    assert [o for o, _ in results[1:]] == [results[0][0]] * 3
    for _, dump in results[1:]:
        for table in dump:
            assert dump[table] == results[0][1][table], table
    counts = [o[:6] for o in results[0][0]]
    assert counts == [(5, 0, 1, (), (), 0),
                      (0, 3, 0, ("sub/ledger.md",), ("sub/ledger.md",), 0),    # srv.go, b/x.py, docs/two.md
                      (0, 0, 3, ("sub/ledger.md",), ("sub/ledger.md",), 1),
                      (0, 0, 4, (), (), 0)]                                 # c/x.py: b/x.py is still there
    assert sorted(p for p, _ in results[0][0][1][6]) == ["b/x.py", "docs/two.md", "srv.go", "sub/ledger.md"]
    live = {r[14]: r for r in results[0][1]["records"] if r[9] == "None" and r[11] == "None"}   # by import path
    assert sorted(live) == ["/proj/b/x.py", "/proj/docs/two.md", "/proj/srv.go"]
    sections = {r[4] for r in results[0][1]["passages"] if r[2] == live["/proj/b/x.py"][0]}
    assert sections == {"b.x.shared_helper"}
