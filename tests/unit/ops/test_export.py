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
    typo = export_db(src, tmp_path / "typo.jsonl", namespaces=["work", "wrok"])
    assert typo.records == 1 and typo.empty_namespaces == ("wrok",)


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
