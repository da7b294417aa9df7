"""SciFact test: nDCG@10 and recall@100 of each arm alone and of the fused search, for the
rrf and minmax profiles.

    .venv/bin/python bench/scifact_arms.py [--json]

Arms alone run through their ``Arm`` objects (live scope filter, fetch_depth 100).  Fusion
runs through ``memo.retrieve.search`` with limit 100, no cutoff (cutoff.gap = 1.0) and a
token budget large enough for 100 results, so the run is the whole ranked list.  Query
vectors are computed once and passed as ``services["query_vector"]``, as eval replay does.
(The eval harness, eval/, produces the full table with significance tests.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scifact_semantic import evaluate, load_qrels, load_queries, scifact_db  # noqa: E402

from memo.embed.service import load_model, semantic_services  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.retrieve import SearchRequest, search  # noqa: E402
from memo.retrieve.arms import ARMS  # noqa: E402
from memo.retrieve.arms.base import ArmContext  # noqa: E402
from memo.retrieve.scope import build_scope_sql  # noqa: E402
from memo.types import Scope  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--registry-bands", action="store_true",
                    help="override the profiles' bands for the model with the registry's (measured) ones")
    args = ap.parse_args()
    conn, pk2doc, spec = scifact_db()
    qrels = load_qrels("test")
    queries = load_queries(set(qrels))
    model = load_model(spec)
    qvecs = {qid: model.embed_query(text) for qid, text in queries.items()}
    base = semantic_services(conn, spec.id)
    scope_sql = build_scope_sql(Scope())
    rows = []
    for arm in ARMS:
        run, ran = {}, 0
        for qid, text in queries.items():
            ctx = ArmContext(conn=conn, query=text, mode="auto", scope_sql=scope_sql, fetch_depth=100,
                             services={**base, "query_vector": qvecs[qid]})
            if arm.plan(ctx).runs:       # routed arms (exact) run only where auto mode runs them
                ran += 1
                run[qid] = {pk2doc[h.pk]: float(h.raw) for h in arm.run(ctx)}
        rows.append({"run": f"{arm.name} alone", "queries_run": ran,
                     **(evaluate(run, qrels) if run else {"ndcg@10": 0.0, "recall@100": 0.0})})
    for name in ("rrf", "minmax"):
        over: dict[str, object] = {"cutoff.gap": 1.0}
        if args.registry_bands:
            b = spec.bands
            over |= {f"models.{spec.id}.{k}": getattr(b, k) for k in ("semantic_floor", "weak", "moderate", "strong")}
        prof = load_profile(name).with_overrides(over)
        run = {}
        for qid, text in queries.items():
            resp = search(conn, SearchRequest(text, limit=100, max_tokens=10**7), prof,
                          {**base, "query_vector": qvecs[qid]})
            n = len(resp.results)
            run[qid] = {pk2doc[r.pk]: float(n - i) for i, r in enumerate(resp.results)}
        rows.append({"run": f"fusion {name}", "queries_run": len(run), **evaluate(run, qrels)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'run':20s} {'nDCG@10':>8s} {'R@100':>8s} {'queries run':>12s}")
    for r in rows:
        print(f"{r['run']:20s} {r['ndcg@10']:8.4f} {r['recall@100']:8.4f} {r['queries_run']:12d}")


if __name__ == "__main__":
    main()
