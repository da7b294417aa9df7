"""A text an older version held can be current again (schema v8: the dedup indexes hold
current records and facts only).  Before, a superseded version kept its text out of every
new record: a reverted file stayed at its newer text with the report saying "skipped", a
JSONL file with a line inserted at the top lost its first line from search, `memo
supersede` back to an earlier text was refused, and a text whose newer version was
forgotten could be stored by no command at all.  Each test fails on the old schema."""

from __future__ import annotations

import json

from memo import ops
from memo.ops import facts as fops
from memo.ops.importer import ImportOptions
from memo.stored import CURRENT, FactDraft, RecordDraft


def _current(conn) -> list[str]:
    return sorted(r[0].strip() for r in conn.execute(f"SELECT body FROM records WHERE {CURRENT}"))


def test_a_reverted_file_is_current_again(fresh_db, tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    texts = ("the port is 8080", "the port is 9090", "the port is 8080")
    reports = []
    for text in texts:
        (root / "cfg.md").write_text(text + "\n")
        rep = ops.import_path(fresh_db, root, ImportOptions())
        reports.append((rep.added, rep.updated, rep.skipped))
    assert reports == [(1, 0, 0), (0, 1, 0), (0, 1, 0)]
    assert _current(fresh_db) == ["the port is 8080"]
    # the old version keeps its rows, for as_of: two records hold the text, one current
    assert fresh_db.execute("SELECT count(*) FROM records WHERE body = ?", ("the port is 8080\n",)).fetchone()[0] == 2


def test_jsonl_lines_shifted_by_one_all_stay_current(fresh_db, tmp_path):
    src = tmp_path / "x.jsonl"
    first = [{"text": "alpha about rivers"}, {"text": "beta about mountains"}]
    src.write_text("".join(json.dumps(x) + "\n" for x in first))
    ops.import_path(fresh_db, src, ImportOptions())
    src.write_text("".join(json.dumps(x) + "\n" for x in [{"text": "new about deserts"}, *first]))
    rep = ops.import_path(fresh_db, src, ImportOptions(batch_size=500))
    assert (rep.added, rep.updated, rep.skipped) == (1, 2, 0)
    assert _current(fresh_db) == ["alpha about rivers", "beta about mountains", "new about deserts"]


def test_a_file_renamed_while_a_new_one_takes_its_name_keeps_its_text(fresh_db, tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    (root / "a.md").write_text("gamma about ibises\n")
    ops.import_path(fresh_db, root, ImportOptions())
    (root / "a.md").rename(root / "renamed.md")
    (root / "a.md").write_text("delta about cranes\n")
    rep = ops.import_path(fresh_db, root, ImportOptions())
    assert (rep.added, rep.updated, rep.skipped) == (1, 1, 0)
    assert _current(fresh_db) == ["delta about cranes", "gamma about ibises"]


def test_supersede_back_to_an_earlier_text(fresh_db):
    a = ops.add_record(fresh_db, RecordDraft(body="The gateway timeout is 30 seconds.")).record_id
    b = ops.supersede(fresh_db, a, "The gateway timeout is 45 seconds.").new_id
    # memo add of the old text: skipped, naming the version to supersede (two current
    # records would say different things)
    again = ops.add_record(fresh_db, RecordDraft(body="The gateway timeout is 30 seconds."))
    assert again.status == "skipped" and again.record_id == a and f"memo supersede {b}" in again.note
    c = ops.supersede(fresh_db, b, "The gateway timeout is 30 seconds.").new_id
    assert _current(fresh_db) == ["The gateway timeout is 30 seconds."]
    assert ops.get(fresh_db, c).body == ops.get(fresh_db, a).body and ops.get(fresh_db, b).superseded_by == c


def test_a_text_whose_newer_version_was_forgotten_can_be_added(fresh_db):
    a = ops.add_record(fresh_db, RecordDraft(body="The zebra limit is 5.")).record_id
    b = ops.supersede(fresh_db, a, "The zebra limit is 7.").new_id
    ops.forget(fresh_db, [b])
    rep = ops.add_record(fresh_db, RecordDraft(body="The zebra limit is 5."))
    assert rep.status == "added" and rep.record_id != a and rep.note is None
    assert _current(fresh_db) == ["The zebra limit is 5."]


def test_a_fact_can_be_superseded_back_to_its_earlier_wording(fresh_db):
    rid = ops.add_record(fresh_db, RecordDraft(body="The launch is in March.")).record_id
    f1 = fops.add_fact(fresh_db, FactDraft(text="launch in march", evidence=(rid,)), embed=False).fact_id
    f2 = fops.supersede_fact(fresh_db, f1, "launch in april").new_id
    f3 = fops.supersede_fact(fresh_db, f2, "launch in march").new_id
    rows = fresh_db.execute(f"SELECT id, text FROM facts WHERE {CURRENT}").fetchall()
    assert [tuple(r) for r in rows] == [(f3, "launch in march")]
