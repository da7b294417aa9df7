"""BEIR corpus parser: ``corpus.jsonl`` (or ``.jsonl.gz``) -> record drafts.

One line ``{"_id", "title", "text", "metadata"}`` becomes one ``doc`` record whose body is
``title + "\\n\\n" + text`` and whose single passage carries the text under the title as its
section header (the keyword arm indexes both, so this matches BM25 "flat": title + text).
The BEIR ``_id`` is kept as ``ext_id`` so qrels can be mapped back to memo's ids.

Lines are read as bytes and decoded one at a time, so one malformed line (invalid UTF-8,
not JSON, not an object, ``_id`` missing or not a string/number, ``title``/``text`` not
strings, a lone surrogate escape, nested too deeply) is one rejection and the next line
is read as usual (``iter_corpus_items``: what ``memo import --format beir`` uses).
``iter_corpus`` (the eval harness) stays strict: the first bad line raises DatasetError.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO

from memo.errors import DatasetError
from memo.ingest.code_detect import looks_like_code
from memo.ingest.files import DEFAULT_MAX_BYTES, NotRegularFile, gunzipped, open_regular
from memo.ingest.jsonl import READ_ERRORS, line_over_cap, load_json, read_lines
from memo.stored import PassageDraft, RecordDraft
from memo.text.json_value import json_problem


def open_binary(path: str | Path) -> BinaryIO:
    """A regular file opened for reading, transparently gunzipped (``*.gz``, checked by
    magic bytes).  Never blocks on a FIFO: raises DatasetError for anything not a
    regular file."""
    p = Path(path)
    try:
        fh = open_regular(p)
    except FileNotFoundError:
        raise DatasetError(f"no such file: {p}") from None
    except (NotRegularFile, OSError) as exc:
        raise DatasetError(f"{p}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}") from None
    return gunzipped(fh)


def open_text(path: str | Path) -> IO[str]:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz`` (checked by magic bytes)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8")


def beir_draft(doc: dict[str, object], namespace: str = "default") -> RecordDraft | None:
    """One BEIR corpus line -> a draft (None when the line holds no text at all).
    A malformed line raises DatasetError with the reason."""
    raw_id = doc.get("_id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise DatasetError("a BEIR corpus line has no _id" if raw_id is None
                           else f"_id must be a string, not {type(raw_id).__name__}")
    ext_id = str(raw_id).strip()
    if not ext_id:
        raise DatasetError("a BEIR corpus line has no _id")
    for name in ("title", "text"):
        if doc.get(name) is not None and not isinstance(doc[name], str):
            raise DatasetError(f"field {name!r} must be a string, not {type(doc[name]).__name__}")
    title = str(doc.get("title") or "").strip()
    text = str(doc.get("text") or "").strip()
    if not title and not text:
        return None
    body = f"{title}\n\n{text}" if title and text else (title or text)
    # A title-only document still needs a passage with text for the arms to see it.
    passage = PassageDraft(section=title, text=text or title, ext_id=ext_id)
    # BEIR carries no kind: a code-search corpus's function bodies are code, not prose.
    kind = "code" if text and looks_like_code(text) else "doc"
    return RecordDraft(body=body, kind=kind, namespace=namespace, title=title or None,
                       ext_id=ext_id, passages=(passage,))


def _line_draft(raw: bytes, namespace: str) -> RecordDraft | None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 (byte {exc.start})") from None
    try:
        doc = load_json(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"not JSON ({exc.msg})") from None
    except ValueError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(doc, dict):
        raise DatasetError("expected a JSON object")
    problem = json_problem(doc)
    if problem:
        raise DatasetError(problem)
    return beir_draft(doc, namespace)


def iter_corpus_items(path: str | Path, namespace: str = "default", *, max_bytes: int = DEFAULT_MAX_BYTES
                      ) -> Iterator[tuple[int, RecordDraft | None, str | None]]:
    """(line number, draft, None) for each document and (line number, None, reason) for
    each malformed line, in file order; blank and text-less lines are skipped.  A line
    longer than ``max_bytes`` (the import's --max-bytes) is a rejection, skipped without
    ever being held in memory whole (``memo.ingest.jsonl.read_lines``): a 1 MB gzip that
    inflates to one 1 GiB line must not cost a GiB.  A file
    that cannot be opened, or a gzip stream that breaks off, ends the iteration with a
    reason on line 0 (open) or the line after the last one read."""
    try:
        fh = open_binary(path)
    except DatasetError as exc:
        yield 0, None, str(exc)
        return
    lineno = 0
    with fh:
        try:
            for lineno, raw in read_lines(fh, max_bytes):
                if raw is None:
                    yield lineno, None, line_over_cap(max_bytes)
                    continue
                if not raw.strip():
                    continue
                try:
                    draft = _line_draft(raw, namespace)
                except DatasetError as exc:
                    yield lineno, None, str(exc)
                    continue
                if draft is not None:
                    yield lineno, draft, None
        except READ_ERRORS as exc:
            yield lineno + 1, None, f"cannot read on: {exc} (the file is truncated or corrupt)"


def iter_corpus(path: str | Path, namespace: str = "default") -> Iterator[RecordDraft]:
    """Yield one ``doc`` draft per corpus line, in file order.  Blank lines are skipped;
    a malformed line raises ``DatasetError`` naming the line number."""
    for lineno, draft, reason in iter_corpus_items(path, namespace):
        if reason is not None:
            raise DatasetError(f"{path}:{lineno}: {reason}" if lineno else reason)
        if draft is not None:
            yield draft
