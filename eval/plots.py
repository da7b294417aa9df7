"""Figures for the eval report (matplotlib, Agg backend: files only, no display).

Each function takes plain data (computed by ``memo_eval.report`` with DuckDB) and writes one
PNG, returning its path, so the notebook and the CLI draw the same pictures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

DPI = 110


def _save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` with its canvas fitted to what it draws (``bbox_inches="tight"``): long
    run labels and a legend outside the axes widen the picture instead of squeezing the axes.
    ``fig.tight_layout()`` did the squeezing in a fixed canvas, and warned "Tight layout not
    applied" (leaving labels cut off) whenever the labels were wider than the canvas allows;
    constrained layout gives up the same way.  Cropping at save time always fits."""
    try:
        fig.savefig(path, dpi=DPI, bbox_inches="tight", pad_inches=0.1)
    finally:
        plt.close(fig)
    return path


def metric_vs_constant(path: Path, constant: str, series: Mapping[str, Sequence[tuple[float, float]]],
                       metric: str) -> Path:
    """One line per series (profile, or profile + other constants): metric against a constant
    (one series: its label in the title, no legend)."""
    many = len(series) > 1
    fig, ax = plt.subplots(figsize=(8.5 if many else 5.5, 3.8))
    for label, points in sorted(series.items()):
        pts = sorted(points)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel(constant)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {constant}" + ("" if many or not series else f" ({next(iter(series))})"))
    ax.grid(alpha=0.3)
    if many:
        # Outside the axes: with a dozen series an inside legend hides the lines.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, path)


def arm_contribution(path: Path, runs: Sequence[str], arms: Sequence[str],
                     shares: Mapping[str, Mapping[str, float]], title: str = "") -> Path:
    """Stacked horizontal bars (runs sorted by label): each arm's share of the fused score
    of the top-10 results."""
    runs = sorted(runs, key=natural_key)
    height, fs = _fit_labels(len(runs))
    fig, ax = plt.subplots(figsize=(8.5, height))
    left = [0.0] * len(runs)
    for arm in arms:
        vals = [shares.get(r, {}).get(arm, 0.0) for r in runs]
        if not any(vals):
            continue
        ax.barh(range(len(runs)), vals, left=left, label=arm, height=0.7)
        left = [b + v for b, v in zip(left, vals, strict=True)]
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels(runs, fontsize=fs)
    ax.invert_yaxis()
    ax.set_xlabel("share of fused score (top 10)")
    ax.set_xlim(0, 1.25)
    ax.set_title(title or "per-arm contribution")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def latency(path: Path, data: Mapping[str, Sequence[float]]) -> Path:
    """Horizontal box plots of per-query pipeline latency (ms) per run, sorted by median;
    only searches whose arms really ran (``arm_cached`` false)."""
    import statistics

    labels = sorted((k for k in data if data[k]), key=lambda k: statistics.median(data[k]))
    height, fs = _fit_labels(len(labels))
    fig, ax = plt.subplots(figsize=(8.5, height))
    ax.boxplot([list(data[k]) for k in labels], orientation="horizontal", showfliers=True, whis=(5, 95))
    ax.set_yticks(range(1, len(labels) + 1))
    ax.set_yticklabels([f"{k} (n={len(data[k])})" for k in labels], fontsize=fs)
    ax.set_xlabel("latency per query (ms, uncached searches only)")
    ax.set_xscale("log")
    ax.set_title("latency distribution (whiskers p5-p95)")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def natural_key(label: str) -> list[object]:
    """Sort key reading numbers as numbers: k=20 before k=100."""
    import re

    return [float(t) if re.fullmatch(r"-?\d+(?:\.\d+)?", t) else t for t in re.split(r"(-?\d+(?:\.\d+)?)", label)]


def _fit_labels(n: int) -> tuple[float, float]:
    """(figure height, label font size) for n horizontal rows: every label readable."""
    return max(2.6, 0.32 * n + 1.4), (8 if n <= 24 else 7 if n <= 40 else 6)


def metric_bars(path: Path, metric: str, rows: Sequence[tuple[str, float, float, float]],
                anchors: Sequence[tuple[str, float]] = ()) -> Path:
    """Horizontal bars, one per run sorted by value (best on top), with 95% bootstrap CI
    whiskers: rows = (label, mean, ci_low, ci_high).  Published anchors as dashed lines."""
    rows = sorted(rows, key=lambda r: r[1])
    height, fs = _fit_labels(len(rows))
    fig, ax = plt.subplots(figsize=(8.5, height))
    y = range(len(rows))
    means = [r[1] for r in rows]
    err = [[m - r[2] for m, r in zip(means, rows, strict=True)], [r[3] - m for m, r in zip(means, rows, strict=True)]]
    ax.barh(list(y), means, xerr=err, color="#4c72b0", ecolor="#222222", capsize=2, height=0.7)
    for yi, r in zip(y, rows, strict=True):
        ax.text(r[3], yi, f"  {r[1]:.4f} [{r[2]:.3f}, {r[3]:.3f}]", va="center", ha="left", fontsize=fs - 1)
    for name, value in anchors:
        ax.axvline(value, ls="--", lw=0.8, color="#c44e52")
        ax.text(value, len(rows) - 0.4, f" {name} {value:.3f}", rotation=90, va="top", fontsize=6, color="#c44e52")
    ax.set_yticks(list(y))
    ax.set_yticklabels([r[0] for r in rows], fontsize=fs)
    lo = min(r[2] for r in rows) if rows else 0.0
    hi = max(r[3] for r in rows) if rows else 1.0
    left = max(0.0, lo - 0.1 * (hi - lo + 0.05))
    ax.set_xlim(left, min(1.0, hi + 0.35 * (hi - lo + 0.05)) if hi < 0.97 else 1.12)
    ax.set_xticks([t for t in ax.get_xticks() if left <= t <= 1.0])
    ax.set_xlabel(f"{metric}: mean over queries, whiskers 95% bootstrap CI", fontsize=9)
    ax.set_title(f"{metric} per run" + (f" (axis starts at {left:.2f})" if left > 0 else ""))
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def query_deltas(path: Path, metric: str, baseline: str, deltas: Mapping[str, Sequence[float]]) -> Path:
    """Per-query difference to the baseline run.  Up to 6 runs: each run's deltas sorted
    (one line per run: how many queries win, lose, tie and by how much); more: horizontal
    box plots sorted by mean delta."""
    order = sorted(deltas, key=lambda k: sum(deltas[k]) / max(1, len(deltas[k])))
    if len(order) <= 6:
        fig, ax = plt.subplots(figsize=(8.5, 4.0))
        for label in order:
            d = sorted(deltas[label])
            mean = sum(d) / max(1, len(d))
            wins, losses = sum(1 for x in d if x > 1e-9), sum(1 for x in d if x < -1e-9)
            ax.plot(range(1, len(d) + 1), d, label=f"{label}: mean {mean:+.4f}, {wins} up / {losses} down")
        ax.axhline(0.0, color="#222222", lw=0.8)
        ax.set_xlabel("queries, sorted by delta")
        ax.set_ylabel(f"{metric} - baseline")
        ax.legend(fontsize=7, loc="upper left")
    else:
        height, fs = _fit_labels(len(order))
        fig, ax = plt.subplots(figsize=(8.5, height))
        ax.boxplot([list(deltas[k]) for k in order], orientation="horizontal", whis=(5, 95), showmeans=True,
                   showfliers=False)
        ax.set_yticks(range(1, len(order) + 1))
        ax.set_yticklabels(order, fontsize=fs)
        ax.axvline(0.0, color="#222222", lw=0.8)
        ax.set_xlabel(f"{metric} - baseline, per query\n(box p25-p75, whiskers p5-p95, triangle: mean)", fontsize=8)
    ax.set_title(f"per-query {metric} against the baseline\n{baseline}", fontsize=9)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def weight_gain(path: Path, metric: str, baseline: str, points: Mapping[str, Sequence[tuple[float, float]]]) -> Path:
    """Per query: the keyword weight's multiplier (x) against the run's metric minus the
    baseline's (y), one colour per run (the 8 with most points), and each run's mean delta
    over multiplier bins (a quarter wide; 1.0 alone: the weight kept) as a line."""
    order = sorted(points, key=lambda k: -len(points[k]))[:8]
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    edges = (0.0, 0.25, 0.5, 0.75, 1.0)
    for i, label in enumerate(sorted(order)):
        xy = points[label]
        color = f"C{i}"
        ax.scatter([x for x, _ in xy], [y for _, y in xy], s=9, alpha=0.35, color=color, linewidths=0)
        bx, by = [], []
        for lo, hi in zip(edges, edges[1:], strict=False):
            ys = [y for x, y in xy if lo <= x < hi]
            if ys:
                bx.append((lo + hi) / 2)
                by.append(sum(ys) / len(ys))
        kept = [y for x, y in xy if x >= 1.0]
        if kept:
            bx.append(1.0)
            by.append(sum(kept) / len(kept))
        ax.plot(bx, by, marker="o", color=color, label=f"{label} ({len(xy)} queries)")
    ax.axhline(0.0, color="#222222", lw=0.8)
    ax.set_xlim(-0.03, 1.05)
    ax.set_xlabel("keyword weight multiplier (1 = the profile's weight)")
    ax.set_ylabel(f"{metric} - baseline, per query")
    ax.set_title(f"adaptive fusion: keyword weight against the gain over\n{baseline}\n"
                 "(dots: queries; line: mean per multiplier bin)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def recall_curves(path: Path, curves: Mapping[str, Sequence[tuple[int, float]]]) -> Path:
    """recall@k against k (log scale), one line per run; the legend sorted by recall@10."""
    def at10(label: str) -> float:
        return next((v for k, v in curves[label] if k == 10), 0.0)

    order = sorted(curves, key=at10, reverse=True)
    if len(order) > 8:
        return _recall_table(path, order, curves)
    fig, ax = plt.subplots(figsize=(8.5 if len(order) > 1 else 5.5, 4.0))
    for label in order:
        pts = sorted(curves[label])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{label} ({at10(label):.3f} @10)")
    ax.set_xscale("log")
    ks = sorted({p[0] for pts in curves.values() for p in pts})
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlabel("k (results, de-duplicated per unit)")
    ax.set_ylabel("recall@k")
    ax.set_ylim(0, 1.0)
    ax.set_title("recall@k")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6 if len(order) > 10 else 7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, path)


def _recall_table(path: Path, order: Sequence[str], curves: Mapping[str, Sequence[tuple[int, float]]]) -> Path:
    """Many runs: recall@k as an annotated heat map (rows sorted by recall@10, best on top)."""
    ks = sorted({p[0] for pts in curves.values() for p in pts})
    grid = [[dict(curves[r]).get(k, float("nan")) for k in ks] for r in order]
    height, fs = _fit_labels(len(order))
    fig, ax = plt.subplots(figsize=(9.5, height))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=fs - 1,
                    color="white" if v < 0.6 else "black")
    ax.set_xticks(range(len(ks)))
    ax.set_xticklabels([f"@{k}" for k in ks])
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order, fontsize=fs)
    ax.set_title("recall@k (rows sorted by recall@10)")
    fig.colorbar(im, ax=ax, fraction=0.03)
    return _save(fig, path)


def category_bars(path: Path, metric: str, values: Mapping[str, Mapping[str, float]]) -> Path:
    """Grouped horizontal bars: per category (groups), one bar per run.  values[run][cat]."""
    runs = sorted(values, key=lambda r: sum(values[r].values()))
    cats = sorted({c for v in values.values() for c in v}, key=lambda c: (len(c), c))
    n = len(runs)
    height, fs = _fit_labels(len(cats) * (n + 1) // 2 + 1)
    fig, ax = plt.subplots(figsize=(8.5, max(3.0, height)))
    bar = 0.8 / max(1, n)
    for i, run in enumerate(runs):
        ys = [ci + i * bar for ci in range(len(cats))]
        ax.barh(ys, [values[run].get(c, 0.0) or 0.0 for c in cats], height=bar, label=run)
    ax.set_yticks([ci + 0.4 - bar / 2 for ci in range(len(cats))])
    ax.set_yticklabels([f"category {c}" for c in cats], fontsize=8)
    ax.set_xlabel(metric)
    ax.set_xlim(0, 1.0)
    ax.set_title(f"{metric} per category")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=fs - 1, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, path)
