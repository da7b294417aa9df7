"""Chat history as people export it: ChatGPT's and Claude's ``conversations.json``, and a
plain JSONL of messages (``{"role", "content", "timestamp"}``), imported as
``conversation`` records (``memo import --format chat``; auto-detected).

Each conversation becomes one record: kind ``conversation``, its title, ``event_at`` its
first message's time, ``ext_id`` ``<export>:<conversation id>``, and one passage per message
(``"<speaker>: <text>"``, the speaker, the message's own time, its id as ``ext_id``; a
long message is windowed like any supplied passage).  Speakers are ``user`` and
``assistant`` in all three shapes (Claude's ``human`` is ``user``), or the author's name
when an export gives one.

A conversation is known by its namespace and ``ext_id`` wherever its export was saved
(``conversation_key``: people unzip each export to a new folder), so a re-import of the same
export adds nothing, a conversation that grew since the last export supersedes its older
version even from another folder, and an older export imported after a newer one leaves
the newer version current (memo.ops.chat_versions says which version wins and why).

* **ChatGPT** (``conversations.json``: a list of ``{title, create_time, mapping,
  current_node, ...}``).  ``mapping`` is a tree: every edit or regeneration starts a
  branch.  The thread imported is the one the app shows, from ``current_node`` up to the
  root; the messages of other branches are counted in the record's ``meta``
  (``other_branches``).  System and tool messages (hidden prompts, browsing results) and
  empty ones are left out, also counted in ``meta``.  Text parts are joined; an image part
  is written ``[image]``.
* **Claude** (``conversations.json``: a list of ``{uuid, name, created_at,
  chat_messages: [{uuid, sender, text | content, created_at, attachments, files}]}``).
  Attachments are named in the message (``[attachment: notes.txt]``).
* **Plain JSONL**: one message per line, ``role`` and ``content`` (a string, or a list of
  ``{"type": "text", "text"}`` blocks), optional ``timestamp`` (ISO-8601 or epoch
  seconds), ``name``, ``id``, and a conversation key (the first present of
  ``conversation_id``, ``conversation``, ``session_id``, ``session``, ``thread_id``,
  ``thread``).  Lines with the same key form one conversation; without any key, a file's
  messages are split into one conversation per UTC day.

A malformed conversation or line is rejected with its position and reason, and the
others go on (nothing already stored is touched); an export that is not one of these
shapes is a DatasetError that names what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo.ingest.beir import open_binary
from memo.ingest.jsonl import load_json, read_lines
from memo.stored import PassageDraft, RecordDraft
from memo.text.json_value import json_problem

EXPORTS = ("chatgpt", "claude", "chat-jsonl")
CONVERSATION_KEYS = ("conversation_id", "conversation", "session_id", "session", "thread_id", "thread")
_SPEAKERS = {"human": "user", "user": "user", "assistant": "assistant", "model": "assistant"}
_HIDDEN_ROLES = {"system", "tool", "function", "developer"}
_PEEK = 1 << 16
MAX_LINE_BYTES = 8 * 1024 * 1024      # one JSONL message (a long answer with code fits many times)
MAX_THREAD = 100_000                  # messages followed up one ChatGPT tree (a cycle guard)

Item = tuple[str, RecordDraft | None, str | None]      # (where, draft, rejection reason)
# A plain JSONL's messages without a conversation key are grouped by UTC day, or all in one
# when undated (``_iter_jsonl``): memo's grouping of one file, not a conversation the app named.
_DAY_GROUP = re.compile(r"\d{4}-\d{2}-\d{2}|all")


# --- detection -------------------------------------------------------------------------------
def detect(path: str | Path) -> str | None:
    """``chatgpt`` / ``claude`` / ``chat-jsonl`` when the file's opening looks like that
    export, else None.  Reads at most 64 KiB."""
    try:
        with open_binary(path) as fh:
            head = fh.read(_PEEK)
    except (OSError, EOFError, DatasetError):
        return None
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    if text.startswith("["):
        if '"mapping"' in text and ('"current_node"' in text or '"create_time"' in text):
            return "chatgpt"
        if '"chat_messages"' in text:
            return "claude"
        return None
    if text.startswith("{"):
        first = text.split("\n", 1)[0]
        try:
            obj = json.loads(first)
        except ValueError:
            return None
        if isinstance(obj, dict) and "role" in obj and "content" in obj and "text" not in obj:
            return "chat-jsonl"
    return None


# --- identity ----------------------------------------------------------------------------------
def conversation_key(kind: str, ext_id: str | None, meta: Mapping[str, object] | None) -> str | None:
    """The key a chat export's conversation is known by in its namespace wherever the export
    was saved (its ``ext_id``), from a draft's or a stored record's kind, ext_id and meta;
    None for every other record (a file, a JSONL or BEIR line, a LoCoMo session: those stay
    known by import path and ext_id).  ChatGPT's and Claude's conversation ids are the app's
    own, unique whatever the file; a plain JSONL's conversation key too (its ext_id keeps the
    file's stem, as it always has, so the same export saved under another folder matches).
    A JSONL's day groups are not conversations anyone named: two logs called chat.jsonl in
    two folders both have a '2026-02-03', so those stay known by their file (and so does a
    conversation whose key looks like a day group, '2026-02-03' or 'all')."""
    if kind != "conversation" or not ext_id or not isinstance(meta, Mapping):
        return None
    export = meta.get("export")
    if export not in EXPORTS or not ext_id.startswith(f"{export}:"):
        return None
    if export == "chat-jsonl" and _DAY_GROUP.fullmatch(ext_id[len("chat-jsonl:"):].partition("/")[2]):
        return None
    return ext_id


# --- shared ------------------------------------------------------------------------------------
def _iso(value: object) -> str | None:
    """Epoch seconds or an ISO-8601 string -> 'YYYY-MM-DDTHH:MM:SS[.ffffff]Z' (None if unusable)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, (int, float)):
            if not math.isfinite(value):
                return None
            when = datetime.fromtimestamp(float(value), tz=UTC)
        elif isinstance(value, str) and value.strip():
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            when = when.astimezone(UTC)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{when.microsecond:06d}" if when.microsecond else "") + "Z"


def _speaker(role: object, name: object = None) -> str:
    if isinstance(name, str) and name.strip():
        return name.strip()
    return _SPEAKERS.get(str(role).lower(), str(role)) if role is not None else "unknown"


def _blocks_text(blocks: object) -> str:
    """Text of a content list: strings, {"type": "text", "text"} blocks; images as [image]."""
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        return ""
    out = []
    for b in blocks:
        if isinstance(b, str):
            out.append(b)
        elif isinstance(b, dict):
            if isinstance(b.get("text"), str):
                out.append(b["text"])
            elif "image" in str(b.get("type") or b.get("content_type") or "") or "asset_pointer" in b:
                out.append("[image]")
    return "\n".join(t for t in out if t.strip())


def _draft(export: str, conv_id: str, title: str, messages: list[tuple[str, str, str | None, str | None]],
           namespace: str, meta: dict[str, Any]) -> RecordDraft:
    """messages: (speaker, text, ISO time or None, message id or None)."""
    first = next((when for _, _, when, _ in messages if when), None)
    passages = tuple(PassageDraft(text=f"{speaker}: {text}", section=title, speaker=speaker, event_at=when or first,
                                  ext_id=mid)
                     for speaker, text, when, mid in messages)
    return RecordDraft(body="\n".join(p.text for p in passages), kind="conversation", namespace=namespace,
                       title=title, event_at=first, ext_id=f"{export}:{conv_id}",
                       meta={"export": export, "conversation_id": conv_id, "messages": len(messages), **meta},
                       passages=passages)


def _load_list(path: Path, what: str) -> list[Any]:
    with open_binary(path) as fh:
        raw = fh.read()
    try:
        data = load_json(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise DatasetError(f"{path}: not JSON ({exc})",
                           hint="the file looks cut short or is not an export; nothing was imported from it: "
                                "export it again from the app") from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a {what} export is a JSON list of conversations, not a {type(data).__name__}")
    return data


# --- ChatGPT -------------------------------------------------------------------------------------
def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return _blocks_text(content.get("parts"))
    if kind == "code" and isinstance(content.get("text"), str):
        return content["text"]
    return ""         # browsing displays, reasoning traces, ...: not what was said


def chatgpt_conversation(conv: object, namespace: str) -> RecordDraft:
    if not isinstance(conv, dict):
        raise ValueError(f"a conversation must be an object, not {type(conv).__name__}")
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("'mapping' must be an object of message nodes")
    if (problem := json_problem(conv)):
        raise ValueError(problem)
    node_id = conv.get("current_node")
    if node_id not in mapping:       # no current node: the latest leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        node_id = max(leaves, key=lambda k: (mapping[k].get("message") or {}).get("create_time") or 0, default=None)
    thread: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None and node_id in mapping and node_id not in seen and len(seen) < MAX_THREAD:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise ValueError(f"node {str(node_id)[:40]!r} must be an object")
        if isinstance(node.get("message"), dict):
            thread.append(node["message"])
        node_id = node.get("parent")
    thread.reverse()
    hidden = 0
    messages = []
    for m in thread:
        author = m.get("author") if isinstance(m.get("author"), dict) else {}
        role = author.get("role")
        text = _chatgpt_text(m).strip()
        if role in _HIDDEN_ROLES or not text:
            hidden += 1
            continue
        messages.append((_speaker(role, author.get("name")), text, _iso(m.get("create_time")),
                         str(m["id"]) if m.get("id") else None))
    if not messages:
        raise ValueError("no user or assistant message with text on its current thread")
    in_thread = sum(1 for n in mapping.values() if isinstance(n, dict) and isinstance(n.get("message"), dict))
    conv_id = str(conv.get("conversation_id") or conv.get("id") or _fallback_id(conv.get("title"), messages))
    title = str(conv.get("title") or "").strip() or "untitled conversation"
    meta = {"left_out": hidden, "other_branches": max(0, in_thread - len(thread))}
    draft = _draft("chatgpt", conv_id, title, messages, namespace, meta)
    return draft if draft.event_at else _with_time(draft, _iso(conv.get("create_time")))


# --- Claude --------------------------------------------------------------------------------------
def claude_conversation(conv: object, namespace: str) -> RecordDraft:
    if not isinstance(conv, dict):
        raise ValueError(f"a conversation must be an object, not {type(conv).__name__}")
    items = conv.get("chat_messages")
    if not isinstance(items, list):
        raise ValueError("'chat_messages' must be a list")
    if (problem := json_problem(conv)):
        raise ValueError(problem)
    messages = []
    empty = 0
    for i, m in enumerate(items, start=1):
        if not isinstance(m, dict):
            raise ValueError(f"message {i} must be an object, not {type(m).__name__}")
        text = _blocks_text(m.get("content")) if m.get("content") else ""
        if not text.strip() and isinstance(m.get("text"), str):
            text = m["text"]
        names = [str(a.get("file_name")) for key in ("attachments", "files") for a in (m.get(key) or [])
                 if isinstance(a, dict) and a.get("file_name")]
        if names:
            text = (text + "\n" if text.strip() else "") + " ".join(f"[attachment: {n}]" for n in names)
        if not text.strip():
            empty += 1
            continue
        messages.append((_speaker(m.get("sender")), text.strip(), _iso(m.get("created_at")),
                         str(m["uuid"]) if m.get("uuid") else None))
    if not messages:
        raise ValueError("no message with text")
    conv_id = str(conv.get("uuid") or _fallback_id(conv.get("name"), messages))
    title = str(conv.get("name") or "").strip() or "untitled conversation"
    draft = _draft("claude", conv_id, title, messages, namespace, {"left_out": empty})
    return draft if draft.event_at else _with_time(draft, _iso(conv.get("created_at")))


def _fallback_id(title: object, messages: list[tuple[str, str, str | None, str | None]]) -> str:
    first = messages[0]
    return hashlib.sha256(f"{title}\x1f{first[2]}\x1f{first[1]}".encode("utf-8", "replace")).hexdigest()[:16]


def _with_time(draft: RecordDraft, when: str | None) -> RecordDraft:
    if when is None:
        return draft
    return replace(draft, event_at=when, passages=tuple(replace(p, event_at=p.event_at or when)
                                                        for p in draft.passages))


def _iter_export(path: Path, export: str, namespace: str) -> Iterator[Item]:
    parse = chatgpt_conversation if export == "chatgpt" else claude_conversation
    for i, conv in enumerate(_load_list(path, "ChatGPT" if export == "chatgpt" else "Claude")):
        where = f"[{i}]"
        try:
            yield where, parse(conv, namespace), None
        except ValueError as exc:
            yield where, None, str(exc)


# --- plain JSONL ---------------------------------------------------------------------------------
def _jsonl_messages(path: Path) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    with open_binary(path) as fh:
        for lineno, raw in read_lines(fh, MAX_LINE_BYTES):
            where = f":{lineno}"
            if raw is None:
                yield where, None, f"line is over the {MAX_LINE_BYTES}-byte cap"
                continue
            if not raw.strip():
                continue
            try:
                obj = load_json(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except UnicodeDecodeError as exc:
                yield where, None, f"not UTF-8 (byte {exc.start})"
                continue
            except ValueError as exc:
                yield where, None, f"invalid JSON: {exc}"
                continue
            if not isinstance(obj, dict) or "role" not in obj or "content" not in obj:
                yield where, None, "a message needs 'role' and 'content'"
                continue
            if (problem := json_problem(obj)):
                yield where, None, problem
                continue
            yield where, obj, None


def _iter_jsonl(path: Path, namespace: str) -> Iterator[Item]:
    groups: dict[str, list[tuple[str, str, str | None, str | None]]] = {}
    for where, obj, reason in _jsonl_messages(path):
        if obj is None:
            yield where, None, reason
            continue
        text = _blocks_text(obj["content"]).strip()
        if not text:
            yield where, None, "'content' holds no text"
            continue
        when = _iso(obj.get("timestamp", obj.get("created_at")))
        if obj.get("timestamp", obj.get("created_at")) is not None and when is None:
            yield where, None, f"'timestamp' {str(obj.get('timestamp', obj.get('created_at')))[:40]!r} is not a date"
            continue
        key = next((str(obj[k]) for k in CONVERSATION_KEYS if obj.get(k) not in (None, "")), None)
        if key is None:
            key = when[:10] if when else "all"          # a day group (_DAY_GROUP)
        mid = obj.get("id")
        groups.setdefault(key, []).append((_speaker(obj.get("role"), obj.get("name")), text, when,
                                           str(mid) if mid is not None else None))
    for key, messages in groups.items():
        title = f"{path.stem} {key}"
        yield f"#{key}", _draft("chat-jsonl", f"{path.stem}/{key}", title, messages, namespace, {}), None


def iter_chat_items(path: str | Path, namespace: str = "default", export: str | None = None) -> Iterator[Item]:
    """(position, draft, rejection) per conversation of a chat export; ``export`` one of
    ``EXPORTS``, else detected."""
    p = Path(path)
    export = export or detect(p)
    if export not in EXPORTS:
        raise DatasetError(f"{p.name} is not a chat export memo reads",
                           hint="memo imports ChatGPT's or Claude's conversations.json and a JSONL of "
                                "{role, content, timestamp} lines (memo/ingest/chat_exports.py)")
    if export == "chat-jsonl":
        yield from _iter_jsonl(p, namespace)
    else:
        yield from _iter_export(p, export, namespace)
