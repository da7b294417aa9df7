"""``memo eval list``: the runs and batches under a runs dir, newest first (DuckDB over
every ``runs.parquet``).

Each batch (one ``memo eval run``/``regress``/``tune`` replay) lists its data set, split,
date and runs; each run its profile, label, overrides and key metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memo_eval.traces import runs_root

KEY_METRICS = ("ndcg_10", "recall_10", "recall_100", "rr_10")
_COLS = ("run_id", "batch_id", "dataset", "split", "profile", "label", "mode", "overrides", "started_at",
         "n_queries", *KEY_METRICS)


def list_runs(root: str | Path | None = None, *, dataset: str | None = None, limit: int | None = None
              ) -> dict[str, Any]:
    """``{"runs_dir", "batches": [{batch_id, dataset, split, started_at, runs: [...]}]}``,
    newest batch first; ``limit`` keeps that many batches."""
    import duckdb

    base = runs_root(root)
    files = sorted(str(p) for p in base.glob("*/runs.parquet")) if base.is_dir() else []
    batches: dict[str, dict[str, Any]] = {}
    if files:
        con = duckdb.connect()
        have = {r[0] for r in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet({files!r}, union_by_name = true)").fetchall()}
        sel = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in _COLS)
        where = "WHERE dataset = ?" if dataset else ""
        rows = con.execute(f"SELECT {sel} FROM read_parquet({files!r}, union_by_name = true) {where} "
                           "ORDER BY started_at DESC, batch_id DESC, run_id", [dataset] if dataset else []).fetchall()
        for row in rows:
            r = dict(zip(_COLS, row, strict=True))
            b = batches.setdefault(str(r["batch_id"]), {
                "batch_id": r["batch_id"], "dataset": r["dataset"], "split": r["split"],
                "started_at": r["started_at"], "runs": []})
            try:
                overrides = json.loads(r["overrides"]) if isinstance(r["overrides"], str) else (r["overrides"] or {})
            except ValueError:
                overrides = {}
            b["runs"].append({"run_id": r["run_id"], "profile": r["profile"], "label": r["label"], "mode": r["mode"],
                              "overrides": overrides, "n_queries": r["n_queries"],
                              "metrics": {m: r[m] for m in KEY_METRICS}})
    out = list(batches.values())
    if limit is not None:
        out = out[:limit]
    return {"runs_dir": str(base), "batches": out, "n_batches": len(out), "n_runs": sum(len(b["runs"]) for b in out)}


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}"


def format_list(doc: dict[str, Any], width: int = 80) -> list[str]:
    """Human lines, none longer than ``width``: full ids on their own lines."""
    lines = [f"{doc['n_runs']} run(s) in {doc['n_batches']} batch(es) under", f"  {doc['runs_dir']}"]
    for b in doc["batches"]:
        lines += ["", f"batch {b['batch_id']}",
                  f"  {b['dataset']}/{b['split']}, {len(b['runs'])} run(s), started {b['started_at']}",
                  "  " + f"{'label':<34} {'nDCG@10':>7} {'R@10':>7} {'R@100':>7} {'MRR@10':>7}"]
        for r in b["runs"]:
            m = r["metrics"]
            label = str(r["label"])
            if len(label) > 34:
                lines.append(f"  {label}")
                label = ""
            lines.append("  " + f"{label:<34} {_f(m['ndcg_10']):>7} {_f(m['recall_10']):>7} "
                         f"{_f(m['recall_100']):>7} {_f(m['rr_10']):>7}")
            lines.append(f"    {r['run_id']}")
    return lines
