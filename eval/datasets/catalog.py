"""The data sets ``memo eval run -d NAME`` can load here (``memo eval list``, issue 32.4).

Four places, in the order ``load_eval_set`` resolves names: the ``sample`` packaged with
memo and its gate sets (``sample-chat``, ``sample-docs``), the repository's ``datasets/<name>/``
(a checkout only) and the fetch folder (``memo eval fetch``; a fetched set with the name of
a repository one is shadowed by it).  Per set: its format, its splits and how many queries
each holds, counted from the label files without reading a corpus (the LoCoMo splits through
the loader: a JSON parse, a fraction of a second); a set that does not load is listed with
its error, never raised.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from memo.errors import MemoError
from memo_eval.datasets import codesearch, fileset, locomo
from memo_eval.datasets.base import OBS_SUFFIX
from memo_eval.datasets.beir import read_qrels

# What else -d takes besides the names listed (docs/eval.md, "Data sets").
OTHER_FORMS = ("offdomain:<queries>-on-<corpus> (queries of one as unanswerable)",
               "a BEIR folder, a LoCoMo .json, or your queries .jsonl (with --db)")
_LOCOMO_SPLITS = ("test", "train", "dev")      # "all" is "test"


def _split_counts(lines: list[str]) -> dict[str, int]:
    """Queries per ``split`` field of a labels JSONL; ``{"all": n}`` when no line has one."""
    splits: Counter[str] = Counter()
    total = 0
    for line in lines:
        if not line.strip():
            continue
        total += 1
        split = json.loads(line).get("split")
        if split is not None:
            splits[str(split)] += 1
    return dict(sorted(splits.items())) if splits else {"all": total}


def describe(path: Path) -> dict[str, Any]:
    """``{"format", "splits": {split: queries}}`` of a data set folder or file, cheaply."""
    if fileset.is_files_set(path):
        labels = sorted(path.glob("*.jsonl"))
        if len(labels) != 1:
            return {"format": "files", "splits": {}, "error": f"expected one labels file, found {len(labels)}"}
        return {"format": "files", "splits": _split_counts(labels[0].read_text(encoding="utf-8").splitlines())}
    if path.is_dir() and (path / codesearch.MANIFEST).exists() and (path / codesearch.LABELS).exists():
        with gzip.open(path / codesearch.LABELS, "rt", encoding="utf-8") as fh:
            return {"format": "codesearch", "splits": _split_counts(fh.read().splitlines())}
    if path.is_dir() and (path / "queries.jsonl").exists():
        return {"format": "beir", "splits": {tsv.stem: len(read_qrels(tsv))
                                             for tsv in sorted((path / "qrels").glob("*.tsv"))}}
    source = locomo.folder_json(path) if path.is_dir() else (path if path.suffix == ".json" else None)
    if source is not None:
        counts = {s: len(locomo.load_locomo(source, s).queries) for s in _LOCOMO_SPLITS}
        return {"format": "locomo", "splits": {s: n for s, n in counts.items() if n}}
    if path.suffix == ".jsonl":
        return {"format": "queries", "splits": _split_counts(path.read_text(encoding="utf-8").splitlines())}
    return {"format": "?", "splits": {}, "error": "not a data set (no labels found)"}


def _entry(name: str, source: str, path: Path, **extra: Any) -> dict[str, Any]:
    try:
        info = describe(path)
    except (MemoError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        info = {"format": "?", "splits": {}, "error": f"{type(exc).__name__}: {exc}"}
    info.setdefault("error", None)
    return {"name": name, "source": source, "path": str(path), **info, **extra}


def list_datasets() -> list[dict[str, Any]]:
    """Every data set available here: bundled, repository, fetched (module docstring)."""
    from memo_eval.datasets import DATASETS_DIR, GATE_SETS, SAMPLE, fetched_dir, sample_dir

    out = [_entry(SAMPLE, "bundled", sample_dir() / "scifact")]
    out += [_entry(name, "bundled", sample_dir().joinpath(*parts)) for name, parts in GATE_SETS.items()]
    repo: set[str] = set()
    if DATASETS_DIR.is_dir():
        for d in sorted(p for p in DATASETS_DIR.iterdir() if p.is_dir()):
            if d.name == SAMPLE:       # the bundled sample's source: -d sample reads the packaged copy
                continue
            repo.add(d.name)
            out.append(_entry(d.name, "repository", d))
    fetched = fetched_dir()
    if fetched.is_dir():
        for d in sorted(p for p in fetched.iterdir() if p.is_dir() or p.suffix in (".json", ".jsonl")):
            out.append(_entry(d.name, "fetched", d, shadowed=d.name in repo))
    for e in out:
        if e["format"] == "locomo" and e["name"] == "locomo":
            e["variants"] = [f"{e['name']}{OBS_SUFFIX}"]
    return out
