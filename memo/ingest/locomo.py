"""LoCoMo parser: ``locomo10.json`` -> one ``conversation`` record per session.

Each sample (two-person conversation) gets its own namespace ``<prefix>/<sample_id>`` so a
question can be searched within its own conversation only.  Each session becomes a record
dated by its ``session_<n>_date_time`` ("1:56 pm on 8 May, 2023" -> ISO-8601), and each
dialogue turn one passage: ``"<speaker>: <text>"`` (plus ``[image: <caption>]`` when the
turn shared a picture, since the caption is the only trace of it in the data), with the
turn id (``D<session>:<turn>``) as ``ext_id`` so evidence labels map onto passages.

``memo import --format locomo`` reads the file with ``iter_conversation_items``: a sample
of the wrong shape (not an object, no string ``sample_id``, ``conversation`` not an object)
is one rejection, and so is a session of the wrong shape (turns not a list, a turn not an
object, ``speaker``/``text`` not strings, a lone surrogate escape...); the other samples
and sessions go on.  ``iter_conversations`` (the eval harness) stays strict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo.ingest.beir import open_binary
from memo.ingest.jsonl import load_json
from memo.stored import PassageDraft, RecordDraft
from memo.text.json_value import json_problem

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M%p on %d %B, %Y")


def parse_session_date(value: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z' (None if unparseable).  LoCoMo
    gives no time zone; the dates are read as UTC so ages are consistent within a sample."""
    text = " ".join(str(value).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return None


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn.get('speaker', '')}: {str(turn.get('text', '')).strip()}"
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [image: {caption}]" if caption else text


def sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str | None]]:
    """(session number, turns, ISO date) in session order; sessions without turns skipped."""
    out = []
    for key, turns in conversation.items():
        m = _SESSION_KEY.fullmatch(key)
        if not m or not isinstance(turns, list) or not turns:
            continue
        n = int(m.group(1))
        out.append((n, turns, parse_session_date(conversation.get(f"{key}_date_time", ""))))
    return sorted(out, key=lambda s: s[0])


def session_draft(sample_id: str, n: int, turns: list[dict[str, Any]], event_at: str | None,
                  namespace: str) -> RecordDraft:
    passages = tuple(
        PassageDraft(text=turn_text(t), section=f"session {n}", speaker=t.get("speaker"),
                     event_at=event_at, ext_id=t.get("dia_id"))
        for t in turns)
    body = "\n".join(p.text for p in passages)
    return RecordDraft(body=body, kind="conversation", namespace=namespace,
                       title=f"{sample_id} session {n}", event_at=event_at,
                       ext_id=f"{sample_id}/session_{n}",
                       meta={"sample_id": sample_id, "session": n},
                       passages=passages)


def load_json_file(path: str | Path) -> object:
    """The parsed file; DatasetError (with the reason) when it cannot be read, is not
    UTF-8 or not JSON, or is nested too deeply for the parser."""
    with open_binary(path) as fh:
        try:
            raw = fh.read()
        except (OSError, EOFError) as exc:
            raise DatasetError(f"{path}: cannot read ({exc})") from None
    try:
        return load_json(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not JSON ({exc.msg})") from None
    except ValueError as exc:
        raise DatasetError(f"{path}: {exc}") from None


def load_samples(path: str | Path) -> list[dict[str, Any]]:
    data = load_json_file(path)
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s for s in data):
        raise DatasetError(f"{path}: expected a LoCoMo list of samples with 'conversation'")
    return data


def iter_conversations(path: str | Path, namespace_prefix: str = "locomo") -> Iterator[RecordDraft]:
    """Yield one ``conversation`` draft per session, sample by sample, in session order."""
    for sample in load_samples(path):
        sample_id = str(sample.get("sample_id") or "").strip()
        if not sample_id:
            raise DatasetError(f"{path}: a LoCoMo sample has no sample_id")
        namespace = f"{namespace_prefix}/{sample_id}"
        for n, turns, event_at in sessions(sample["conversation"]):
            yield session_draft(sample_id, n, turns, event_at, namespace)


def session_problem(turns: object) -> str | None:
    """Why a session's turns cannot be imported, or None."""
    if not isinstance(turns, list):
        return f"turns must be a list, not {type(turns).__name__}"
    for i, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            return f"turn {i} must be an object, not {type(turn).__name__}"
        for name, required in (("speaker", True), ("text", True), ("dia_id", False), ("blip_caption", False)):
            value = turn.get(name)
            if value is None and not required:
                continue
            if not isinstance(value, str):
                what = "missing" if value is None else f"a {type(value).__name__}"
                return f"turn {i}: {name!r} must be a string, not {what}"
    return json_problem(turns)


def _sample_problem(sample: object) -> str | None:
    if not isinstance(sample, dict):
        return f"a sample must be an object, not {type(sample).__name__}"
    sid = sample.get("sample_id")
    if not isinstance(sid, str) or not sid.strip():
        return "'sample_id' must be a non-empty string"
    if json_problem(sid):
        return f"'sample_id' {json_problem(sid)}"
    if not isinstance(sample.get("conversation"), dict):
        return "'conversation' must be an object of sessions"
    return None


def iter_conversation_items(path: str | Path, namespace_prefix: str = "locomo"
                            ) -> Iterator[tuple[str, RecordDraft | None, str | None]]:
    """(where, draft, None) per session and (where, None, reason) per malformed sample or
    session, sample by sample in session order.  ``where`` is ``#<sample_id>/session_<n>``,
    ``#<sample_id>`` or ``#<index>`` (a sample without a usable id); ``""`` with a reason
    when the whole file is unusable (unreadable, not JSON, not a list)."""
    try:
        data = load_json_file(path)
    except DatasetError as exc:
        yield "", None, str(exc)
        return
    if not isinstance(data, list):
        yield "", None, f"expected a LoCoMo list of samples, not a JSON {type(data).__name__}"
        return
    for index, sample in enumerate(data):
        problem = _sample_problem(sample)
        if problem:
            sid = sample.get("sample_id") if isinstance(sample, dict) else None
            ok_id = isinstance(sid, str) and sid.strip() and not json_problem(sid)
            yield f"#{sid.strip() if ok_id else index}", None, problem  # type: ignore[union-attr]
            continue
        sample_id = sample["sample_id"].strip()
        conversation = sample["conversation"]
        namespace = f"{namespace_prefix}/{sample_id}"
        numbered = sorted((int(m.group(1)), key) for key in conversation
                          if isinstance(key, str) and (m := _SESSION_KEY.fullmatch(key)))
        for n, key in numbered:
            turns = conversation[key]
            date = conversation.get(f"{key}_date_time", "")
            problem = session_problem(turns)
            if problem is None and not isinstance(date, str):
                problem = f"'{key}_date_time' must be a string, not {type(date).__name__}"
            if problem:
                yield f"#{sample_id}/{key}", None, problem
                continue
            if turns:
                yield f"#{sample_id}/{key}", session_draft(sample_id, n, turns, parse_session_date(date),
                                                           namespace), None
