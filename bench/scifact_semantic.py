"""SciFact (BEIR test) through the semantic arm alone: nDCG@10 and recall@100.

    .venv/bin/python bench/scifact_semantic.py [--split test] [--fresh]

The corpus is loaded into a memo database (one passage per doc: section = title,
text = abstract; the passage embeds as "title\\n\\ntext"), its vectors are cached in
.cache/scifact-<model>-<hash>.npy (key: model id + model sha256 + corpus sha256), and the
queries run through ``SemanticArm`` with the live scope filter, as search does.
Reference: brute-force cosine over title + text at 256 tokens gives 0.647; published 0.645.

The helpers here (``scifact_db``, ``load_qrels``, ``load_queries``) are reused by the
other bench scripts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from memo.embed.backfill import backfill  # noqa: E402
from memo.embed.registry import load_registry  # noqa: E402
from memo.embed.service import load_model, semantic_services  # noqa: E402
from memo.embed.vectors import encode  # noqa: E402
from memo.ingest.beir import iter_corpus  # noqa: E402
from memo.retrieve.arms.base import ArmContext  # noqa: E402
from memo.retrieve.arms.semantic import SemanticArm  # noqa: E402
from memo.retrieve.scope import build_scope_sql  # noqa: E402
from memo.store.connect import write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.store.records import insert_record  # noqa: E402
from memo.types import Scope  # noqa: E402

DATA = Path("/work/shared/datasets/scifact")
CACHE = ROOT / ".cache"


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_corpus_db(db_path: Path) -> tuple[object, dict[int, str]]:
    """A memo DB holding the SciFact corpus (built once, reused); returns (conn, pk -> doc id)."""
    conn = open_db(db_path, write=True)
    if conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == 0:
        with write_tx(conn):
            for draft in iter_corpus(DATA / "corpus.jsonl.gz"):
                insert_record(conn, draft, draft.passages)
    pk2doc = {int(r[0]): r[1] for r in conn.execute("SELECT pk, ext_id FROM passages")}
    return conn, pk2doc


def scifact_db(model_id: str | None = None, fresh: bool = False, progress: bool = True):
    """(conn, pk -> doc id, spec): the corpus DB with vectors for the model, from the .npy
    cache when it matches, else embedded now (and cached)."""
    spec = load_registry().get(model_id)
    CACHE.mkdir(exist_ok=True)
    key = hashlib.sha256(f"{spec.id}:{spec.sha256}:{file_sha(DATA / 'corpus.jsonl.gz')}".encode()).hexdigest()[:16]
    db_path = CACHE / f"scifact-{key}.db"
    npy = CACHE / f"scifact-{spec.id}-{key}.npy"
    if fresh:
        for p in (db_path, npy):
            p.unlink(missing_ok=True)
    conn, pk2doc = load_corpus_db(db_path)
    have = conn.execute("SELECT COUNT(*) FROM vectors WHERE model_id = ?", (spec.id,)).fetchone()[0]
    if have < len(pk2doc):
        pks = sorted(pk2doc)
        if npy.exists():
            mat = np.load(npy)
            with write_tx(conn):
                conn.executemany("INSERT OR IGNORE INTO vectors(passage_pk, model_id, vec) VALUES (?, ?, ?)",
                                 [(pk, spec.id, encode(v)) for pk, v in zip(pks, mat, strict=True)])
        else:
            t0 = time.perf_counter()
            rep = backfill(conn, spec.id, progress=progress)
            print(f"embedded {rep.embedded} passages in {time.perf_counter() - t0:.1f}s "
                  f"({rep.per_second}/s)", file=sys.stderr)
            rows = dict(conn.execute("SELECT passage_pk, vec FROM vectors WHERE model_id = ?", (spec.id,)))
            np.save(npy, np.stack([np.frombuffer(rows[pk], dtype="<f4") for pk in pks]))
    return conn, pk2doc, spec


def load_qrels(split: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with (DATA / "qrels" / f"{split}.tsv").open() as fh:
        next(fh)
        for line in fh:
            parts = line.strip().split("\t")
            if len(parts) == 3:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def load_queries(ids: set[str] | None = None) -> dict[str, str]:
    out = {}
    with (DATA / "queries.jsonl").open() as fh:
        for line in fh:
            q = json.loads(line)
            if ids is None or q["_id"] in ids:
                out[q["_id"]] = q["text"]
    return out


def evaluate(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100"})
    per_q = ev.evaluate(run)
    # Queries with no results count as zero (pytrec_eval skips them otherwise).
    n = len(qrels)
    return {"ndcg@10": sum(v["ndcg_cut_10"] for v in per_q.values()) / n,
            "recall@100": sum(v["recall_100"] for v in per_q.values()) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="test")
    ap.add_argument("--model", default=None)
    ap.add_argument("--fresh", action="store_true", help="rebuild the DB and re-embed (ignore the cache)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    conn, pk2doc, spec = scifact_db(args.model, fresh=args.fresh)
    qrels = load_qrels(args.split)
    queries = load_queries(set(qrels))
    services = semantic_services(conn, spec.id)
    load_model(spec)
    arm = SemanticArm()
    scope_sql = build_scope_sql(Scope())
    run: dict[str, dict[str, float]] = {}
    lat = []
    for qid, text in queries.items():
        ctx = ArmContext(conn=conn, query=text, mode="auto", scope_sql=scope_sql, fetch_depth=100,
                         services=services)
        plan = arm.plan(ctx)
        if not plan.runs:
            raise SystemExit(f"semantic arm does not run: {plan.reason}")
        t0 = time.perf_counter()
        hits = arm.run(ctx)
        lat.append((time.perf_counter() - t0) * 1000)
        run[qid] = {pk2doc[h.pk]: h.raw for h in hits}
    scores = evaluate(run, qrels)
    out = {"dataset": f"scifact/{args.split}", "model": spec.id, "queries": len(queries),
           "passages": len(pk2doc), **{k: round(v, 4) for k, v in scores.items()},
           "arm_ms_p50": round(float(np.percentile(lat, 50)), 2),
           "arm_ms_p95": round(float(np.percentile(lat, 95)), 2)}
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
