"""Write ``codesearch-nl`` as a BEIR folder: the form public code-search sets ship in.

A BEIR corpus line has only ``_id``, ``title`` and ``text``, so the same questions over the
same functions go through ``memo import --format beir``'s reader (``memo.ingest.beir``)
instead of the harness's codesearch loader, which makes ``code`` records by construction.
That is how a code set nobody here built reaches memo, and it checks that the reader's code
detection (``memo.ingest.code_detect``) gives the fusion what the codesearch loader gives it
(docs/eval.md "Code in a BEIR corpus").  Usage::

    .venv/bin/python scripts/codesearch_beir.py OUT [--titles] [--docstrings]
    .venv/bin/memo eval run -d OUT --split train -p zscore

``--titles``: each line's title is the function's qualified name (default: empty, as the
public sets of function bodies have it).  ``--docstrings``: the function's docstring is put
back where it was (CodeSearchNet's form; default: the corpus as codesearch indexes it,
without).  Queries, their splits and their grades are codesearch-nl's.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import textwrap
from pathlib import Path

from memo_eval.datasets.codesearch import Function, build

LABELS = Path(__file__).resolve().parent.parent / "datasets" / "codesearch-nl" / "codesearch.jsonl.gz"


def with_docstring(f: Function) -> str:
    """``f.code`` with its docstring back as the first statement of its body (as it is when
    the code does not parse on its own: a method whose signature spans lines, 8 of 3,715)."""
    assert f.code is not None
    if not f.docstring:
        return f.code
    lines = f.code.splitlines()
    try:
        tree = ast.parse(textwrap.dedent(f.code))
    except SyntaxError:
        return f.code
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    at = fn.body[0].lineno - 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    doc = textwrap.indent('"""' + f.docstring.strip() + '\n"""', indent).splitlines()
    return "\n".join(lines[:at] + doc + lines[at:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--titles", action="store_true", help="title = the qualified name (default: empty)")
    ap.add_argument("--docstrings", action="store_true", help="keep each function's docstring in its text")
    a = ap.parse_args()
    (a.out / "qrels").mkdir(parents=True, exist_ok=True)
    items = build(None).items
    with (a.out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for f in items:
            text = with_docstring(f) if a.docstrings else f.code
            fh.write(json.dumps({"_id": f.qualname, "title": f.qualname if a.titles else "", "text": text}) + "\n")
    qrels: dict[str, list[str]] = {"train": [], "test": []}
    with gzip.open(LABELS, "rt", encoding="utf-8") as src, (a.out / "queries.jsonl").open("w") as fq:
        for line in src:
            lb = json.loads(line)
            fq.write(json.dumps({"_id": lb["id"], "text": lb["query"]}) + "\n")
            rel = lb["relevant"] if isinstance(lb["relevant"], dict) else dict.fromkeys(lb["relevant"], 1)
            qrels[lb["split"]] += [f"{lb['id']}\t{doc}\t{grade}" for doc, grade in rel.items()]
    for split, rows in qrels.items():
        (a.out / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    print(f"{a.out}: {len(items)} functions, qrels lines {', '.join(f'{s} {len(r)}' for s, r in qrels.items())}")


if __name__ == "__main__":
    main()
