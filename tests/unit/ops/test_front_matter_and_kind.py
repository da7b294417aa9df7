"""``memo add`` reads a text's front matter as an import does (memo.ingest.front_matter),
and an import with ``--kind`` re-splits a file stored as another kind instead of skipping
it in silence (memo.ops.store_batch, ``rekind``)."""

from __future__ import annotations

from pathlib import Path

from memo import ops
from memo.ops.importer import ImportOptions
from memo.stored import RecordDraft

FRONT = "---\ntitle: Trip plan\ndate: March 3, 2025\ntags: [trip, '#travel']\n---\nWe leave on Friday.\n"
CHAT = "---\ntitle: Call with Tom\ndate: 2025-03-03\ntags: [tom]\n---\nTom: we leave Friday\nAna: I can drive\n"


def test_add_takes_title_date_and_tags_from_front_matter(fresh_db):
    rec = ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body=FRONT)).record_id)
    assert (rec.title, rec.event_at, set(rec.tags)) == ("Trip plan", "2025-03-03", {"trip", "travel"})
    assert [p.text for p in rec.passages] == ["We leave on Friday."]


def test_add_keeps_what_the_caller_gave(fresh_db):
    draft = RecordDraft(body=FRONT, title="Mine", event_at="2024-01-01", tags=("x",))
    rec = ops.get(fresh_db, ops.add_record(fresh_db, draft).record_id)
    assert (rec.title, rec.event_at, set(rec.tags)) == ("Mine", "2024-01-01", {"x", "trip", "travel"})


def test_add_of_a_conversation_with_front_matter(fresh_db):
    rec = ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body=CHAT, kind="conversation")).record_id)
    assert (rec.title, rec.event_at, rec.tags) == ("Call with Tom", "2025-03-03", ("tom",))
    assert [(p.speaker, p.event_at) for p in rec.passages] == [("Tom", "2025-03-03"), ("Ana", "2025-03-03")]


def test_add_says_when_the_front_matter_date_is_not_read(fresh_db):
    rep = ops.add_record(fresh_db, RecordDraft(body="---\ndate: someday\n---\nthe valve leaks\n"))
    assert rep.status == "added" and ops.get(fresh_db, rep.record_id).event_at is None
    assert "front matter 'date' value 'someday' is not a date memo reads" in rep.note
    assert "text was added without an event date" in rep.note


def test_add_takes_inline_tags_from_a_markdown_text_as_an_import_does(fresh_db, tmp_path):
    """`memo import note.md` took a note's inline #tags; `memo add` of the same text did not."""
    note = "---\ntags: [trip]\n---\nWe leave on Friday #travel #trip, see issue #123.\n"
    rec = ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body=note, tags=("mine",))).record_id)
    assert sorted(rec.tags) == ["mine", "travel", "trip"]       # given, front matter, then inline: once each
    (tmp_path / "note.md").write_text(note)
    imported = ops.import_path(fresh_db, tmp_path / "note.md", ImportOptions(namespace="files"))
    assert sorted(ops.get(fresh_db, imported.record_ids[0]).tags) == ["travel", "trip"]
    headed = "# Plans\n\nCall Ana #todo\n"
    assert ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body=headed)).record_id).tags == ("todo",)
    # a text that does not look like markdown keeps its words, as a .txt file's import does
    plain = ops.add_record(fresh_db, RecordDraft(body="call Ana about the #todo list"))
    assert ops.get(fresh_db, plain.record_id).tags == ()
    code = ops.add_record(fresh_db, RecordDraft(body="# Plans\n\nx = 1  #note\n", kind="code"))
    assert ops.get(fresh_db, code.record_id).tags == ()


def test_inline_tags_fill_only_the_room_the_tag_limit_leaves(fresh_db):
    from memo.text.limits import MAX_TAGS
    from memo.text.tags import with_inline_tags

    given = tuple(f"t{i}" for i in range(MAX_TAGS - 1))
    assert with_inline_tags(given, "#t0 #one #two") == (*given, "one")
    assert with_inline_tags(given + ("x",), "#one") == (*given, "x")
    body = "---\ntitle: Full\n---\n#one #two\n"
    rec = ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body=body, tags=given)).record_id)
    assert sorted(rec.tags) == sorted((*given, "one"))


def test_add_of_code_leaves_its_dashes_alone(fresh_db):
    rec = ops.get(fresh_db, ops.add_record(fresh_db, RecordDraft(body="---\ntitle: x\n---\n", kind="code")).record_id)
    assert rec.title is None


def _folder(root: Path) -> Path:
    root.mkdir()
    (root / "tom.md").write_text(CHAT)
    (root / "ana.md").write_text(CHAT.replace("Tom", "Ben"))
    return root


def test_import_with_another_kind_re_splits_the_files_records(fresh_db, tmp_path):
    root = _folder(tmp_path / "convmd")
    first = ops.import_path(fresh_db, root)
    assert first.added == 2
    rep = ops.import_path(fresh_db, root, ImportOptions(kind="conversation"))
    assert (rep.added, rep.updated, rep.skipped, rep.notices) == (0, 2, 0, ())
    live = ops.list_records(fresh_db)
    assert {r.kind for r in live} == {"conversation"} and {r.id for r in live} == set(rep.record_ids)
    for rid in first.record_ids:
        assert ops.get(fresh_db, rid).superseded_by in rep.record_ids
    speakers = {p.speaker for r in live for p in ops.get(fresh_db, r.id).passages}
    assert speakers == {"Tom", "Ben", "Ana"}
    # Again without --kind: the kind was the file type's guess, the stored one stays.
    again = ops.import_path(fresh_db, root)
    assert (again.added, again.updated, again.skipped, again.notices) == (0, 0, 2, ())
    assert {r.kind for r in ops.list_records(fresh_db)} == {"conversation"}


def test_a_text_another_record_holds_as_another_kind_is_a_notice(fresh_db, tmp_path):
    ops.import_path(fresh_db, _folder(tmp_path / "a"))
    copy = _folder(tmp_path / "b")
    rep = ops.import_path(fresh_db, copy, ImportOptions(kind="conversation"))
    assert (rep.added, rep.updated, rep.skipped) == (0, 0, 2)
    assert [n.path for n in rep.notices] == ["ana.md", "tom.md"]
    held = {r.import_path.rsplit("/", 1)[-1]: r.id for r in ops.list_records(fresh_db)}
    for n in rep.notices:
        assert f"already stored as a doc, record {held[n.path]}" in n.reason
        assert f"`memo forget {held[n.path]}` and import it again" in n.reason
    # What the notice says works: forgotten, the text imports as the kind asked for.
    ops.forget(fresh_db, [held["tom.md"]])
    after = ops.import_path(fresh_db, copy, ImportOptions(kind="conversation"))
    assert (after.added, after.skipped, [n.path for n in after.notices]) == (1, 1, ["ana.md"])
