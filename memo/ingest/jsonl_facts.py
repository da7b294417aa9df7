"""JSONL fact lines: ``{"type": "fact", "text": ..., "evidence": [...], ...}``.

The record reader (memo.ingest.jsonl) skips these lines; the importer reads them in a
second pass, after every record of the file has committed, so a fact may cite a record of
the same file (by its ``id``, which becomes the record's ext_id).  Fields:

    text (required), evidence (required: a list of passage ids, record ids or ext_ids),
    namespace, subject, predicate, object, event_date, trust, author, source, meta

A bad line is rejected with its number and reason; the rest goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from memo.ingest.files import NotRegularFile
from memo.ingest.jsonl import READ_ERRORS, load_json, open_lines, read_lines
from memo.stored import FactDraft
from memo.text.json_value import json_problem

FACT_FIELDS = {"type", "text", "evidence", "namespace", "subject", "predicate", "object", "event_date",
               "event_at", "trust", "author", "source", "meta"}


def is_fact_line(obj: object) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "fact"


def parse_fact(obj: dict, namespace: str, author: str | None) -> FactDraft:
    unknown = sorted(set(obj) - FACT_FIELDS)
    if unknown:
        raise ValueError(f"unknown fact field(s) {', '.join(unknown)}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("fact field 'text' is missing or empty")
    ev = obj.get("evidence")
    if isinstance(ev, str):
        ev = [ev]
    if not isinstance(ev, list) or not ev or not all(isinstance(e, str) for e in ev):
        raise ValueError("fact field 'evidence' must be a non-empty list of ids")
    fields: dict[str, object] = {}
    for name in ("namespace", "subject", "predicate", "object", "author", "source"):
        if obj.get(name) is not None:
            if not isinstance(obj[name], str):
                raise ValueError(f"fact field {name!r} must be a string")
            fields[name] = obj[name]
    event = obj.get("event_date", obj.get("event_at"))
    if event is not None and not isinstance(event, str):
        raise ValueError("fact field 'event_date' must be an ISO-8601 string")
    trust = obj.get("trust", 1.0)
    if isinstance(trust, bool) or not isinstance(trust, int | float) or not 0.0 <= trust <= 1.0:
        raise ValueError("fact field 'trust' must be a number in 0..1")
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError("fact field 'meta' must be an object")
    return FactDraft(text=text, evidence=tuple(ev), namespace=str(fields.pop("namespace", namespace)),
                     event_at=event, trust=float(trust), meta=meta,
                     author=str(fields.pop("author")) if "author" in fields else author,
                     **fields)  # type: ignore[arg-type]


def iter_jsonl_facts(path: Path, rel: str, namespace: str, author: str | None, *, max_bytes: int
                     ) -> Iterator[tuple[str, FactDraft | None, str | None]]:
    """(where, draft, None) per fact line, (where, None, reason) per bad fact line."""
    try:
        handle = open_lines(path)
    except (NotRegularFile, OSError):
        return                                   # the record pass already rejected the file
    with handle:
        try:
            yield from _fact_lines(handle, rel, namespace, author, max_bytes)
        except READ_ERRORS:
            return                               # the record pass rejected the rest of the file


def _fact_lines(handle: BinaryIO, rel: str, namespace: str, author: str | None, max_bytes: int
                ) -> Iterator[tuple[str, FactDraft | None, str | None]]:
    for lineno, raw in read_lines(handle, max_bytes):
        if raw is None or not raw.strip():
            continue
        where = f"{rel}:{lineno}"
        try:
            obj = load_json(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
            continue                         # rejected by the record pass
        if not is_fact_line(obj):
            continue
        try:
            problem = json_problem(obj)
            if problem:
                raise ValueError(problem)
            yield where, parse_fact(obj, namespace, author), None
        except ValueError as exc:
            yield where, None, str(exc)
