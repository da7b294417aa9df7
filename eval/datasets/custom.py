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

from memo.errors import DatasetError
from memo_eval.datasets.base import EvalQuery, EvalSet

_KNOWN = {"id", "query", "relevant", "namespace", "unanswerable", "category", "split", "now"}


def parse_line(obj: object, where: str) -> tuple[EvalQuery, dict[str, int], str | None]:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object")
    unknown = set(obj) - _KNOWN
    if unknown:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    qid, text = str(obj.get("id") or "").strip(), str(obj.get("query") or "").strip()
    if not qid or not text:
        raise DatasetError(f"{where}: 'id' and 'query' are required")
    rel = obj.get("relevant") or []
    if isinstance(rel, list):
        labels = {str(r): 1 for r in rel}
    elif isinstance(rel, dict):
        labels = {str(k): int(v) for k, v in rel.items() if int(v) > 0}
    else:
        raise DatasetError(f"{where}: 'relevant' must be a list of ids or an object id -> grade")
    unanswerable = bool(obj.get("unanswerable", False))
    if not labels and not unanswerable:
        raise DatasetError(f"{where}: no relevant ids (mark it \"unanswerable\": true if nothing should match)")
    q = EvalQuery(qid=qid, text=text, namespace=obj.get("namespace") or None,
                  category=None if obj.get("category") is None else str(obj["category"]),
                  answerable=not unanswerable, now=obj.get("now") or None)
    split = obj.get("split")
    return q, labels, (str(split) if split is not None else None)


def load_custom(path: Path, split: str = "test") -> EvalSet:
    rows = []
    raw = path.read_bytes()
    for lineno, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
        rows.append(parse_line(obj, f"{path}:{lineno}"))
    if not rows:
        raise DatasetError(f"{path}: no queries")
    has_splits = any(s is not None for _, _, s in rows)
    if split != "all" and has_splits:
        rows = [r for r in rows if r[2] == split]
        if not rows:
            raise DatasetError(f"{path}: no query has split {split!r}")
    seen: set[str] = set()
    for q, _, _ in rows:
        if q.qid in seen:
            raise DatasetError(f"{path}: duplicate query id {q.qid!r}")
        seen.add(q.qid)
    qrels = {q.qid: labels for q, labels, _ in rows if labels}
    return EvalSet(name=path.stem, split=split if has_splits else "all",
                   corpus_hash=hashlib.sha256(raw).hexdigest(), unit="auto",
                   queries=tuple(q for q, _, _ in rows), qrels=qrels, corpus=None, source=str(path))
