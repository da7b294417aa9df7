"""JSONL import: one record per line, the same fields as ``memo add`` (docs/cli-json.md).

    {"text": "...", "kind": "note", "namespace": "work", "title": "...", "source": "...",
     "library": "...", "version": "...", "tags": ["a", "b"], "event_date": "2024-05-01",
     "trust": 0.8, "author": "...", "id": "external-id", "meta": {...}}

Only ``text`` (alias ``body``) is required; a missing field takes the value given on the
command line.  ``id`` is the record's id in the source: re-importing a line with the same
id and changed text supersedes the old version.  A line without ``id`` is addressed by
its line number.  A bad line is rejected with its number and reason; the rest goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from memo.ingest.files import FileItem
from memo.types import KINDS, RecordDraft

_STR_FIELDS = ("kind", "namespace", "title", "source", "library", "version", "author")
KNOWN_FIELDS = {"text", "body", "tags", "event_date", "event_at", "trust", "id", "meta", *_STR_FIELDS}


def parse_line(obj: object, template: RecordDraft, rel: str, lineno: int) -> RecordDraft:
    if not isinstance(obj, dict):
        raise ValueError("line is not a JSON object")
    unknown = sorted(set(obj) - KNOWN_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    text = obj.get("text", obj.get("body"))
    if not isinstance(text, str) or not text.strip():
        raise ValueError("field 'text' is missing or empty")
    changes: dict[str, object] = {"body": text}
    for name in _STR_FIELDS:
        if obj.get(name) is not None:
            if not isinstance(obj[name], str):
                raise ValueError(f"field {name!r} must be a string")
            changes[name] = obj[name]
    if changes.get("kind", template.kind) not in KINDS:
        raise ValueError(f"kind {changes.get('kind')!r} is not one of {', '.join(KINDS)}")
    tags = obj.get("tags")
    if tags is not None:
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("field 'tags' must be a list of strings")
        changes["tags"] = tuple(dict.fromkeys([*template.tags, *tags]))
    event = obj.get("event_date", obj.get("event_at"))
    if event is not None:
        if not isinstance(event, str):
            raise ValueError("field 'event_date' must be an ISO-8601 string")
        changes["event_at"] = event
    if obj.get("trust") is not None:
        trust = obj["trust"]
        if isinstance(trust, bool) or not isinstance(trust, int | float) or not 0.0 <= trust <= 1.0:
            raise ValueError("field 'trust' must be a number in 0..1")
        changes["trust"] = float(trust)
    if obj.get("meta") is not None:
        if not isinstance(obj["meta"], dict):
            raise ValueError("field 'meta' must be an object")
        changes["meta"] = obj["meta"]
    ext = obj.get("id")
    if ext is not None:
        changes["ext_id"] = str(ext)
        changes["import_path"] = rel
    else:
        changes["ext_id"] = None
        changes["import_path"] = f"{rel}:{lineno}"
    return replace(template, **changes)  # type: ignore[arg-type]


def iter_jsonl(path: Path, rel: str, template: RecordDraft, *, max_bytes: int) -> Iterator[FileItem]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield FileItem(rel, rejected=f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{rel}:{lineno}"
            if not raw.strip():
                continue
            if len(raw) > max_bytes:
                yield FileItem(where, rejected=f"line is {len(raw)} bytes, over the {max_bytes}-byte cap")
                continue
            try:
                obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
                yield FileItem(where, draft=parse_line(obj, template, rel, lineno))
            except UnicodeDecodeError as exc:
                yield FileItem(where, rejected=f"not UTF-8 (byte {exc.start})")
            except json.JSONDecodeError as exc:
                yield FileItem(where, rejected=f"invalid JSON: {exc.msg} at column {exc.colno}")
            except ValueError as exc:
                yield FileItem(where, rejected=str(exc))
