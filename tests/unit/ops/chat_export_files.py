"""Claude-format ``conversations.json`` files for the tests of a conversation imported from
several exports (memo.ops.chat_versions): the shape memo/ingest/chat_exports.py reads."""

from __future__ import annotations

import json
from pathlib import Path

Message = tuple[str, str, int]          # (message uuid, text, minute after 10:00 on 2026-03-01)


def message(k: int, minute: int | None = None, topic: str = "heron migration") -> Message:
    return (f"m{k}", f"message {k} about the {topic}", k if minute is None else minute)


def claude_export(path: Path, conversations: dict[str, list[Message]]) -> Path:
    """Write ``path`` (folders made): one conversation per uuid, senders alternating."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([
        {"uuid": uuid, "name": f"Chat {uuid}", "created_at": "2026-03-01T10:00:00Z",
         "chat_messages": [{"uuid": mid, "sender": "human" if i % 2 == 0 else "assistant", "text": text,
                            "created_at": f"2026-03-01T10:{minute:02d}:00Z"}
                           for i, (mid, text, minute) in enumerate(messages)]}
        for uuid, messages in conversations.items()]))
    return path
