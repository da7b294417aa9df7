"""``memo eval report RUN...``: a Markdown report plus PNG figures from the Parquet traces.

Everything is computed with DuckDB over the three tables (``memo_eval.traces.duck``) and
Polars frames (``memo_eval.analysis``), so the notebook (notebooks/eval_report.ipynb) calls the
same functions and gets the same numbers.

Sections: runs and their metrics; metric bars with 95% bootstrap confidence intervals;
per-query deltas against a baseline run; recall@k curves; the runs against published
anchors (eval/anchors.toml); metrics per category (bars); each metric against each
constant that some runs differ in and in nothing else, when it can matter to them
(``constant_axes``); per-arm contribution to the fused score of the
top 10; latency of the searches whose arms really ran (``arm_cached`` false); adaptive
fusion's keyword weight against each query's gain over the baseline (``weight_gain``).  Run labels
are sorted (by value, or by name) and sized to stay readable at 18+ runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memo.types import ARM_NAMES
from memo_eval import analysis as A
from memo_eval import plots
from memo_eval.anchors import anchors_for
from memo_eval.compare import run_info
from memo_eval.traces import METRIC_COLUMNS, duck

SUMMARY_METRICS = (*METRIC_COLUMNS, "abstain_precision", "abstain_recall")


def _labels(con) -> dict[str, str]:
    """Short unique label per run: its spec label (+ data set when several), disambiguated
    by batch stamp when still repeated."""
    rows = con.execute("SELECT run_id, label, batch_id, dataset, split FROM runs ORDER BY run_id").fetchall()
    several = len({(r[3], r[4]) for r in rows}) > 1
    base = {r[0]: (f"{r[1]} {r[3]}/{r[4]}" if several else r[1]) for r in rows}
    count: dict[str, int] = {}
    for label in base.values():
        count[label] = count.get(label, 0) + 1
    return {rid: (label if count[label] == 1 else f"{label}@{batch[:15]}")
            for (rid, _, batch, _, _), label in zip(rows, base.values(), strict=True)}


def _columns(con, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def replay_order(runs: Sequence[Path]) -> list[str]:
    """The run ids of these folders, batches in the order they come in ``runs`` (as named),
    each batch's runs in the order it replayed them (its grid order: ``-p`` order, then the
    ``--set`` values in the order given).  A run row's ``batch_position`` says it; runs written
    without one are ordered by when their ``runs.parquet`` was written (the replay writes them
    one after another in grid order, after every run is done), then by id.  Never by id alone:
    ids end in a hash of the spec, random within a batch."""
    infos = [(run_info(f), (Path(f) / "runs.parquet").stat().st_mtime_ns) for f in runs]
    first: dict[Any, int] = {}
    for i, (info, _) in enumerate(infos):
        first.setdefault(info["batch_id"], i)

    def key(item: tuple[dict[str, Any], int]) -> tuple[Any, ...]:
        info, written = item
        pos = info["batch_position"]
        return first[info["batch_id"]], -1 if pos is None else int(pos), written, str(info["run_id"])

    return list(dict.fromkeys(str(info["run_id"]) for info, _ in sorted(infos, key=key)))


def summary(con, order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per run: in ``order`` (run ids: ``replay_order``), the others after them by
    data set, split and id."""
    cols = _columns(con, "runs")
    wanted = ["run_id", "label", "dataset", "split", "dataset_hash", "model_id", "n_queries", "batch_qps", "workers",
              *[m for m in SUMMARY_METRICS if m in cols]]
    sel = ", ".join(f'"{c}"' if c in cols else f"NULL AS {c}" for c in wanted)
    rows = con.execute(f"SELECT {sel} FROM runs ORDER BY dataset, split, run_id").fetchall()
    at = {rid: i for i, rid in enumerate(order)}
    rows.sort(key=lambda r: at.get(r[0], len(at)))        # stable: the rest keep the SQL order
    return [dict(zip(wanted, r, strict=True)) for r in rows]


def by_category(con) -> list[dict[str, Any]]:
    rows = con.execute("""
        SELECT run_id, category, count(*) AS n,
               avg(CASE WHEN answerable AND n_relevant > 0 THEN recall_10 END) AS recall_10,
               avg(CASE WHEN answerable AND n_relevant > 0 THEN ndcg_10 END) AS ndcg_10,
               sum(CASE WHEN NOT answerable THEN 1 ELSE 0 END) AS unanswerable,
               sum(CASE WHEN NOT answerable AND abstained THEN 1 ELSE 0 END) AS correct_abstentions,
               sum(CASE WHEN abstained THEN 1 ELSE 0 END) AS abstained
        FROM queries WHERE category IS NOT NULL GROUP BY run_id, category ORDER BY run_id, category""").fetchall()
    names = ["run_id", "category", "n", "recall_10", "ndcg_10", "unanswerable", "correct_abstentions", "abstained"]
    return [dict(zip(names, r, strict=True)) for r in rows]


def varying_constants(con) -> list[str]:
    """Numeric profile constants (dotted column names) that differ between the runs."""
    out = []
    for col in _columns(con, "runs"):
        if "." not in col or col.startswith("models."):
            continue
        n, numeric = con.execute(
            f'SELECT count(DISTINCT "{col}"), bool_and(try_cast("{col}" AS DOUBLE) IS NOT NULL) FROM runs').fetchone()
        if n and n > 1 and numeric:
            out.append(col)
    return out


# Profile sections whose constants act through one arm or one rescorer only: such a
# constant matters to a set of runs only if that arm found something in them, or that
# rescorer fired (``fact.*`` on a set without facts changes nothing).  ``entities.*`` act
# on several stages (routing, common names, the semantic arm's question) and always count.
_ARM_SECTIONS = {"fact": "fact", "graph": "graph", "exact": "exact"}
_RESCORER_SECTIONS = ("speaker", "dates", "heading", "context")


def _inert(con, key: str) -> str | None:
    """Why ``key`` cannot matter to these runs (None: it may), from the query traces."""
    section, _, rest = key.partition(".")
    qcols = set(_columns(con, "queries"))
    arm = rest if section == "weights" and rest in ARM_NAMES else _ARM_SECTIONS.get(section)
    if arm is not None and f"{arm}_candidates" in qcols:
        found = con.execute(f"SELECT coalesce(sum({arm}_candidates), 0) FROM queries").fetchone()[0]
        return None if found else f"the {arm} arm found nothing in these runs"
    if section in _RESCORER_SECTIONS and "rescore" in qcols:
        fired = con.execute("SELECT count(*) FROM (SELECT unnest(rescore) AS r FROM queries) "
                            "WHERE r.name = ?", [section]).fetchone()[0]
        return None if fired else f"the {section} rescorer never fired in these runs"
    return None


def _constant_rows(con) -> tuple[list[str], list[dict[str, Any]]]:
    """Every profile constant column, and one dict per run (its constants, profile, mode,
    data set, split, metrics)."""
    consts = [c for c in _columns(con, "runs") if "." in c]
    cols = ["run_id", "profile", "mode", "dataset", "split", *METRIC_COLUMNS, *consts]
    sel = ", ".join(f'"{c}"' for c in cols)
    return consts, [dict(zip(cols, r, strict=True)) for r in con.execute(f"SELECT {sel} FROM runs").fetchall()]


def _others_key(row: dict[str, Any], consts: Sequence[str], const: str,
                ignore: frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """What else a run is: data set, split, mode and every other constant (as text) but
    those in ``ignore``."""
    return (row["dataset"], row["split"], row["mode"], *[str(row[c]) for c in consts
                                                         if c != const and c not in ignore])


TOGETHER = "differs only between runs that differ in other constants too"


def constant_axes(con) -> tuple[list[str], dict[str, str]]:
    """The constants worth a metric-against-constant plot, and why each other constant
    that differs between the runs is left out.

    A constant is plotted only if some runs differ in it **and nothing else** (same data
    set, split, mode and every other constant: a grid axis, or two profiles one constant
    apart) and it can matter to these runs (``_inert``).  Two profiles that differ in a
    dozen constants give no plot: each constant's line would have one point per profile
    and the profiles' other differences would move the metric."""
    consts, rows = _constant_rows(con)
    plotted: list[str] = []
    skipped: dict[str, str] = {}
    for const in varying_constants(con):
        groups: dict[tuple[Any, ...], set[Any]] = {}
        for r in rows:
            if r[const] is not None:
                groups.setdefault(_others_key(r, consts, const), set()).add(r[const])
        if not any(len(v) > 1 for v in groups.values()):
            skipped[const] = TOGETHER
            continue
        why = _inert(con, const)
        if why is not None:
            skipped[const] = why
            continue
        plotted.append(const)
    return plotted, skipped


def constant_series(con, const: str, ignore: Sequence[str] = ()
                    ) -> dict[str, list[tuple[float, dict[str, float | None]]]]:
    """The lines of a plot against ``const``: one per group of runs that differ only in it
    (at least two values), labelled by profile (+ mode, data set when several) and the other
    constants that vary between that profile's lines.  Constants in ``ignore`` (those that
    cannot matter to these runs: ``constant_axes``) neither split a line nor label it; runs
    that differ only in them are averaged into one point."""
    consts, rows = _constant_rows(con)
    skip = frozenset(ignore)
    several_sets = len({(r["dataset"], r["split"]) for r in rows}) > 1
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r[const] is not None:
            groups.setdefault(_others_key(r, consts, const, skip), []).append(r)
    kept = [g for g in groups.values() if len({r[const] for r in g}) > 1]
    by_profile: dict[str, list[dict[str, Any]]] = {}
    for g in kept:
        by_profile.setdefault(str(g[0]["profile"]), []).append(g[0])
    series: dict[str, list[tuple[float, dict[str, float | None]]]] = {}
    for g in kept:
        head = g[0]
        label = str(head["profile"]) + ("" if head["mode"] == "auto" else f"[{head['mode']}]")
        if several_sets:
            label += f" {head['dataset']}/{head['split']}"
        peers = by_profile[str(head["profile"])]
        label += "".join(f" {c}={head[c]}" for c in consts
                         if c != const and c not in skip and len({str(p[c]) for p in peers}) > 1)
        while label in series:
            label += "'"
        at: dict[float, list[dict[str, Any]]] = {}
        for r in g:
            at.setdefault(float(r[const]), []).append(r)
        series[label] = [(x, {m: _mean([r[m] for r in rs]) for m in METRIC_COLUMNS}) for x, rs in sorted(at.items())]
    return series


def _mean(values: Sequence[Any]) -> float | None:
    got = [float(v) for v in values if v is not None]
    return sum(got) / len(got) if got else None


def arm_shares(con, top: int = 10) -> dict[str, dict[str, float]]:
    cols = set(_columns(con, "results"))
    arms = [a for a in ARM_NAMES if f"{a}_contribution" in cols]
    sums = ", ".join(f"sum(coalesce({a}_contribution, 0))" for a in arms)
    rows = con.execute(f"SELECT run_id, {sums} FROM results WHERE rank <= ? GROUP BY run_id", [top]).fetchall()
    out = {}
    for rid, *vals in rows:
        total = sum(v for v in vals if v) or 1.0
        out[rid] = {a: (v or 0.0) / total for a, v in zip(arms, vals, strict=True)}
    return out


def weight_gain(con, metric: str, baseline: str) -> list[dict[str, Any]]:
    """Per query of each run whose fusion moved the keyword weight (extras adaptive and
    code_queries: the query rows' ``keyword_multiplier``), the multiplier, the code share
    (None: not measured) and the run's ``metric`` minus the baseline run's on that query
    (paired by qid, as the per-query deltas are).  Empty for traces without the columns."""
    cols = set(_columns(con, "queries"))
    if "keyword_multiplier" not in cols or metric not in cols:
        return []
    code = "q.code_share" if "code_share" in cols else "NULL"
    rows = con.execute(f"""
        SELECT q.run_id, q.qid, q.keyword_multiplier, {code}, q.{metric} - b.{metric}
        FROM queries q JOIN queries b ON b.qid = q.qid AND b.run_id = ?
        WHERE q.run_id <> ? AND q.keyword_multiplier IS NOT NULL
          AND q.{metric} IS NOT NULL AND b.{metric} IS NOT NULL
        ORDER BY q.run_id, q.qid""", [baseline, baseline]).fetchall()
    return [{"run_id": r, "qid": qid, "multiplier": float(m), "code_share": None if c is None else float(c),
             "delta": float(d)} for r, qid, m, c, d in rows]


def latencies(con) -> dict[str, list[float]]:
    """Per run, the latency of its uncached searches (``memo_eval.analysis.uncached_latency``)."""
    out: dict[str, list[float]] = {}
    frame = A.uncached_latency(con)
    for rid, lat in zip(frame["run_id"].to_list(), frame["latency_ms"].to_list(), strict=True):
        out.setdefault(rid, []).append(float(lat))
    return out


def pick_baseline(summ: Sequence[dict[str, Any]], labels: dict[str, str], baseline: str | None) -> str | None:
    """The baseline run id: ``baseline`` as a label, run id or run-id prefix; else the
    first run of ``summ`` (``summary`` in ``replay_order``: the first batch named, its first
    run as replayed)."""
    if not summ:
        return None
    if baseline is None:
        return summ[0]["run_id"]
    for s in summ:
        if baseline in (labels[s["run_id"]], s["label"], s["run_id"]) or s["run_id"].startswith(baseline):
            return s["run_id"]
    from memo.errors import DatasetError
    raise DatasetError(f"no run {baseline!r} among the report's runs", hint="give a label or run id")


def _weight_gain_section(con, out_dir: Path, metric: str, base_id: str, labels: dict[str, str],
                         figures: list[str]) -> list[str]:
    """Adaptive fusion's keyword weight against what it gained, query by query: the picture
    that says whether leaning off the keyword arm paid (docs/eval.md "Adaptive fusion")."""
    pts = weight_gain(con, metric, base_id)
    if not pts:
        return []
    per_run: dict[str, list[tuple[float, float]]] = {}
    for p in pts:
        per_run.setdefault(labels[p["run_id"]], []).append((p["multiplier"], p["delta"]))
    plots.weight_gain(out_dir / "keyword_weight_gain.png", metric, labels[base_id], per_run)
    figures.append("keyword_weight_gain.png")
    rows = []
    for label, xy in sorted(per_run.items()):
        moved = [d for m, d in xy if m < 1.0]
        kept = [d for m, d in xy if m >= 1.0]
        rows.append([label, len(xy), len(moved), _mean(moved), _mean(kept)])
    return [f"## Adaptive fusion: the keyword weight against the gain ({labels[base_id]})", "",
            "Per query, the multiplier fusion gave the keyword arm's weight (extras `adaptive` and "
            f"`code_queries`: `keyword_multiplier` in the query rows) and the run's {metric} minus the "
            "baseline's.", "",
            _table(["label", "queries", "keyword weight lowered", "mean delta, lowered",
                    "mean delta, kept"], rows),
            "", "![keyword weight against the gain](keyword_weight_gain.png)", ""]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _anchor_section(summ: Sequence[dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """One table per (data set, split, metric) that has anchors: each run's value and its
    difference to each anchor.  Runs over part of a split (--limit-queries) are left out."""
    md: list[str] = []
    groups = sorted({(s["dataset"], s["split"]) for s in summ})
    for dataset, split in groups:
        metrics = sorted({a.metric for a in anchors_for(dataset, split)})
        for metric in metrics:
            anchors = anchors_for(dataset, split, metric)
            rows = []
            for s in summ:
                if (s["dataset"], s["split"]) != (dataset, split) or any(
                        a.queries != s["n_queries"] for a in anchors):
                    continue
                v = s.get(metric)
                rows.append([labels[s["run_id"]], v,
                             *[("" if v is None else f"{v - a.value:+.4f}") for a in anchors]])
            if not rows:
                continue
            if not md:
                md += ["## Against published anchors", "",
                       "Difference of each run to each published figure (eval/anchors.toml).", ""]
            md += [f"{dataset}/{split}, {metric}:", "",
                   _table(["label", metric, *[f"{a.name} ({a.value:.3f})" for a in anchors]], rows), ""]
    return md


def build_report(runs: Sequence[Path], out_dir: Path, *, title: str = "memo eval report",
                 baseline: str | None = None, metric: str | None = None) -> dict[str, Any]:
    if metric is not None:
        A.query_metric(metric)            # before any work: a typo fails in one line
    out_dir.mkdir(parents=True, exist_ok=True)
    con = duck(runs)
    labels = _labels(con)
    md: list[str] = [f"# {title}", "", f"Generated {datetime.now(UTC).isoformat(timespec='seconds')} "
                     f"from {len(runs)} run(s).", ""]
    figures: list[str] = []

    summ = summary(con, replay_order(runs))
    md += ["## Runs", "", _table(["run", "label", "data set", "split", "model", "queries", "q/s",
                                  *SUMMARY_METRICS],
                                 [[s["run_id"], labels[s["run_id"]], s["dataset"], s["split"], s["model_id"],
                                   s["n_queries"], s["batch_qps"], *[s.get(m) for m in SUMMARY_METRICS]]
                                  for s in summ]), ""]

    # Quality: bars with bootstrap CIs, per-query deltas against the baseline, recall@k.
    groups = sorted({(s["dataset"], s["split"]) for s in summ})
    main_metric = metric or ("recall_10" if any(d.startswith("locomo") for d, _ in groups) else "ndcg_10")
    base_id = pick_baseline(summ, labels, baseline)
    frame = A.per_query(con, main_metric)
    cis = A.bootstrap_ci(frame, main_metric)
    if cis.height:
        rows = [(labels[r["run_id"]], r["mean"], r["ci_low"], r["ci_high"]) for r in cis.iter_rows(named=True)]
        # Published figures for a whole split only, as the anchor table below: a labels file
        # of your own that happens to be named scifact.jsonl is not SciFact.
        counts = {s["n_queries"] for s in summ}
        anchors = ([(a.name, a.value) for a in anchors_for(groups[0][0], groups[0][1], main_metric, counts.pop())]
                   if len(groups) == 1 and len(counts) == 1 else [])
        name = f"{main_metric}_bars.png"
        plots.metric_bars(out_dir / name, main_metric, rows, anchors)
        figures.append(name)
        ordered = sorted(cis.iter_rows(named=True), key=lambda r: -r["mean"])
        md += [f"## {main_metric} with 95% bootstrap confidence intervals", "",
               "Mean over the scored queries; percentile bootstrap over queries (2,000 resamples, seed 0 for each run).", "",
               _table(["label", "queries", main_metric, "95% CI low", "95% CI high"],
                      [[labels[r["run_id"]], r["n"], r["mean"], r["ci_low"], r["ci_high"]] for r in ordered]),
               "", f"![{main_metric} per run]({name})", ""]
    question_sets = {s.get("dataset_hash") for s in summ}
    if base_id is not None and len(summ) > 1 and len(question_sets) > 1:
        # Query ids of two data sets name different questions: no per-query pairing (memo
        # eval compare refuses them too).
        md += ["## Per query against the baseline", "",
               "Not drawn: the runs replayed different question sets (data set, split or labels); "
               "per-query differences pair the same questions only.", ""]
    elif base_id is not None and len(summ) > 1:
        deltas = A.query_deltas(frame, main_metric, base_id)
        per_run = {labels[rid]: part["delta"].to_list()
                   for (rid,), part in deltas.group_by(["run_id"], maintain_order=True)}
        if per_run:
            plots.query_deltas(out_dir / "query_deltas.png", main_metric, labels[base_id], per_run)
            figures.append("query_deltas.png")
            md += [f"## Per query against the baseline ({labels[base_id]})", "",
                   f"Each run's {main_metric} minus the baseline's, query by query (paired by id; "
                   "`memo eval compare` gives the tests).", "",
                   _table(["label", "mean delta", "queries up", "queries down", "ties"],
                          [[k, sum(v) / len(v), sum(1 for x in v if x > 1e-9), sum(1 for x in v if x < -1e-9),
                            sum(1 for x in v if abs(x) <= 1e-9)] for k, v in sorted(per_run.items())]),
                   "", "![per-query deltas](query_deltas.png)", ""]
    curves = A.recall_at_k(con)
    if curves.height:
        pts: dict[str, list[tuple[int, float]]] = {}
        for r in curves.iter_rows(named=True):
            pts.setdefault(labels[r["run_id"]], []).append((int(r["k"]), float(r["recall"])))
        plots.recall_curves(out_dir / "recall_at_k.png", pts)
        figures.append("recall_at_k.png")
        md += ["## recall@k", "", "![recall@k](recall_at_k.png)", ""]

    if base_id is not None:
        md += _weight_gain_section(con, out_dir, main_metric, base_id, labels, figures)

    md += _anchor_section(summ, labels)

    cats = by_category(con)
    if cats:
        md += ["## By category", "",
               "recall@10 / nDCG@10 over answerable questions with evidence; abstention counts over all.", "",
               _table(["label", "category", "n", "recall@10", "nDCG@10", "unanswerable", "correct abstentions",
                       "abstained"],
                      [[labels[c["run_id"]], c["category"], c["n"], c["recall_10"], c["ndcg_10"], c["unanswerable"],
                        c["correct_abstentions"], c["abstained"]] for c in cats]), ""]
        cat_metric = "recall_10" if main_metric not in ("ndcg_10", "recall_10") else main_metric
        values: dict[str, dict[str, float]] = {}
        for c in cats:
            if c[cat_metric] is not None:
                values.setdefault(labels[c["run_id"]], {})[str(c["category"])] = float(c[cat_metric])
        if values:
            plots.category_bars(out_dir / "by_category.png", cat_metric, values)
            figures.append("by_category.png")
            md += ["![per category](by_category.png)", ""]

    consts, left_out = constant_axes(con)
    if consts or left_out:
        md += ["## Metrics against constants", ""]
        if consts:
            md += ["A constant is plotted when some runs differ in it and in nothing else (a grid axis); "
                   "one line per group of such runs.", ""]
        else:
            md += ["No plot: no numeric constant alone tells runs apart that are otherwise the same (a grid "
                   "axis: `memo eval run --set KEY=V1,V2`); a setting such as `fusion.method` is told "
                   "by the runs' labels in the tables above.", ""]
        for const in consts:
            lines = constant_series(con, const, ignore=[c for c, why in left_out.items() if why != TOGETHER])
            for metric in METRIC_COLUMNS:
                series = {label: [(x, float(m[metric])) for x, m in pts if m[metric] is not None]
                          for label, pts in lines.items()}
                name = f"{metric}_vs_{const.replace('.', '_')}.png"
                plots.metric_vs_constant(out_dir / name, const, {k: v for k, v in series.items() if v}, metric)
                figures.append(name)
                md.append(f"![{metric} vs {const}]({name})")
            md.append("")
        together = [c for c, why in left_out.items() if why == TOGETHER]
        if together:
            md += ["Not plotted, they differ only together with other constants (between profiles): "
                   + ", ".join(f"`{c}`" for c in together) + ".", ""]
        md += [f"`{c}` not plotted: {why}." for c, why in left_out.items() if why != TOGETHER]
        md.append("")

    shares = arm_shares(con)
    if shares:
        order = [s["run_id"] for s in summ if s["run_id"] in shares]
        arms = [a for a in ARM_NAMES if any(shares[r].get(a) for r in order)]
        plots.arm_contribution(out_dir / "arm_contribution.png", [labels[r] for r in order], arms,
                               {labels[r]: shares[r] for r in order})
        figures.append("arm_contribution.png")
        md += ["## Per-arm contribution (top 10)", "",
               _table(["label", *arms], [[labels[r], *[shares[r].get(a, 0.0) for a in arms]] for r in order]),
               "", "![per-arm contribution](arm_contribution.png)", ""]

    lats = latencies(con)
    md += ["## Latency", "", "Only searches whose arms really ran: a search served from the replay's arm "
           "cache (`arm_cached`, later runs of a grid) did not pay for its arms and is left out; "
           "`MEMO_EVAL_ARM_CACHE=0` times every run.", ""]
    if lats:
        plots.latency(out_dir / "latency.png", {labels[r]: v for r, v in lats.items()})
        figures.append("latency.png")
        stats = A.latency_table(A.uncached_latency(con))
        md += [_table(["label", "uncached searches", "p50 ms", "p95 ms", "max ms"],
                      [[labels[r["run_id"]], r["n"], r["p50_ms"], r["p95_ms"], r["max_ms"]]
                       for r in stats.iter_rows(named=True)]),
               "", "![latency](latency.png)", ""]
    else:
        md += ["No uncached search in these runs.", ""]

    report = out_dir / "report.md"
    report.write_text("\n".join(md) + "\n", encoding="utf-8")
    return {"report": str(report), "figures": [str(out_dir / f) for f in figures], "runs": len(runs),
            "summary": summ}
