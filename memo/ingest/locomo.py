"""LoCoMo parser: ``locomo10.json`` -> one ``conversation`` record per session.

Each sample (two-person conversation) gets its own namespace ``<prefix>/<sample_id>`` so a
question can be searched within its own conversation only.  Each session becomes a record
dated by its ``session_<n>_date_time`` ("1:56 pm on 8 May, 2023" -> ISO-8601), and each
dialogue turn one passage: ``"<speaker>: <text>"`` (plus ``[image: <caption>]`` when the
turn shared a picture, since the caption is the only trace of it in the data), with the
turn id (``D<session>:<turn>``) as ``ext_id`` so evidence labels map onto passages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memo.errors import DatasetError
from memo.ingest.beir import open_text
from memo.types import PassageDraft, RecordDraft

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


def load_samples(path: str | Path) -> list[dict[str, Any]]:
    with open_text(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not JSON ({exc.msg})") from exc
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
