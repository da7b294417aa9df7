"""Published figures to read memo's runs against (eval/anchors.toml): the report and
``memo eval tune`` print each run's metric next to the anchors for its data set and split,
so a tuned profile is judged against BM25, the dense models and plain fusion, not in a vacuum.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from memo.errors import DatasetError

ANCHORS_FILE = Path(__file__).with_name("anchors.toml")


@dataclass(frozen=True, slots=True)
class Anchor:
    dataset: str
    split: str
    metric: str
    name: str
    value: float
    queries: int            # the whole split; a run over a subset is not comparable


@cache
def load_anchors(path: Path = ANCHORS_FILE) -> tuple[Anchor, ...]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        return tuple(Anchor(a["dataset"], a["split"], a["metric"], a["name"], float(a["value"]), int(a["queries"]))
                     for a in raw.get("anchor", []))
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: bad anchors file: {exc}") from exc


def anchors_for(dataset: str, split: str, metric: str | None = None, n_queries: int | None = None) -> list[Anchor]:
    """Anchors of a data set's split (and metric), by value; with ``n_queries``, only those
    measured on that many queries (a --limit-queries run compares with nothing)."""
    return sorted((a for a in load_anchors() if a.dataset == dataset and a.split == split
                   and (metric is None or a.metric == metric)
                   and (n_queries is None or a.queries == n_queries)), key=lambda a: a.value)


def against(value: float | None, dataset: str, split: str, metric: str, n_queries: int) -> list[dict[str, object]]:
    """Each comparable anchor with ``delta`` = value - anchor (None when there is no value)."""
    return [{"name": a.name, "metric": a.metric, "anchor": a.value,
             "delta": None if value is None else round(value - a.value, 4)}
            for a in anchors_for(dataset, split, metric, n_queries)]
