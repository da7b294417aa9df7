"""Figures for the eval report (matplotlib, Agg backend: files only, no display).

Each function takes plain data (computed by ``eval.report`` with DuckDB) and writes one
PNG, returning its path, so the notebook and the CLI draw the same pictures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DPI = 110


def metric_vs_constant(path: Path, constant: str, series: Mapping[str, Sequence[tuple[float, float]]],
                       metric: str) -> Path:
    """One line per series (profile, or profile + other constants): metric against a constant."""
    many = len(series) > 1
    fig, ax = plt.subplots(figsize=(8.5 if many else 5.5, 3.8))
    for label, points in sorted(series.items()):
        pts = sorted(points)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel(constant)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {constant}")
    ax.grid(alpha=0.3)
    if many:
        # Outside the axes: with a dozen series an inside legend hides the lines.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def arm_contribution(path: Path, runs: Sequence[str], arms: Sequence[str],
                     shares: Mapping[str, Mapping[str, float]], title: str = "") -> Path:
    """Stacked bars: each arm's mean share of the fused score of the top-10 results."""
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(runs) + 2.5), 3.8))
    bottom = [0.0] * len(runs)
    for arm in arms:
        vals = [shares.get(r, {}).get(arm, 0.0) for r in runs]
        if not any(vals):
            continue
        ax.bar(range(len(runs)), vals, bottom=bottom, label=arm)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(runs, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("share of fused score (top 10)")
    ax.set_ylim(0, 1.05)
    ax.set_title(title or "per-arm contribution")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def latency(path: Path, data: Mapping[str, Sequence[float]]) -> Path:
    """Box plot of per-query pipeline latency (ms) per run."""
    labels = list(data)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(labels) + 2.5), 3.8))
    ax.boxplot([list(data[k]) for k in labels], showfliers=True, whis=(5, 95))
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("latency per query (ms)")
    ax.set_yscale("log")
    ax.set_title("latency distribution (whiskers p5-p95)")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
