"""BEIR folders: ``corpus.jsonl[.gz]``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Only the queries that appear in the split's qrels are evaluated (BEIR convention: SciFact's
``queries.jsonl`` holds train and test claims together).  Qrels grades <= 0 are dropped
(trec_eval treats them as non-relevant anyway).
"""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path

from memo.errors import DatasetError
from memo.ingest.beir import iter_corpus, open_text
from memo_eval.datasets.base import EvalQuery, EvalSet, file_sha256


def corpus_file(folder: Path) -> Path:
    for name in ("corpus.jsonl.gz", "corpus.jsonl"):
        if (folder / name).exists():
            return folder / name
    raise DatasetError(f"{folder}: no corpus.jsonl or corpus.jsonl.gz")


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query-id<TAB>corpus-id<TAB>score`` with an optional header line (CRLF tolerated)."""
    if not path.exists():
        splits = sorted(p.stem for p in path.parent.glob("*.tsv"))
        raise DatasetError(f"no qrels for split {path.stem!r}", hint=f"splits here: {', '.join(splits) or 'none'}")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            row = [c.strip() for c in row]
            if not row or not any(row):
                continue
            if lineno == 1 and not row[-1].lstrip("-").isdigit():
                continue  # header
            if len(row) == 4:          # TREC style: qid Q0 docid grade
                row = [row[0], row[2], row[3]]
            if len(row) != 3:
                raise DatasetError(f"{path}:{lineno}: expected 3 tab-separated columns")
            qid, doc, grade = row[0], row[1], int(row[2])
            if grade > 0:
                qrels.setdefault(qid, {})[doc] = grade
    return qrels


def read_queries(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
                out[str(q["_id"])] = str(q["text"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DatasetError(f"{path}:{lineno}: bad query line ({exc})") from exc
    return out


def load_beir(folder: Path, split: str) -> EvalSet:
    corpus = corpus_file(folder)
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    texts = read_queries(folder / "queries.jsonl")
    missing = [qid for qid in qrels if qid not in texts]
    if missing:
        raise DatasetError(f"{folder}: {len(missing)} qrels query ids have no query text (e.g. {missing[0]})")
    # Numeric ids sort numerically so "the first N queries" is stable and readable.
    order = sorted(qrels, key=lambda q: (len(q), q))
    queries = tuple(EvalQuery(qid=qid, text=texts[qid]) for qid in order)
    return EvalSet(name=folder.name, split=split, corpus_hash=file_sha256(corpus), unit="record",
                   queries=queries, qrels=qrels, corpus=partial(iter_corpus, corpus, "default"),
                   source=str(folder), corpus_path=str(corpus), corpus_format="beir")
