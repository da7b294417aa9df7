"""The lines of a memo export (``memo export`` writes them, ``memo import`` reads them back).

A JSON Lines file, UTF-8, gzip when its name ends in ``.gz``:

* line 1, the header: ``{"memo_export": 1, "exported_at", "memo_version", "schema",
  "namespaces", "include_forgotten", "vectors"}``;
* one ``{"type": "record", ...}`` line per record version (``RECORD_FIELDS``, its ``tags``,
  its ``passages`` as stored, each with its ``vectors``: model id -> base64 of the
  little-endian float32 vector);
* one ``{"type": "fact", ...}`` line per fact version (``FACT_FIELDS``, its ``evidence`` as
  passage ids ``<record id>:<ord>``, its ``vectors``), after every record;
* the last line, ``{"type": "end", "records", "passages", "facts"}``: a file cut short (a
  full disk, a copy interrupted) has none, and is refused before anything is written.

Canonical rows only: the keyword and exact indexes, entities, aliases and mentions are
derived again on import (memo.store.derived, memo.store.mentions), as ``memo reindex``
derives them; vectors are carried because computing them again takes hours, not seconds.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memo.errors import ValidationError
from memo.ingest.jsonl import READ_ERRORS, load_json, open_lines, read_lines
from memo.text.limits import MAX_BODY_CHARS

FORMAT_KEY = "memo_export"
FORMAT_VERSION = 1      # a reader refuses a newer one (its lines may mean more than it knows)
RECORD_FIELDS = ("id", "namespace", "kind", "title", "source", "library", "version", "event_at",
                 "recorded_at", "superseded_at", "superseded_by", "forgotten_at", "trust", "author",
                 "import_path", "ext_id", "body", "meta")
PASSAGE_FIELDS = ("section", "text", "speaker", "event_at", "ext_id")
FACT_FIELDS = ("id", "namespace", "text", "subject", "predicate", "object", "event_at", "recorded_at",
               "superseded_at", "superseded_by", "forgotten_at", "trust", "author", "source", "content_hash", "meta")
_REQUIRED = {"record": ("id", "namespace", "kind", "recorded_at", "body"),
             "fact": ("id", "namespace", "text", "recorded_at"),
             "passage": ("text",)}
_NUMBERS = ("trust",)
_OBJECTS = ("meta",)
# A record line holds its body, its passages (about the body again, JSON-escaped) and a
# vector per passage and model: bounded by the body's own cap, never read whole past it.
MAX_LINE_BYTES = 16 * MAX_BODY_CHARS + (64 << 20)
SNIFF_BYTES = 1 << 16


def header(*, exported_at: str, memo_version: str, schema: int, namespaces: tuple[str, ...],
           include_forgotten: bool, vectors: bool) -> dict[str, Any]:
    return {FORMAT_KEY: FORMAT_VERSION, "exported_at": exported_at, "memo_version": memo_version,
            "schema": schema, "namespaces": list(namespaces), "include_forgotten": include_forgotten,
            "vectors": vectors}


def end_line(records: int, passages: int, facts: int) -> dict[str, Any]:
    return {"type": "end", "records": records, "passages": passages, "facts": facts}


def encode_vector(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def decode_vector(text: str) -> bytes:
    """The float32 bytes of an encoded vector (ValueError when it is not base64 of whole floats)."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if not raw or len(raw) % 4:
        raise ValueError(f"a vector of {len(raw)} bytes is not float32 values")
    return raw


def is_export(path: Path) -> bool:
    """Does the file start with an export's header line?  (First 64 KiB, gzip or not.)"""
    try:
        with open_lines(path) as handle:
            first = handle.readline(SNIFF_BYTES)
    except (OSError, *READ_ERRORS):
        return False
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and FORMAT_KEY in obj


@dataclass(frozen=True, slots=True)
class Scan:
    """What the first pass over an export found: it is whole and every line is well formed."""

    header: Mapping[str, Any]
    records: int
    passages: int
    facts: int
    lines: int


def lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every line after the header, each checked (``check``);
    ValidationError naming the line for the first bad one."""
    name = path.name
    try:
        handle = open_lines(path)
    except OSError as exc:
        raise ValidationError(f"cannot read {name}: {exc.strerror or exc}") from exc
    with handle:
        try:
            for lineno, raw in read_lines(handle, MAX_LINE_BYTES):
                if lineno == 1:
                    continue
                if raw is None:
                    raise ValidationError(f"{name} line {lineno} is over {MAX_LINE_BYTES:,} bytes: not a memo export line")
                if not raw.strip():
                    continue
                try:
                    obj = load_json(raw)
                except ValueError as exc:
                    raise ValidationError(f"{name} line {lineno} is not JSON: {exc}",
                                          hint="the export was changed or damaged; export again") from exc
                yield lineno, check(obj, f"{name} line {lineno}")
        except READ_ERRORS as exc:
            raise ValidationError(f"cannot read {name}: {exc}", hint="the file is damaged; export again") from exc


def scan(path: Path) -> Scan:
    """Read the whole export once before anything is written: its header, every line
    checked, and its end line's counts matched.  Refuses a newer format, a file cut
    short and a damaged line (ValidationError: nothing was imported)."""
    name = path.name
    try:
        with open_lines(path) as handle:
            first = handle.readline(SNIFF_BYTES)
    except (OSError, *READ_ERRORS) as exc:
        raise ValidationError(f"cannot read {name}: {exc}") from exc
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if not isinstance(head, dict) or FORMAT_KEY not in head:
        raise ValidationError(f"{name} does not start with a memo export's header line")
    version = head[FORMAT_KEY]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValidationError(f"{name}: export format {version!r} is not one memo writes")
    if version > FORMAT_VERSION:
        raise ValidationError(f"{name} was written by a newer memo (export format {version}; this memo reads "
                              f"{FORMAT_VERSION})", hint="upgrade memo, then import it")
    counts = {"record": 0, "passage": 0, "fact": 0}
    ended: dict[str, Any] | None = None
    n = 1
    for lineno, obj in lines(path):
        n = lineno
        if ended is not None:
            raise ValidationError(f"{name} line {lineno} follows the end line", hint="the export was changed; export again")
        kind = obj["type"]
        if kind == "end":
            ended = obj
            continue
        if kind == "record" and counts["fact"]:
            raise ValidationError(f"{name} line {lineno}: a record after the facts",
                                  hint="the export was changed; export again")
        counts[kind] += 1
        counts["passage"] += len(obj.get("passages") or ()) if kind == "record" else 0
    if ended is None:
        raise ValidationError(f"{name} ends at line {n} without its end line: the export was cut short; nothing was imported",
                              hint="export again (`memo export`), or copy the whole file")
    said = (ended.get("records"), ended.get("passages"), ended.get("facts"))
    if said != (counts["record"], counts["passage"], counts["fact"]):
        raise ValidationError(f"{name}: its end line counts {said[0]} records, {said[1]} passages and {said[2]} facts; "
                              f"the file holds {counts['record']}, {counts['passage']} and {counts['fact']}; "
                              "nothing was imported", hint="the export was changed or damaged; export again")
    return Scan(head, counts["record"], counts["passage"], counts["fact"], n)


def check(obj: object, where: str) -> dict[str, Any]:
    """A line's shape: its type, the fields it must have, and each field's JSON type."""
    if not isinstance(obj, dict):
        raise ValidationError(f"{where} is not a JSON object")
    kind = obj.get("type")
    if kind == "end":
        return obj
    if kind not in ("record", "fact"):
        raise ValidationError(f"{where}: type {kind!r} is not record, fact or end")
    _fields(obj, RECORD_FIELDS if kind == "record" else FACT_FIELDS, kind, where)
    if kind == "record":
        tags = obj.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValidationError(f"{where}: tags must be a list of text values")
        passages = obj.get("passages")
        if not isinstance(passages, list) or not passages:
            raise ValidationError(f"{where}: a record needs its passages (a non-empty list)")
        for k, p in enumerate(passages):
            if not isinstance(p, dict):
                raise ValidationError(f"{where}: passage {k} is not a JSON object")
            _fields(p, PASSAGE_FIELDS, "passage", f"{where} passage {k}")
            _vectors(p.get("vectors"), f"{where} passage {k}")
    else:
        evidence = obj.get("evidence", [])
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise ValidationError(f"{where}: evidence must be a list of passage ids")
        _vectors(obj.get("vectors"), where)
    return obj


def _fields(obj: dict[str, Any], names: tuple[str, ...], kind: str, where: str) -> None:
    for name in _REQUIRED[kind]:
        if obj.get(name) is None:
            raise ValidationError(f"{where}: the {kind} has no {name}")
    for name in names:
        value = obj.get(name)
        if value is None:
            continue
        if name in _NUMBERS:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif name in _OBJECTS:
            ok = isinstance(value, dict)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise ValidationError(f"{where}: the {kind}'s {name} is {type(value).__name__}, not "
                                  f"{'a number' if name in _NUMBERS else 'an object' if name in _OBJECTS else 'text'}")


def _vectors(value: object, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValidationError(f"{where}: vectors must map a model id to a base64 text")
    for model, text in value.items():
        try:
            decode_vector(text)
        except ValueError as exc:
            raise ValidationError(f"{where}: the vector of {model!r} is not float32 values in base64 ({exc})") from exc
