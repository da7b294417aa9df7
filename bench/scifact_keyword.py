"""Keyword arm alone on SciFact (BEIR test split, 300 queries): nDCG@10, recall@100 and
the median query time through the full ``memo.retrieve.search`` pipeline.

Index: one passage per document, section = title, text = abstract (``passages_fts``
indexes both).  Search: mode=keyword, limit 100, cutoff disabled (gap 1.0) and a token
budget large enough for 100 abstracts, so recall@100 sees the arm's whole top 100.

    .venv/bin/python bench/scifact_keyword.py [--data /work/shared/datasets/scifact] [--db PATH]

Prints one JSON line.  Reference: Pyserini BM25 flat 0.6789 nDCG@10, 0.9253 R@100.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ir_measures
from ir_measures import R, nDCG

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from memo.types import Scope

NAMESPACE = "scifact"


def build(conn, data: Path) -> int:
    n = 0
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh, write_tx(conn):
        for line in fh:
            doc = json.loads(line)
            body = doc["text"] or doc["title"]
            draft = RecordDraft(body=body, kind="doc", namespace=NAMESPACE, title=doc["title"],
                                source="scifact", ext_id=doc["_id"], id=f"sf{doc['_id']}")
            insert_record(conn, draft, (PassageDraft(text=body, section=doc["title"], ext_id=doc["_id"]),))
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/datasets/scifact"))
    ap.add_argument("--db", type=Path, default=None, help="reuse/keep this database (default: a temp file)")
    args = ap.parse_args()

    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory()
        args.db = Path(tmp.name) / "scifact.db"
    conn = open_db(args.db)
    t0 = time.perf_counter()
    if conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == 0:
        build(conn, args.data)
    index_s = time.perf_counter() - t0

    qrels: list = []
    with open(args.data / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, rel = line.strip().split("\t")
            qrels.append(ir_measures.Qrel(qid, did, int(rel)))
    test_ids = {q.query_id for q in qrels}
    queries = {}
    with open(args.data / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if q["_id"] in test_ids:
                queries[q["_id"]] = q["text"]

    profile = load_profile("rrf").with_overrides(
        {"cutoff.gap": 1.0, "budget.max_tokens": 10_000_000}, name="scifact-keyword")
    ext = dict(conn.execute("SELECT pk, ext_id FROM passages"))
    scope = Scope(namespaces=(NAMESPACE,))
    run, times = [], []
    for qid, text in sorted(queries.items()):
        t = time.perf_counter()
        resp = search(conn, SearchRequest(query=text, scope=scope, mode="keyword", limit=100), profile)
        times.append((time.perf_counter() - t) * 1000.0)
        for res in resp.results:
            run.append(ir_measures.ScoredDoc(qid, ext[res.pk], res.score))
    agg = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrels, run)
    out = {"dataset": "scifact-test", "queries": len(queries), "ndcg@10": round(agg[nDCG @ 10], 4),
           "recall@100": round(agg[R @ 100], 4), "median_query_ms": round(statistics.median(times), 3),
           "p95_query_ms": round(sorted(times)[int(0.95 * len(times))], 3),
           "index_s": round(index_s, 1)}
    sys.stdout.write(json.dumps(out) + "\n")
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
