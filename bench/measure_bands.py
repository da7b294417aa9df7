"""Measure a model's relevance bands on SciFact TRAIN (never test): cosine of relevant
query-document pairs vs random pairs, and of each query's nearest non-relevant document.

MiniLM's ``semantic_floor`` (abstention) comes from here; its display bands (weak, moderate,
strong) now come from every suite domain: bench/measure_bands_suite.py (docs/models.md).

    .venv/bin/python bench/measure_bands.py [--model ID] [--json]

Rule (docs/models.md):
    weak           = p99 of random pairs   (above it, barely 1 unrelated pair in 100 reaches)
    semantic_floor = weak                  (semantic-only evidence below it looks random)
    moderate       = p25 of relevant pairs (3 of 4 relevant pairs reach it)
    strong         = p75 of relevant pairs (only 1 relevant pair in 4 reaches it)
each rounded to 2 decimals.  Random pairs: every train query against 200 random corpus
documents that are not relevant to it (seed 13).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from scifact_semantic import load_qrels, load_queries, scifact_db  # noqa: E402

from memo.embed.service import load_model  # noqa: E402

PCTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)


def pct(values: np.ndarray) -> dict[str, float]:
    return {f"p{p}": round(float(np.percentile(values, p)), 3) for p in PCTS} | {
        "mean": round(float(values.mean()), 3), "n": int(values.size)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--random-per-query", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    conn, pk2doc, spec = scifact_db(args.model)
    pks = sorted(pk2doc)
    docs = [pk2doc[p] for p in pks]
    row_of = {d: i for i, d in enumerate(docs)}
    mat = np.stack([np.frombuffer(v, dtype="<f4") for (v,) in conn.execute(
        "SELECT vec FROM vectors WHERE model_id = ? ORDER BY passage_pk", (spec.id,))])
    qrels = load_qrels("train")
    queries = load_queries(set(qrels))
    qids = sorted(queries)
    model = load_model(spec)
    qv = np.stack([model.embed_query(queries[q]) for q in qids])
    sims = qv @ mat.T                                   # (queries, docs)

    rng = np.random.default_rng(13)
    relevant, random_, nearest_other, best_relevant = [], [], [], []
    for i, q in enumerate(qids):
        rel = [row_of[d] for d, s in qrels[q].items() if s > 0 and d in row_of]
        if not rel:
            continue
        relevant += sims[i, rel].tolist()
        mask = np.ones(len(docs), dtype=bool)
        mask[rel] = False
        others = np.flatnonzero(mask)
        random_ += sims[i, rng.choice(others, args.random_per_query, replace=False)].tolist()
        nearest_other.append(float(sims[i, others].max()))
        best_relevant.append(float(sims[i, rel].max()))
    rel_a, rnd_a = np.array(relevant), np.array(random_)
    bands = {
        "weak": round(float(np.percentile(rnd_a, 99)), 2),
        "moderate": round(float(np.percentile(rel_a, 25)), 2),
        "strong": round(float(np.percentile(rel_a, 75)), 2),
    }
    bands["semantic_floor"] = bands["weak"]
    out = {
        "model": spec.id, "split": "scifact/train", "queries": len(best_relevant),
        "relevant_pairs": pct(rel_a), "random_pairs": pct(rnd_a),
        "nearest_non_relevant_per_query": pct(np.array(nearest_other)),
        "best_relevant_per_query": pct(np.array(best_relevant)),
        "share_relevant_above": {k: round(float((rel_a >= v).mean()), 3) for k, v in bands.items()},
        "share_random_above": {k: round(float((rnd_a >= v).mean()), 4) for k, v in bands.items()},
        "bands": bands,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for key in ("relevant_pairs", "random_pairs", "nearest_non_relevant_per_query", "best_relevant_per_query"):
        print(f"{key:32s} " + " ".join(f"{k}={v}" for k, v in out[key].items()))
    print("share of relevant pairs >= band:", out["share_relevant_above"])
    print("share of random pairs >= band:  ", out["share_random_above"])
    print("bands:", json.dumps(bands))


if __name__ == "__main__":
    main()
