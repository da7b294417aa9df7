"""``memo eval list``: the data sets available here (``memo_eval.datasets.catalog``) and
the runs and batches under a runs dir, newest first (DuckDB over every ``runs.parquet``).

Each data set: its name for ``-d``, where it comes from, its format, splits and query
counts.  Each batch (one ``memo eval run``/``regress``/``tune`` replay) lists its data set,
split, date and runs; each run its profile, label, overrides and key metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memo_eval.traces import runs_root

KEY_METRICS = ("ndcg_10", "recall_10", "recall_100", "rr_10")
_COLS = ("run_id", "batch_id", "dataset", "split", "profile", "label", "mode", "overrides", "started_at",
         "n_queries", *KEY_METRICS)


def list_runs(root: str | Path | None = None, *, dataset: str | None = None, limit: int | None = None,
              datasets: bool = True) -> dict[str, Any]:
    """``{"datasets": [...], "runs_dir", "batches": [{batch_id, dataset, split, started_at,
    runs: [...]}]}``, newest batch first; ``limit`` keeps that many batches; ``dataset``
    keeps that data set's batches (and its entry in ``datasets``)."""
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
    doc: dict[str, Any] = {}
    if datasets:
        from memo_eval.datasets.catalog import list_datasets

        doc["datasets"] = [d for d in list_datasets() if dataset is None or dataset in (d["name"], *d.get("variants", ()))]
    return {**doc, "runs_dir": str(base), "batches": out, "n_batches": len(out),
            "n_runs": sum(len(b["runs"]) for b in out)}


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}"


def format_datasets(sets: list[dict[str, Any]], width: int = 80) -> list[str]:
    """Human lines for the data sets: name, source, format, queries per split."""
    from memo_eval.datasets.catalog import OTHER_FORMS

    lines = [f"{len(sets)} data set(s) (memo eval run -d NAME --split SPLIT)",
             "  " + f"{'name':<16} {'source':<10} {'format':<10} queries per split"]
    for d in sets:
        splits = ", ".join(f"{s} {n:,}" for s, n in d["splits"].items()) or "-"
        head = f"  {d['name']:<16} {d['source']:<10} {d['format']:<10} "
        if len(d["name"]) > 16 or len(head) + len(splits) > width:
            lines += [f"  {d['name']}", f"  {'':<16} {d['source']:<10} {d['format']:<10} {splits}"[:width]]
        else:
            lines.append(head + splits)
        if d.get("error"):
            lines.append(f"    not loadable: {d['error']}"[:width])
        if d.get("shadowed"):
            lines.append("    shadowed by the repository's data set of that name")
        for v in d.get("variants", ()):
            lines.append(f"    also -d {v}")
    lines.append("  also: " + OTHER_FORMS[0])
    lines += [f"        {f}" for f in OTHER_FORMS[1:]]
    return lines


def format_list(doc: dict[str, Any], width: int = 80) -> list[str]:
    """Human lines, none longer than ``width``: full ids on their own lines."""
    lines = format_datasets(doc["datasets"], width) + [""] if "datasets" in doc else []
    lines += [f"{doc['n_runs']} run(s) in {doc['n_batches']} batch(es) under", f"  {doc['runs_dir']}"]
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
