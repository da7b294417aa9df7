"""Chat exports as conversations (issue 32.4): ChatGPT's and Claude's conversations.json and
a plain JSONL of messages, through memo's real importer into a real SQLite database.
Fixtures: tests/fixtures/chat (shaped as the apps export them, content written here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo.errors import DatasetError
from memo.ingest.chat_exports import detect
from memo.ops.importer import ImportOptions, import_path
from memo.ops.records import get
from memo.store.db import open_db

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "chat"


def _import(db: Path, path: Path, **opts):
    conn = open_db(db, write=True)
    try:
        return import_path(conn, path, ImportOptions(**opts)), conn
    except BaseException:
        conn.close()
        raise


def _records(conn) -> dict[str, object]:
    ids = [r[0] for r in conn.execute("SELECT id FROM records WHERE superseded_at IS NULL ORDER BY recorded_at, id")]
    return {rec.title: rec for rec in (get(conn, i) for i in ids)}


def test_detection() -> None:
    assert detect(FIX / "chatgpt-conversations.json") == "chatgpt"
    assert detect(FIX / "claude-conversations.json") == "claude"
    assert detect(FIX / "chat.jsonl") == "chat-jsonl"
    assert detect(Path(__file__)) is None


def test_chatgpt_keeps_the_shown_thread_speakers_and_dates(tmp_path: Path) -> None:
    report, conn = _import(tmp_path / "m.db", FIX / "chatgpt-conversations.json")
    assert (report.format, report.added, report.rejected) == ("chat", 2, ())
    recs = _records(conn)
    rec = recs["Postgres backup retention"]
    texts = [p.text for p in rec.passages]
    # current_node's thread: the edited second question (u2b) and its answers, not the first branch
    assert texts == [
        "user: How long should we keep nightly pg_dump backups of the billing database?",
        "assistant: A common policy is 7 daily, 4 weekly and 12 monthly copies. Keep at least one copy off-site "
        "and test restores monthly.",
        "user: We decided on 14 daily copies instead. Can you write the cron line?",
        "assistant: 0 2 * * * pg_dump -Fc billing > /backups/billing-$(date +%F).dump",
        "assistant: [image]\nHere is the retention diagram.",
    ]
    assert [p.speaker for p in rec.passages] == ["user", "assistant", "user", "assistant", "assistant"]
    assert rec.passages[0].event_at.startswith("2026-01-03T10:00:10.5") and rec.event_at.startswith("2026-01-03T10:00:10")
    assert rec.kind == "conversation" and rec.ext_id == "chatgpt:6779a1b2-0000-4000-8000-000000000001"
    assert rec.meta["other_branches"] == 2 and rec.meta["left_out"] == 2      # system + tool messages
    assert [p.ext_id for p in rec.passages] == ["u1", "a1", "u2b", "a2b", "a3"]
    conn.close()


def test_claude_export(tmp_path: Path) -> None:
    report, conn = _import(tmp_path / "m.db", FIX / "claude-conversations.json")
    assert report.added == 2 and not report.rejected
    recs = _records(conn)
    rec = recs["Rate limiting the public API"]
    assert [p.speaker for p in rec.passages] == ["user", "assistant", "user"]
    assert rec.passages[2].text.endswith("[attachment: nginx.conf]")
    assert rec.passages[1].event_at.startswith("2026-01-05T09:13:02.5")
    assert "untitled conversation" in recs          # a conversation without a name
    conn.close()


def test_plain_jsonl_groups_by_conversation_key_else_by_day(tmp_path: Path) -> None:
    report, conn = _import(tmp_path / "m.db", FIX / "chat.jsonl")
    assert report.format == "chat" and report.added == 3 and not report.rejected
    recs = _records(conn)
    assert set(recs) == {"chat 2026-02-02", "chat 2026-02-03", "chat retro"}
    day2 = recs["chat 2026-02-03"]
    assert [p.speaker for p in day2.passages] == ["user", "ops-bot"]        # a message's name wins
    assert day2.passages[0].event_at.startswith("2026-02-03T10:00:00")      # epoch seconds, UTC
    assert recs["chat retro"].passages[0].event_at.startswith("2026-02-03T14:00:00")   # +01:00 -> UTC
    conn.close()


@pytest.mark.parametrize("name", ["chatgpt-conversations.json", "claude-conversations.json", "chat.jsonl"])
def test_reimport_adds_nothing(tmp_path: Path, name: str) -> None:
    db = tmp_path / "m.db"
    first, conn = _import(db, FIX / name)
    conn.close()
    again, conn = _import(db, FIX / name)
    assert again.added == 0 and again.updated == 0 and again.skipped == first.added
    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == first.added
    conn.close()


def test_a_conversation_that_grew_supersedes_its_older_version(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    src = tmp_path / "conversations.json"
    data = json.loads((FIX / "chatgpt-conversations.json").read_text())
    src.write_text(json.dumps(data))
    _, conn = _import(db, src)
    conn.close()
    lisbon = data[1]
    lisbon["mapping"]["m2"]["children"] = ["m3"]
    lisbon["mapping"]["m3"] = {"id": "m3", "parent": "m2", "children": [], "message": {
        "id": "m3", "author": {"role": "user"}, "create_time": 1767521000.0,
        "content": {"content_type": "text", "parts": ["Book Santiago de Alfama, please."]}}}
    lisbon["current_node"] = "m3"
    src.write_text(json.dumps(data))
    report, conn = _import(db, src)
    assert (report.added, report.updated, report.skipped) == (0, 1, 1)
    assert len(_records(conn)["Trip to Lisbon"].passages) == 3
    conn.close()


def test_malformed_exports_are_rejected_clearly_and_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    report, conn = _import(db, FIX / "chatgpt-one-malformed.json")
    assert report.added == 2
    assert [(r.path, r.reason) for r in report.rejected] == [
        ("chatgpt-one-malformed.json[1]", "'mapping' must be an object of message nodes")]
    conn.close()
    with pytest.raises(DatasetError, match="not JSON"):
        _import(db, FIX / "chatgpt-truncated.json", format="chat")
    report, conn = _import(db, FIX / "chat-malformed.jsonl", format="chat")
    assert report.added == 1 and len(report.rejected) == 3
    assert [r.path for r in report.rejected] == ["chat-malformed.jsonl:2", "chat-malformed.jsonl:3",
                                                 "chat-malformed.jsonl:4"]
    assert "is not a date" in report.rejected[2].reason
    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 3        # nothing lost
    conn.close()


def test_records_jsonl_is_not_taken_for_a_chat(tmp_path: Path) -> None:
    src = tmp_path / "records.jsonl"
    src.write_text('{"text": "a plain memo record", "role": "x", "content": "y"}\n')
    report, conn = _import(tmp_path / "m.db", src)
    assert report.format == "jsonl"
    conn.close()
