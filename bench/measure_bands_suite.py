"""Measure a model's relevance bands on every domain of the eval suite (eval/suite.toml):
the cosine of each labelled (query, relevant unit) pair and of random (query, passage)
pairs, per domain, on the split choices are made on (``choose``) and on the held-out one
(``report``).

    PYTHONPATH=. .venv/bin/python bench/measure_bands_suite.py [--model ID] [--json]
        [--bands WEAK,MODERATE,STRONG]   # score these bands instead of the model's

A result's ``relevance`` is the cosine of one passage with the query, so:

* relevant pair = (query, labelled unit) at the unit's best passage: for record labels
  (scifact, codesearch, hotpotqa) the record's best passage, for passage labels (LoCoMo,
  chats) the passage, for file or section labels (nodedocs, relnotes) the best passage
  the harness maps to the label (``memo_eval.index.unit_keys``);
* random pair = the query against ``--random-per-query`` passages drawn from the whole
  index (seed 13) whose unit is not relevant to it.

Queries are embedded as typed (``memo_eval.index.query_vectors``, the harness's cache).

Rule (docs/models.md "Relevance bands"), from the ``choose`` splits only; "pooled" = each
domain's pairs resampled to the same count (equal weight), locomo-obs left out (it holds
LoCoMo's passages and queries):
    weak     = median over domains of each domain's p99 of random pairs
               (in a typical domain 1 random pair in 100 reaches it; the pooled p99 is
               pulled up by relnotes, whose "random" pairs are changelog against changelog)
    moderate = p25 of pooled relevant pairs, but never below semantic_floor (a result that
               abstention would drop as random-looking on its own cannot read "moderate")
    strong   = p75 of pooled relevant pairs
each rounded to 2 decimals (weak capped at moderate).  ``semantic_floor`` (abstention) is
read from the model, not derived here.

The index is the harness's cached one (``memo_eval.index.index_path``); when this code's
index is not built yet, the newest cached index of the same data set and corpus is read
(a schema or index-code change that leaves passage texts alone leaves the cosines alone).
Nothing is built or embedded here except query vectors missing from the cache.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tomllib
from pathlib import Path

import numpy as np

from memo.embed.registry import load_registry
from memo_eval.datasets import load_eval_set
from memo_eval.index import index_path, query_vectors, unit_keys

SUITE = Path(__file__).resolve().parents[1] / "eval" / "suite.toml"
PCTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)
POOL_PER_DOMAIN = 20_000   # pairs per domain in the pooled (equal-weight) distributions
TWINS = {"locomo-obs"}      # same passages and queries as another domain: not pooled again


def _index_for(es) -> Path:
    path = index_path(es)
    if path.exists():
        return path
    prefix = path.name[:path.name.rindex(es.corpus_hash[:12]) + 12] + "-"   # <name>-<corpus sha:12>-
    found = sorted((p for p in path.parent.glob(f"{prefix}v*.db") if p.name[len(prefix):].count("-") == 1),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit(f"{es.name}: no cached index under {path.parent} (run `memo eval run -d {es.name}` once)")
    return found[-1]


def _passage_matrix(conn: sqlite3.Connection, model_id: str) -> tuple[list[int], np.ndarray]:
    rows = conn.execute("SELECT passage_pk, vec FROM vectors WHERE model_id = ? ORDER BY passage_pk",
                        (model_id,)).fetchall()
    n = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    if len(rows) < n:
        raise SystemExit(f"index has {len(rows)} vectors for {n} passages (run `memo eval run` once)")
    pks = [int(r[0]) for r in rows]
    return pks, np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)


def measure(dataset: str, split: str, model_id: str, per_query: int) -> dict:
    es = load_eval_set(dataset, split)
    path = _index_for(es)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pks, mat = _passage_matrix(conn, model_id)
        keys = unit_keys(conn, es)
    finally:
        conn.close()
    key_of = np.array([keys.get(pk, f"\x00{pk}") for pk in pks], dtype=object)
    rows_of: dict[str, list[int]] = {}
    for i, k in enumerate(key_of):
        rows_of.setdefault(k, []).append(i)
    _, qvecs = query_vectors(es, model_id)
    rng = np.random.default_rng(13)
    relevant, best_rel, random_, nearest = [], [], [], []
    for qi, q in enumerate(es.queries):
        rel_keys = [k for k, g in es.qrels.get(q.qid, {}).items() if g > 0 and k in rows_of]
        if not rel_keys:
            continue
        sims = mat @ qvecs[qi]
        per_unit = [float(sims[rows_of[k]].max()) for k in rel_keys]
        relevant += per_unit
        best_rel.append(max(per_unit))
        mask = np.ones(len(pks), dtype=bool)
        for k in rel_keys:
            mask[rows_of[k]] = False
        others = np.flatnonzero(mask)
        pick = rng.choice(others, min(per_query, others.size), replace=False)
        random_ += sims[pick].tolist()
        nearest.append(float(sims[others].max()))
    return {"dataset": dataset, "split": split, "index": path.name, "unit": es.unit,
            "queries": len(best_rel), "relevant": np.array(relevant), "best_relevant": np.array(best_rel),
            "random": np.array(random_), "nearest_non_relevant": np.array(nearest)}


def pct(values: np.ndarray) -> dict[str, float]:
    return {f"p{p}": round(float(np.percentile(values, p)), 3) for p in PCTS} | {
        "mean": round(float(values.mean()), 3), "n": int(values.size)}


def pooled(results: list[dict], key: str) -> np.ndarray:
    """Each domain's ``key`` pairs resampled to POOL_PER_DOMAIN, concatenated (equal weight)."""
    rng = np.random.default_rng(7)
    return np.concatenate([rng.choice(r[key], POOL_PER_DOMAIN, replace=True) for r in results])


def shares(r: dict, bands: dict[str, float]) -> dict[str, float]:
    rel, rnd = r["relevant"], r["random"]
    return {"rel>=weak": float((rel >= bands["weak"]).mean()),
            "rel>=moderate": float((rel >= bands["moderate"]).mean()),
            "rel>=strong": float((rel >= bands["strong"]).mean()),
            "best>=moderate": float((r["best_relevant"] >= bands["moderate"]).mean()),
            "rnd>=weak": float((rnd >= bands["weak"]).mean()),
            "rnd>=moderate": float((rnd >= bands["moderate"]).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--random-per-query", type=int, default=200)
    ap.add_argument("--domains", default="", help="comma-separated suite names (default: all)")
    ap.add_argument("--bands", default="", help="WEAK,MODERATE,STRONG to score instead of the rule's")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    spec = load_registry().get(args.model)
    with SUITE.open("rb") as fh:
        domains = tomllib.load(fh)["domain"]
    if args.domains:
        wanted = set(args.domains.split(","))
        domains = [d for d in domains if d["name"] in wanted]
    choose, report = [], []
    for d in domains:
        for split, into in ((d["choose"], choose), (d["report"], report)):
            r = measure(d["dataset"], split, spec.id, args.random_per_query)
            r["name"] = d["name"]
            into.append(r)

    # locomo-obs holds LoCoMo's passages and queries (its facts are no passage's relevance):
    # pooled once, not twice.
    distinct = [r for r in choose if r["name"] not in TWINS]
    rel_pool, rnd_pool = pooled(distinct, "relevant"), pooled(distinct, "random")
    floor = spec.bands.semantic_floor
    rule = {"weak": round(float(np.median([np.percentile(r["random"], 99) for r in distinct])), 2),
            "moderate": max(floor, round(float(np.percentile(rel_pool, 25)), 2)),
            "strong": round(float(np.percentile(rel_pool, 75)), 2)}
    rule["weak"] = min(rule["weak"], rule["moderate"])
    if args.bands:
        w, m, s = (float(x) for x in args.bands.split(","))
        bands = {"weak": w, "moderate": m, "strong": s}
    else:
        bands = rule
    current = {"weak": spec.bands.weak, "moderate": spec.bands.moderate, "strong": spec.bands.strong}

    out = {"model": spec.id, "rule_bands_from_choose": rule, "scored_bands": bands, "current_bands": current,
           "pooled_choose": {"relevant": pct(rel_pool), "random": pct(rnd_pool)}, "domains": []}
    for r in choose + report:
        out["domains"].append({
            "name": r["name"], "split": r["split"], "index": r["index"], "unit": r["unit"], "queries": r["queries"],
            "relevant": pct(r["relevant"]), "best_relevant": pct(r["best_relevant"]), "random": pct(r["random"]),
            "nearest_non_relevant": pct(r["nearest_non_relevant"]),
            "shares": {k: round(v, 4) for k, v in shares(r, bands).items()},
            "shares_current": {k: round(v, 4) for k, v in shares(r, current).items()}})
    if args.json:
        print(json.dumps(out, indent=2))
        return

    print(f"model {spec.id}; current bands {current}; rule on choose splits {rule}; scored {bands}")
    print(f"pooled choose relevant: {pct(rel_pool)}")
    print(f"pooled choose random:   {pct(rnd_pool)}")
    for title, rows in (("choose (train) splits", out["domains"][:len(choose)]),
                        ("report (held-out) splits", out["domains"][len(choose):])):
        print(f"\n{title}")
        print(f"{'domain':14s} {'split':6s} {'q':>5s} {'pairs':>6s} | {'rel p10':>7s} {'p25':>6s} {'p50':>6s} "
              f"{'p75':>6s} | {'rnd p50':>7s} {'p99':>6s} | {'rel>=mod':>8s} {'best>=mod':>9s} {'rel>=weak':>9s} "
              f"{'rnd>=weak':>9s} | {'now rel>=mod':>12s} {'now rnd>=weak':>13s}")
        for d in rows:
            rel, rnd, s, c = d["relevant"], d["random"], d["shares"], d["shares_current"]
            print(f"{d['name']:14s} {d['split']:6s} {d['queries']:5d} {rel['n']:6d} | {rel['p10']:7.3f} "
                  f"{rel['p25']:6.3f} {rel['p50']:6.3f} {rel['p75']:6.3f} | {rnd['p50']:7.3f} {rnd['p99']:6.3f} | "
                  f"{s['rel>=moderate']:8.1%} {s['best>=moderate']:9.1%} {s['rel>=weak']:9.1%} {s['rnd>=weak']:9.2%} | "
                  f"{c['rel>=moderate']:12.1%} {c['rnd>=weak']:13.2%}")


if __name__ == "__main__":
    main()
