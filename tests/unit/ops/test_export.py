"""``memo export`` and ``memo import`` of its file (memo.ops.export, memo.ops.export_restore):
a knowledge base moved to another database, SQLite or PostgreSQL, arrives as it was:
every version of every record and fact, tags, passages, evidence, vectors, and the entity
rows derived from them; searches answer the same.  Before, nothing moved a knowledge base
between the backends, and ``memo backup`` copies a SQLite file only.

The source is always SQLite (``_source``); the target is the test's backend (SQLite, and
PostgreSQL in the full suite), and ``test_and_back_again`` exports the target once more and
imports that into a fresh SQLite file: both backends write and read the format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memo import ops
from memo.embed.backfill import backfill
from memo.errors import ValidationError
from memo.ops.export import export_db
from memo.ops.facts import add_fact, forget_facts, supersede_fact
from memo.store.db import open_db
from memo.store.dialect import is_db_url
from memo.stored import FactDraft, RecordDraft
from tests.unit.ops.export_rows import canonical

DOC = "# Pumps\n\nThe pump runs at 40 psi.\n\n## Maintenance\n\nBruno Ferreira checks the seals every Friday.\n"
CHAT = "Alice: Did the Kestrel upgrade go well?\nBruno: Replication broke after version 4.\n"


def _source(tmp_path: Path):
    """A SQLite base holding one of everything an export must carry."""
    conn = open_db(tmp_path / "source.db")
    a = ops.add_record(conn, RecordDraft(body="Alice Moreau joined the Lighthouse project in March 2024.",
                                         title="Alice", tags=("team", "people"), namespace="work",
                                         event_at="2024-03-05", author="agent-7", trust=0.8,
                                         meta={"entities": ["Lighthouse"], "origin": "chat"})).record_id
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "pumps.md").write_text(DOC)
    (folder / "tool.py").write_text('def pump_pressure(psi: int) -> bool:\n    """True at a safe pressure."""\n'
                                    "    return psi <= 45\n")
    ops.import_path(conn, folder)
    chat = ops.add_record(conn, RecordDraft(body=CHAT, kind="conversation", event_at="2024-05-01T10:00:00Z")).record_id
    add_fact(conn, FactDraft(text="Kestrel replication broke after version 4", evidence=(chat,)))
    ops.add_record(conn, RecordDraft(body="fs.readFile reads a whole file.", kind="doc", library="node",
                                     version="22", title="fs"))
    v1 = ops.add_record(conn, RecordDraft(body="Kestrel DB backups run every Friday.")).record_id
    fact = add_fact(conn, FactDraft(text="Kestrel backups run on Fridays", evidence=(f"{v1}:0",),
                                    subject="Kestrel DB")).fact_id
    v2 = ops.supersede(conn, v1, "Kestrel DB backups run every Monday.").new_id
    ops.supersede(conn, v2, "Kestrel DB backups run every Monday at 02:00.")
    supersede_fact(conn, fact, "Kestrel backups ran on Fridays until May")
    gone = ops.add_record(conn, RecordDraft(body="A private note nobody should see again.")).record_id
    ops.forget(conn, [gone])
    dropped = add_fact(conn, FactDraft(text="Alice likes tea", evidence=(f"{a}:0",), namespace="work")).fact_id
    forget_facts(conn, [dropped])
    backfill(conn, progress=False)     # the imported files' passages (an import leaves them to the CLI)
    return conn


def _search(db, query: str) -> list[tuple[str, float]]:
    """The results' ids and scores; float32 cosines summed in another order (the vector
    matrix of the other base) differ in the 8th digit."""
    from memo.search_api import search

    return [(h.passage_id, round(h.score, 5)) for h in search(query, db=db, now="2026-12-01T00:00:00Z").results]


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_everything_arrives_as_it_was(tmp_path, db_path, name) -> None:
    src = _source(tmp_path)
    rep = export_db(src, tmp_path / name, include_forgotten=True)
    assert (rep.records, rep.facts) == (9, 4)
    assert rep.vectors == {"all-minilm-l6-v2-int8": rep.passages + 4}     # every passage's and fact's
    target = open_db(db_path)
    got = ops.import_path(target, tmp_path / name)
    assert (got.format, got.added, got.skipped, got.facts_added, got.notices) == ("memo-export", 9, 0, 4, ())
    assert canonical(target) == canonical(src)
    for query in ("When do Kestrel backups run?", "pump pressure", "Alice Lighthouse"):
        here, there = _search(db_path, query), _search(tmp_path / "source.db", query)
        if is_db_url(db_path):     # PostgreSQL's keyword ranking is its own (docs/postgres.md)
            here, there = here[:1], there[:1]
            here, there = [h[0] for h in here], [h[0] for h in there]
        assert here == there


def test_forgotten_rows_are_left_out_as_purge_would(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    target = open_db(db_path)
    ops.import_path(target, tmp_path / "out.jsonl")
    ops.purge(src, confirm=True)
    assert canonical(target) == canonical(src)
    assert "private note" not in (tmp_path / "out.jsonl").read_text()


def test_importing_it_again_changes_nothing(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    target = open_db(db_path)
    ops.import_path(target, tmp_path / "out.jsonl")
    before = canonical(target)
    again = ops.import_path(target, tmp_path / "out.jsonl")
    assert (again.added, again.skipped, again.facts_added, again.facts_skipped) == (0, 8, 0, 3)
    assert canonical(target) == before


def test_and_back_again(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "one.jsonl.gz", include_forgotten=True)
    middle = open_db(db_path)
    ops.import_path(middle, tmp_path / "one.jsonl.gz")
    export_db(middle, tmp_path / "two.jsonl.gz", include_forgotten=True)
    last = open_db(tmp_path / "last.db")
    ops.import_path(last, tmp_path / "two.jsonl.gz")
    assert canonical(last) == canonical(src)


def test_a_namespace_alone(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    rep = export_db(src, tmp_path / "work.jsonl", namespaces=["work"])
    assert (rep.records, rep.facts) == (1, 0)     # its one fact is forgotten
    target = open_db(db_path)
    ops.import_path(target, tmp_path / "work.jsonl")
    assert [r[0] for r in target.execute("SELECT namespace FROM records")] == ["work"]
    with pytest.raises(ValidationError, match="namespace 'wrok' holds no record or fact; nothing was written"):
        export_db(src, tmp_path / "typo.jsonl", namespaces=["work", "wrok"])
    assert not (tmp_path / "typo.jsonl").exists()


def test_merged_into_a_base_holding_the_same_text(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    target = open_db(db_path)
    held = ops.add_record(target, RecordDraft(body=CHAT, kind="conversation")).record_id
    got = ops.import_path(target, tmp_path / "out.jsonl")
    assert got.added == 7 and got.skipped == 1
    assert any(f"as record {held}" in n.reason for n in got.notices)
    assert [r[0] for r in target.execute("SELECT id FROM records WHERE kind = 'conversation'")] == [held]
    # the fact citing the conversation cites the one held here
    cited = [r[0] for r in target.execute(
        "SELECT DISTINCT p.record_id FROM fact_evidence e JOIN passages p ON p.pk = e.passage_pk "
        "JOIN facts f ON f.pk = e.fact_pk WHERE f.text LIKE '%replication%'")]
    assert cited == [held]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_file_cut_short_or_damaged_is_refused_before_anything_is_written(tmp_path, db_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    lines = _lines(tmp_path / "out.jsonl")
    target = open_db(db_path)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(ValidationError, match="cut short; nothing was imported"):
        ops.import_path(target, cut)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:5], lines[5][:-20], *lines[6:]]) + "\n")
    with pytest.raises(ValidationError, match="line 6 is not JSON"):
        ops.import_path(target, bad)
    wrong = tmp_path / "wrong.jsonl"
    rec = json.loads(lines[1])
    rec["passages"] = []
    wrong.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    with pytest.raises(ValidationError, match="line 2: a record needs its passages"):
        ops.import_path(target, wrong)
    assert target.execute("SELECT count(*) FROM records").fetchone()[0] == 0


def test_a_newer_format_asks_for_a_newer_memo(tmp_path, fresh_db) -> None:
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"memo_export": 99}) + "\n" + json.dumps({"type": "end", "records": 0,
                                                                       "passages": 0, "facts": 0}) + "\n")
    with pytest.raises(ValidationError, match="newer memo") as err:
        ops.import_path(fresh_db, path)
    assert "upgrade memo" in (err.value.hint or "")


def test_options_an_export_cannot_take_are_refused(tmp_path, fresh_db) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    with pytest.raises(ValidationError, match="--namespace, --tag do not apply"):
        ops.import_path(fresh_db, tmp_path / "out.jsonl", ops.ImportOptions(namespace="x", tags=("a",)))


def test_the_destination_is_checked(tmp_path) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    with pytest.raises(ValidationError, match="exists"):
        export_db(src, tmp_path / "out.jsonl")
    export_db(src, tmp_path / "out.jsonl", overwrite=True)
    with pytest.raises(ValidationError, match="the database itself"):
        export_db(src, tmp_path / "source.db", overwrite=True)
    with pytest.raises(ValidationError, match="the database's -wal file"):
        export_db(src, tmp_path / "source.db-wal", overwrite=True)
    with pytest.raises(ValidationError, match="is a folder"):
        export_db(src, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_vectors_of_another_length_are_not_mixed(tmp_path, fresh_db) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl.gz")
    lines = gzip.open(tmp_path / "out.jsonl.gz", "rt").read().splitlines()
    import base64
    short = base64.b64encode(b"\0" * 16).decode()
    changed = []
    for line in lines:
        obj = json.loads(line)
        for p in obj.get("passages", []) if obj.get("type") == "record" else ():
            p["vectors"] = {m: short for m in p.get("vectors", {})}
        changed.append(json.dumps(obj))
    (tmp_path / "short.jsonl").write_text("\n".join(changed) + "\n")
    ops.add_record(fresh_db, RecordDraft(body="A note embedded here first."))
    got = ops.import_path(fresh_db, tmp_path / "short.jsonl")
    assert any("not the same model" in n.reason for n in got.notices)
    assert fresh_db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 1


def test_a_full_disk_leaves_nothing_and_a_killed_exports_file_is_cleaned(tmp_path, monkeypatch) -> None:
    import errno

    import memo.ops.export as export_mod
    from memo.errors import DiskFull

    src = _source(tmp_path)
    (tmp_path / ".kb.jsonl.export-999999999-deadbeef").write_text("half an export")   # its process is gone
    real_write, calls = export_mod._write, []

    def full(out, obj):
        calls.append(1)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(out, obj)

    monkeypatch.setattr(export_mod, "_write", full)
    with pytest.raises(DiskFull, match="disk is full; nothing was written there"):
        export_db(src, tmp_path / "kb.jsonl")
    assert not (tmp_path / "kb.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_colleagues_changes_to_records_both_hold_are_taken(tmp_path, db_path) -> None:
    """A merge takes the later state of a version both bases hold: superseded or forgotten
    in the export, current here, becomes superseded or forgotten here (a probe merged a
    colleague's export back and kept two current versions of a record)."""
    src = _source(tmp_path)
    export_db(src, tmp_path / "mine.jsonl")
    theirs = open_db(db_path)
    ops.import_path(theirs, tmp_path / "mine.jsonl")
    fs = src.execute("SELECT id FROM records WHERE title = 'fs'").fetchone()[0]
    alice = src.execute("SELECT id FROM records WHERE namespace = 'work'").fetchone()[0]
    newer = ops.supersede(theirs, fs, "fs.readFile reads a whole file into memory.").new_id
    ops.forget(theirs, [alice])
    export_db(theirs, tmp_path / "theirs.jsonl", include_forgotten=True)
    got = ops.import_path(src, tmp_path / "theirs.jsonl")
    assert got.added == 1
    notes = {n.reason for n in got.notices}
    assert f"record {fs}: superseded by {newer}, as the export says" in notes
    assert f"record {alice}: forgotten, as the export says" in notes
    row = src.execute("SELECT superseded_by FROM records WHERE id = ?", (fs,)).fetchone()
    assert row[0] == newer
    assert src.execute("SELECT forgotten_at FROM records WHERE id = ?", (alice,)).fetchone()[0] is not None
    current = [r[0] for r in src.execute("SELECT id FROM records WHERE title = 'fs' AND superseded_at IS NULL "
                                          "AND forgotten_at IS NULL")]
    assert current == [newer]


def test_an_export_is_known_by_its_header_whatever_its_name(tmp_path, fresh_db) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "kb.jsonl.gz")
    for name in ("kb.1.gz", "kb-nightly", "kb.txt"):
        (tmp_path / name).write_bytes((tmp_path / "kb.jsonl.gz").read_bytes() if name.endswith(".gz")
                                      else gzip.decompress((tmp_path / "kb.jsonl.gz").read_bytes()))
        assert ops.import_path(fresh_db, tmp_path / name).format == "memo-export"
    with pytest.raises(ValidationError, match="is not a file"):
        ops.import_path(fresh_db, tmp_path / "notes", ops.ImportOptions(format="memo-export"))
    with pytest.raises(ValidationError, match="give the export a file path"):
        export_db(src, "-")
    assert (tmp_path / "kb.jsonl.gz").stat().st_mode & 0o077 == 0     # the owner's alone


def test_vectors_of_a_model_this_memo_does_not_know_are_left_out(tmp_path, fresh_db) -> None:
    src = _source(tmp_path)
    export_db(src, tmp_path / "out.jsonl")
    text = (tmp_path / "out.jsonl").read_text().replace("all-minilm-l6-v2-int8", "some-other-model")
    (tmp_path / "other.jsonl").write_text(text)
    got = ops.import_path(fresh_db, tmp_path / "other.jsonl")
    assert any("vectors of some-other-model left out" in n.reason for n in got.notices)
    assert fresh_db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0


def test_a_nul_character_is_kept_where_it_can_be_and_dropped_where_it_cannot(tmp_path, db_path) -> None:
    """SQLite stores U+0000; PostgreSQL cannot: the import into it dropped the whole move
    half way.  Now the character is removed there, and said, and nothing else changes."""
    src = open_db(tmp_path / "nul.db")
    rid = ops.add_record(src, RecordDraft(body="A line with a \x00 NUL inside.", title="t\x00itle")).record_id
    ops.add_record(src, RecordDraft(body="A plain note."))
    export_db(src, tmp_path / "nul.jsonl")
    target = open_db(db_path)
    got = ops.import_path(target, tmp_path / "nul.jsonl")
    assert got.added == 2
    body, title = target.execute("SELECT body, title FROM records WHERE id = ?", (rid,)).fetchone()
    if is_db_url(db_path):
        assert (body, title) == ("A line with a  NUL inside.", "title")
        assert [n.reason for n in got.notices] == [
            f"record {rid}: NUL characters (U+0000) removed, which this database cannot store"]
    else:
        assert "\x00" in body and got.notices == ()
