"""JSONL import: one record per line, the same fields as ``memo add`` (docs/cli-json.md).

    {"text": "...", "kind": "note", "namespace": "work", "title": "...", "source": "...",
     "library": "...", "version": "...", "tags": ["a", "b"], "event_date": "2024-05-01",
     "trust": 0.8, "author": "...", "id": "external-id", "meta": {...}, "entities": ["Acme", "Bob"]}

Only ``text`` (alias ``body``) is required; a missing field takes the value given on the
command line.  ``id`` is the record's id in the source: re-importing a line with the same
id and changed text supersedes the old version.  A line without ``id`` is addressed by
its line number.  A bad line is rejected with its number and reason; the rest goes on:
invalid UTF-8 or JSON, a line that is not an object, a string holding a lone surrogate
escape (``"\\ud800"``: not Unicode text, SQLite cannot store it), values nested more than
``MAX_JSON_DEPTH`` levels (a 3,000-deep line would overflow the parser's stack), a line
longer than ``max_bytes`` (never read into memory whole).  A gzipped file (``.jsonl.gz``,
known by its magic bytes) is read through gzip, one bounded line at a time; a stream that
breaks off rejects the rest of the file.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from memo.ingest.files import FileItem, NotRegularFile, gunzipped, open_regular
from memo.stored import RecordDraft
from memo.text.json_value import MAX_JSON_DEPTH, json_problem
from memo.types import KINDS

_STR_FIELDS = ("kind", "namespace", "title", "source", "library", "version", "author")
KNOWN_FIELDS = {"text", "body", "tags", "event_date", "event_at", "trust", "id", "meta", "type", "entities",
                *_STR_FIELDS}
_CHUNK = 1 << 16
# What reading a file on can raise once it is open: an I/O error, or a gzip stream that is
# truncated (EOFError) or corrupt (zlib.error, gzip.BadGzipFile is an OSError).
READ_ERRORS = (OSError, EOFError, zlib.error)


def line_over_cap(max_bytes: int) -> str:
    """The rejection of a line longer than ``max_bytes`` (JSONL, its fact lines, BEIR)."""
    return f"line is over the {max_bytes}-byte cap (--max-bytes); skipped without being read whole"


def open_lines(path: str | Path) -> BinaryIO:
    """A regular file for ``read_lines``, gunzipped when it is gzip (``open_regular``'s
    errors: NotRegularFile, OSError)."""
    return gunzipped(open_regular(path))


def load_json(text: str | bytes) -> object:
    """``json.loads`` that turns a value nested too deeply for the parser's stack
    (RecursionError) into a ValueError with a reason, like any other bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)") from None


def read_lines(handle: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, raw line) of a binary file; a line longer than ``max_bytes`` is
    skipped without being held in memory and yielded as None.  Every read is bounded
    (``readline(limit)``; on a gzip stream that inflates at most about ``limit`` bytes),
    so memory stays at about ``max_bytes`` whatever the longest line: the one place
    import reads lines (JSONL, its facts, BEIR and the progress bar's count)."""
    lineno = 0
    while True:
        raw = handle.readline(max_bytes + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):     # skip the rest of the long line
                raw = handle.readline(_CHUNK)
            yield lineno, None
            continue
        yield lineno, raw


def parse_line(obj: object, template: RecordDraft, rel: str, lineno: int) -> RecordDraft:
    if not isinstance(obj, dict):
        raise ValueError("line is not a JSON object")
    unknown = sorted(set(obj) - KNOWN_FIELDS)
    if unknown:
        # A BEIR corpus read as memo's JSONL (no --format): every line is rejected, so say how
        # to read it instead of only what is wrong with it.
        beir = "; a BEIR corpus line (_id, text)? import the file with --format beir" \
            if "_id" in obj and "text" in obj else ""
        raise ValueError(f"unknown field(s) {', '.join(unknown)}{beir}")
    if obj.get("type", "record") != "record":
        raise ValueError(f"type {obj.get('type')!r} is not 'record' or 'fact'")
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
    if obj.get("entities") is not None:
        ents = obj["entities"]
        if isinstance(ents, str):
            ents = [ents]
        if not isinstance(ents, list) or not all(isinstance(e, str) and e.strip() for e in ents):
            raise ValueError("field 'entities' must be a list of non-empty strings")
        # stored as meta.entities: every passage of the record mentions them (memo/store/mentions.py)
        changes["meta"] = {**changes.get("meta", template.meta), "entities": list(dict.fromkeys(ents))}
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
        handle = open_lines(path)
    except NotRegularFile as exc:
        yield FileItem(rel, rejected=str(exc))
        return
    except OSError as exc:
        yield FileItem(rel, rejected=f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        try:
            yield from _jsonl_items(handle, rel, template, max_bytes)
        except READ_ERRORS as exc:
            yield FileItem(rel, rejected=f"cannot read on: {exc} (the file is truncated or corrupt); "
                                         "the lines before it were imported")


def _jsonl_items(handle: BinaryIO, rel: str, template: RecordDraft, max_bytes: int) -> Iterator[FileItem]:
    for lineno, raw in read_lines(handle, max_bytes):
        where = f"{rel}:{lineno}"
        if raw is None:
            yield FileItem(where, rejected=line_over_cap(max_bytes))
            continue
        if not raw.strip():
            continue
        try:
            obj = load_json(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            problem = json_problem(obj)
            if problem:
                raise ValueError(problem)
            if isinstance(obj, dict) and obj.get("type") == "fact":
                continue        # facts: read after the records commit (memo.ingest.jsonl_facts)
            yield FileItem(where, draft=parse_line(obj, template, rel, lineno))
        except UnicodeDecodeError as exc:
            yield FileItem(where, rejected=f"not UTF-8 (byte {exc.start})")
        except json.JSONDecodeError as exc:
            yield FileItem(where, rejected=f"invalid JSON: {exc.msg} at column {exc.colno}")
        except ValueError as exc:
            yield FileItem(where, rejected=str(exc))
