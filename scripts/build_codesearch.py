"""Build the ``codesearch`` labels from the running Python's standard library (docs/eval.md).

Writes ``codesearch.jsonl.gz`` (memo's JSONL label format: id = the function's qualified
name, query = its docstring's first sentence, relevant = [itself], category = function |
method, split = test | train by module) and ``manifest.json`` (Python version, file count,
file list sha256, corpus sha256, rule counts).  The corpus itself (each function's source
without its docstring) is rebuilt from the machine whenever an index is built; the rules
are in ``eval/datasets/codesearch.py``.  Usage::

    .venv/bin/python scripts/build_codesearch.py                  # -> datasets/codesearch/
    .venv/bin/python scripts/build_codesearch.py --out /tmp/cs    # another Python: -d /tmp/cs
    .venv/bin/memo eval run -d codesearch -p rrf -p minmax

The same interpreter and stdlib give the same bytes (``--check`` compares with the
committed files and exits 1 on a difference).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo_eval.datasets.codesearch import LABELS, MANIFEST, build, write_labels  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "datasets" / "codesearch"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--stdlib", type=Path, default=None, help="another stdlib folder (default: the running one)")
    ap.add_argument("--check", action="store_true", help="build into a temporary folder and compare with --out")
    args = ap.parse_args()
    built = build(args.stdlib)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_labels(built, Path(tmp), args.stdlib)
            same = all((Path(tmp) / n).read_bytes() == (args.out / n).read_bytes() for n in (LABELS, MANIFEST))
        print("same" if same else "different")
        return 0 if same else 1
    man = write_labels(built, args.out, args.stdlib)
    print(json.dumps(man, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
