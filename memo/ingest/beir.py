"""BEIR corpus parser: ``corpus.jsonl`` (or ``.jsonl.gz``) -> record drafts.

One line ``{"_id", "title", "text", "metadata"}`` becomes one ``doc`` record whose body is
``title + "\\n\\n" + text`` and whose single passage carries the text under the title as its
section header (the keyword arm indexes both, so this matches BM25 "flat": title + text).
The BEIR ``_id`` is kept as ``ext_id`` so qrels can be mapped back to memo's ids.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from memo.errors import DatasetError
from memo.types import PassageDraft, RecordDraft


def open_text(path: str | Path) -> IO[str]:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz`` (checked by magic bytes)."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"no such file: {p}")
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8")
    return p.open("r", encoding="utf-8")


def beir_draft(doc: dict[str, object], namespace: str = "default") -> RecordDraft | None:
    """One BEIR corpus line -> a draft (None when the line holds no text at all)."""
    ext_id = str(doc.get("_id", "")).strip()
    if not ext_id:
        raise DatasetError("a BEIR corpus line has no _id")
    title = str(doc.get("title") or "").strip()
    text = str(doc.get("text") or "").strip()
    if not title and not text:
        return None
    body = f"{title}\n\n{text}" if title and text else (title or text)
    # A title-only document still needs a passage with text for the arms to see it.
    passage = PassageDraft(section=title, text=text or title, ext_id=ext_id)
    return RecordDraft(body=body, kind="doc", namespace=namespace, title=title or None,
                       ext_id=ext_id, passages=(passage,))


def iter_corpus(path: str | Path, namespace: str = "default") -> Iterator[RecordDraft]:
    """Yield one ``doc`` draft per corpus line, in file order.  Blank lines are skipped;
    a malformed line raises ``DatasetError`` naming the line number."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
            if not isinstance(doc, dict):
                raise DatasetError(f"{path}:{lineno}: expected a JSON object")
            draft = beir_draft(doc, namespace)
            if draft is not None:
                yield draft
