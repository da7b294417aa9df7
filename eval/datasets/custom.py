"""A user's own labelled queries: one JSON object per line (docs/eval.md)::

    {"id": "q1", "query": "how do we rotate the API keys?",
     "relevant": ["runbook-keys", "r2611301200ab12cd34ef"],   # or {"runbook-keys": 2, ...}
     "namespace": "ops",          # optional: search only there
     "unanswerable": false,       # optional: true = memo should return nothing
     "category": "howto",         # optional: metrics are also reported per category
     "split": "test",             # optional: train | test | ...
     "now": "2026-01-31"}         # optional: reference time for recency

The corpus is whatever the user imported with ``memo import`` / ``memo add`` into the
database given with ``--db``.  A relevant id may name a record's ``ext_id``, a record id, a
passage id (``<record>:<ord>``) or an import path; results are mapped to whichever of these
the labels use (``unit = auto``) and counted once per record.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memo.errors import DatasetError, ValidationError
from memo_eval.datasets.base import EvalQuery, EvalSet

_KNOWN = {"id", "query", "relevant", "namespace", "unanswerable", "category", "split", "now"}


def _kind(v: object) -> str:
    """What a JSON value is, in JSON's words (for the errors below)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if isinstance(v, int | float):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {json.dumps(v)}" if len(v) <= 40 else "a string"
    return "a list" if isinstance(v, list) else "an object"


def _text(obj: dict, key: str, where: str, *, required: bool = False) -> str | None:
    """``obj[key]`` as a non-empty string; absent (or null, when optional) -> None.  Types
    are checked strictly: ``"query": ["a", "b"]`` would otherwise be searched as its repr."""
    v = obj.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not v.strip():
        need = "is required: a non-empty string" if key not in obj or v is None else "must be a non-empty string"
        got = "" if key not in obj else f" (got {_kind(v)})"
        raise DatasetError(f"{where}: {key!r} {need}{got}")
    return v.strip()


def _labels(rel: object, where: str) -> dict[str, int]:
    """``relevant``: a list of ids (grade 1) or an object id -> integer grade (grades <= 0:
    judged not relevant, dropped as in BEIR's qrels)."""
    def label(k: object) -> str:
        if not isinstance(k, str) or not k.strip():
            raise DatasetError(f"{where}: 'relevant' ids must be non-empty strings (got {_kind(k)})")
        return k.strip()

    if isinstance(rel, list):
        return {label(r): 1 for r in rel}
    if isinstance(rel, dict):
        out = {}
        for k, v in rel.items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise DatasetError(f"{where}: 'relevant' grade of {label(k)!r} must be an integer such as 1 or 2 "
                                   f"(got {_kind(v)})")
            if v > 0:
                out[label(k)] = v
        return out
    raise DatasetError(f"{where}: 'relevant' must be a list of ids or an object id -> grade (got {_kind(rel)})")


def parse_line(obj: object, where: str) -> tuple[EvalQuery, dict[str, int], str | None]:
    """One query line -> (query, labels, split).  Every field is type-checked: a value of
    another type is an error naming the line and the field, never coerced."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object (got {_kind(obj)})")
    unknown = set(obj) - _KNOWN
    if unknown:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} "
                           f"(known: {', '.join(sorted(_KNOWN))})")
    qid = _text(obj, "id", where, required=True)
    text = _text(obj, "query", where, required=True)
    assert qid is not None and text is not None
    rel = obj.get("relevant")
    labels = {} if rel is None else _labels(rel, where)
    unanswerable = obj.get("unanswerable", False)
    if not isinstance(unanswerable, bool):
        raise DatasetError(f"{where}: 'unanswerable' must be true or false (got {_kind(unanswerable)})")
    if not labels and not unanswerable:
        raise DatasetError(f"{where}: no relevant ids (mark it \"unanswerable\": true if nothing should match)")
    if labels and unanswerable:
        # Both cannot hold: its labels would be ignored (an unanswerable query is scored by
        # whether memo abstains) without a word.
        raise DatasetError(f"{where}: \"unanswerable\": true and relevant ids {', '.join(sorted(labels))}: "
                           "it is one or the other",
                           hint="drop \"relevant\" if nothing in your notes answers it, else drop \"unanswerable\"")
    now = _text(obj, "now", where)
    if now is not None:
        from memo.retrieve.scope import parse_when

        try:
            parse_when(now, field="'now'")
        except ValidationError as exc:
            raise DatasetError(f"{where}: {exc} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)") from None
    q = EvalQuery(qid=qid, text=text, namespace=_text(obj, "namespace", where), category=_text(obj, "category", where),
                  answerable=not unanswerable, now=now)
    return q, labels, _text(obj, "split", where)


def load_custom(path: Path, split: str = "test") -> EvalSet:
    rows = []
    lines: list[int] = []
    raw = path.read_bytes()
    for lineno, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
        rows.append(parse_line(obj, f"{path}:{lineno}"))
        lines.append(lineno)
    if not rows:
        raise DatasetError(f"{path}: no queries")
    # Ids are unique over the whole file, before a split is chosen: the same id in train and
    # test is a query tuned on and then reported on.
    first: dict[str, int] = {}      # qid -> index of its row
    for i, (q, _, s) in enumerate(rows):
        j = first.setdefault(q.qid, i)
        if j != i:
            splits = "" if s == rows[j][2] else f" (split {rows[j][2]} there, {s} here)"
            raise DatasetError(f"{path}:{lines[i]}: query id {q.qid!r} is already used on line {lines[j]}{splits}",
                               hint="give every query its own id")
    has_splits = any(s is not None for _, _, s in rows)
    unsplit = [lines[i] for i, (_, _, s) in enumerate(rows) if s is None]
    if has_splits and unsplit:
        # A line without a split in a file whose other lines have one is in neither train
        # nor test: it was never replayed, and nothing said so.
        shown = ", ".join(map(str, unsplit[:5])) + (f" and {len(unsplit) - 5} more" if len(unsplit) > 5 else "")
        raise DatasetError(f"{path}: line(s) {shown} have no \"split\" while others do: they would be in no split",
                           hint="give every line a split (train or test), or none of them")
    if split != "all" and has_splits:
        rows_all = rows
        rows = [r for r in rows if r[2] == split]
        if not rows:
            names = sorted({str(r[2]) for r in rows_all})
            raise DatasetError(f"{path}: no query has split {split!r} (its splits: {', '.join(names)}, or all)")
    qrels = {q.qid: labels for q, labels, _ in rows if labels}
    return EvalSet(name=path.stem, split=split if has_splits else "all",
                   corpus_hash=hashlib.sha256(raw).hexdigest(), unit="auto",
                   queries=tuple(q for q, _, _ in rows), qrels=qrels, corpus=None, source=str(path))
