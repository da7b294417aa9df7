"""A chat conversation imported from several exports saved in different folders
(memo.ops.chat_versions): known by namespace + conversation id wherever the export was
saved, one live record per conversation.  A tester found an export unzipped to a new folder
stored every grown conversation a second time ("added 1, skipped 1": two live records, every
old turn found twice, facts left on the old copy).  On both backends (``fresh_db``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memo import ops
from memo.ops import chat_versions
from memo.ops import facts as fops
from memo.ops.chat_versions import LiveVersion, Messages, judge
from memo.ops.importer import ImportOptions
from memo.stored import FactDraft
from tests.unit.ops.chat_export_files import claude_export, message

SHORT = [message(k) for k in range(3)]
LONG = [message(k) for k in range(4)]                      # SHORT and one more message
BRANCHED = [*SHORT[:2], ("m2b", "message 2 edited: the heron count doubled", 5)]   # m2 edited later
OTHER = {"c2": [message(0, topic="tide tables")]}          # the same in every export


def _imp(conn, path: Path, **opts):  # noqa: ANN001, ANN202
    return ops.import_path(conn, path, ImportOptions(**opts))


def _exports(tmp_path: Path, newer: list = LONG) -> tuple[Path, Path]:
    return (claude_export(tmp_path / "exp1" / "conversations.json", {"c1": SHORT, **OTHER}),
            claude_export(tmp_path / "exp2" / "conversations.json", {"c1": newer, **OTHER}))


def _live(conn, ext_id: str = "claude:c1") -> list[tuple[str, str, list[str]]]:  # noqa: ANN001
    """(id, import path, passage texts) of each live record with that ext_id."""
    rows = conn.execute("SELECT id, import_path FROM records WHERE ext_id = ? AND superseded_at IS NULL "
                        "AND forgotten_at IS NULL ORDER BY id", (ext_id,)).fetchall()
    return [(r[0], r[1], [t[0] for t in conn.execute("SELECT text FROM passages WHERE record_id = ? ORDER BY ord",
                                                      (r[0],))]) for r in rows]


def _versions(conn, ext_id: str = "claude:c1") -> int:  # noqa: ANN001
    return conn.execute("SELECT count(*) FROM records WHERE ext_id = ?", (ext_id,)).fetchone()[0]


def _notes(report, where: str = "claude:c1") -> list[str]:  # noqa: ANN001
    return [n.reason for n in report.notices if n.path == where]


def test_a_conversation_that_grew_in_an_export_saved_elsewhere_supersedes_its_old_version(fresh_db, tmp_path):
    exp1, exp2 = _exports(tmp_path)
    assert (_imp(fresh_db, exp1).added, _versions(fresh_db)) == (2, 1)
    old = _live(fresh_db)[0][0]
    rep = _imp(fresh_db, exp2)
    assert (rep.added, rep.updated, rep.skipped) == (0, 1, 1) and rep.notices == ()
    [(new, path, texts)] = _live(fresh_db)
    assert path == exp2.as_posix() and len(texts) == 4 and rep.record_ids == (new,)
    assert fresh_db.execute("SELECT superseded_by FROM records WHERE id = ?", (old,)).fetchone()[0] == new
    # every old turn is in one live record, so a search finds it once
    assert fresh_db.execute(
        "SELECT count(*) FROM passages p JOIN records r ON r.id = p.record_id WHERE p.text LIKE ? "
        "AND r.superseded_at IS NULL AND r.forgotten_at IS NULL", ("%message 0 about the heron%",)).fetchone()[0] == 1


def test_an_older_export_after_a_newer_one_is_skipped_with_a_notice(fresh_db, tmp_path):
    exp1, exp2 = _exports(tmp_path)
    _imp(fresh_db, exp2)
    [(current, _, _)] = _live(fresh_db)
    rep = _imp(fresh_db, exp1)
    assert (rep.added, rep.updated, rep.skipped) == (0, 0, 2)
    assert current in rep.skipped_record_ids and _versions(fresh_db) == 1       # nothing stored
    [note] = _notes(rep)
    assert note.startswith("an older export of this conversation") and current in note and str(exp2) in note
    assert _notes(rep, "claude:c2") == []                   # the same text: a plain duplicate


@pytest.mark.parametrize("order", [("exp1", "exp2"), ("exp2", "exp1")])
def test_both_exports_in_any_order_any_number_of_times_leave_the_longest(fresh_db, tmp_path, order):
    paths = dict(zip(("exp1", "exp2"), _exports(tmp_path), strict=True))
    reports = [_imp(fresh_db, paths[name]) for name in (*order, *order, *order)]
    [(_, path, texts)] = _live(fresh_db)
    assert path == paths["exp2"].as_posix() and len(texts) == 4
    assert len(_live(fresh_db, "claude:c2")) == 1
    assert all(r.added == r.updated == 0 for r in reports[2:])         # settled after one round
    assert _versions(fresh_db) == (2 if order[0] == "exp1" else 1)


@pytest.mark.parametrize("order", [("exp1", "exp2"), ("exp2", "exp1")])
def test_a_branched_conversation_keeps_the_export_whose_last_message_is_newer(fresh_db, tmp_path, order):
    paths = dict(zip(("exp1", "exp2"), _exports(tmp_path, newer=BRANCHED), strict=True))
    first, second = (_imp(fresh_db, paths[name]) for name in order)
    [(_, path, texts)] = _live(fresh_db)
    assert path == paths["exp2"].as_posix() and texts[-1] == "user: message 2 edited: the heron count doubled"
    [note] = _notes(second)
    assert "edited or branched" in note and "1 of its messages are not in this export" in note
    if order == ("exp1", "exp2"):
        assert second.updated == 1 and "this export's last message is newer" in note
    else:
        assert second.updated == 0 and "stays current and this export was not stored" in note
    again = [_imp(fresh_db, paths[name]) for name in order]          # and again: nothing moves
    assert all(r.added == r.updated == 0 for r in again) and _live(fresh_db)[0][1] == path


def test_a_branch_no_newer_than_the_stored_one_leaves_it_current(fresh_db, tmp_path):
    """Divergent with the same last time: neither is known to be newer, the stored one stays
    (whichever came first), and re-importing both never flips them."""
    tie = [*SHORT[:2], ("m2b", "message 2 said otherwise", 2)]
    exp1, exp2 = _exports(tmp_path, newer=tie)
    _imp(fresh_db, exp1)
    for _ in range(2):
        rep = _imp(fresh_db, exp2)
        assert rep.updated == 0 and "as new or newer" in _notes(rep)[0]
        assert _imp(fresh_db, exp1).updated == 0
    assert _live(fresh_db)[0][1] == exp1.as_posix() and _versions(fresh_db) == 1


def test_facts_citing_the_old_version_follow_the_grown_one(fresh_db, tmp_path):
    exp1, exp2 = _exports(tmp_path)
    _imp(fresh_db, exp1)
    [(old, _, _)] = _live(fresh_db)
    fact = fops.add_fact(fresh_db, FactDraft(text="the heron migration was discussed",
                                             evidence=(f"{old}:0",)), embed=False).fact_id
    _imp(fresh_db, exp2)
    [(new, _, _)] = _live(fresh_db)
    assert [(e.passage_id, e.live) for e in fops.get_fact(fresh_db, fact).evidence] == [
        (f"{old}:0", False), (f"{new}:0", True)]


def test_copies_stored_before_the_rule_are_all_superseded_by_a_newer_export(fresh_db, tmp_path, monkeypatch):
    exp1, exp2 = _exports(tmp_path)
    with monkeypatch.context() as m:             # the old behaviour: one live copy per export folder
        m.setattr(chat_versions.LiveConversations, "decide", lambda self, draft, passages: None)
        _imp(fresh_db, exp1)
        _imp(fresh_db, exp2)
    assert len(_live(fresh_db)) == 2
    assert _imp(fresh_db, exp1).updated == 0     # an older export still changes nothing
    exp3 = claude_export(tmp_path / "exp3" / "conversations.json", {"c1": [*LONG, message(4)], **OTHER})
    rep = _imp(fresh_db, exp3)
    assert rep.updated == 1 and "other live copies" in _notes(rep)[0]
    [(_, path, texts)] = _live(fresh_db)
    assert path == exp3.as_posix() and len(texts) == 5


def test_records_that_are_not_chat_conversations_keep_their_file_identity(fresh_db, tmp_path):
    """A JSONL line with the same id, even a conversation with a chat's ext_id, and a
    JSONL chat's day groups: another file is another record, as before."""
    for name, n in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "records.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
            {"id": "claude:c1", "kind": "conversation", "text": f"user: hello {n}\nassistant: hi"},
            {"id": "doc-1", "text": f"version {n} of a document"}]))
        (tmp_path / name / "chat.jsonl").write_text("".join(json.dumps(
            {"role": "user", "content": f"day message {k}", "timestamp": f"2026-02-02T09:0{k}:00Z"}) + "\n"
            for k in range(n + 1)))
        rep = _imp(fresh_db, tmp_path / name / "records.jsonl")
        assert (rep.added, rep.updated) == (2, 0)
        rep = _imp(fresh_db, tmp_path / name / "chat.jsonl")
        assert (rep.added, rep.updated, rep.notices) == (1, 0, ())
    exp1, _ = _exports(tmp_path)
    assert (_imp(fresh_db, exp1).added, _imp(fresh_db, exp1).skipped) == (2, 2)
    assert len(_live(fresh_db, "doc-1")) == 2 and len(_live(fresh_db, "chat-jsonl:chat/2026-02-02")) == 2
    assert len(_live(fresh_db)) == 3              # two JSONL lines and the chat export's conversation


def test_a_jsonl_chat_with_a_conversation_key_is_one_conversation_across_folders(fresh_db, tmp_path):
    for name, n in (("a", 2), ("b", 3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "chat.jsonl").write_text("".join(json.dumps(
            {"role": "user", "content": f"retro message {k}", "timestamp": f"2026-02-02T09:0{k}:00Z",
             "conversation_id": "retro"}) + "\n" for k in range(n)))
    assert _imp(fresh_db, tmp_path / "a" / "chat.jsonl").added == 1
    assert _imp(fresh_db, tmp_path / "b" / "chat.jsonl").updated == 1
    assert _imp(fresh_db, tmp_path / "a" / "chat.jsonl").updated == 0
    [(_, path, texts)] = _live(fresh_db, "chat-jsonl:chat/retro")
    assert path == (tmp_path / "b" / "chat.jsonl").as_posix() and len(texts) == 3


def test_pruning_a_folder_never_forgets_the_conversation_that_moved(fresh_db, tmp_path):
    (tmp_path / "notes.md").write_text("# Notes\n\nbird watching log\n")
    exp1, exp2 = _exports(tmp_path)
    (exp1.parent / "readme.md").write_text("# Export 1\n\nthe first export\n")
    _imp(fresh_db, exp1)
    _imp(fresh_db, exp2)
    [current] = _live(fresh_db)
    rep = _imp(fresh_db, tmp_path, prune=True)           # exp1's file is still there
    assert (rep.missing, rep.pruned) == ((), 0)
    exp1.unlink()                                         # pruning exp1's folder once its export is gone
    rep = _imp(fresh_db, exp1.parent, prune=True)
    assert (rep.missing, rep.pruned) == ((), 0)
    shutil.rmtree(exp2.parent)                            # even the current version's export
    rep = _imp(fresh_db, tmp_path, prune=True)
    assert (rep.missing, rep.pruned) == ((), 0) and _live(fresh_db) == [current]


def test_the_rule_is_antisymmetric():
    """Whatever two versions are, at most one gives way to the other: no flip-flop."""
    versions = {
        "short": Messages(frozenset({("id", "a"), ("id", "b")}), "2026-01-01T10:01:00.000000Z"),
        "long": Messages(frozenset({("id", "a"), ("id", "b"), ("id", "c")}), "2026-01-01T10:02:00.000000Z"),
        "branch": Messages(frozenset({("id", "a"), ("id", "d")}), "2026-01-01T10:05:00.000000Z"),
        "tie": Messages(frozenset({("id", "a"), ("id", "e")}), "2026-01-01T10:05:00.000000Z"),
        "reworded": Messages(frozenset({("id", "a"), ("id", "b")}), "2026-01-01T10:01:00.000000Z"),
        "untimed": Messages(frozenset({("text", "x", "")}), ""),
    }
    for a, ma in versions.items():
        for b, mb in versions.items():
            if a != b:
                wins = judge(ma, LiveVersion(b, "/b", "h"), mb).replaces, judge(mb, LiveVersion(a, "/a", "h"), ma).replaces
                assert not all(wins), (a, b)
