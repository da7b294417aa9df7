"""Measure what each step of the PDF conversion (memo.ingest.pdf_text) is worth on the
``pdfdocs`` questions: build a database of the seven manuals with one step left out, then
run the labels against it (``memo eval run -d datasets/pdfdocs/pdfdocs.jsonl --db ...``).

Variants (``--variant``):

* ``all``: the conversion as shipped;
* ``no-furniture``: running headers, footers, page numbers, contents and index lines kept;
* ``no-paragraphs``: each page's lines kept as one block, as printed (no paragraphs, a
  hyphenated word left in two pieces).

The outline's headings cannot be left out here: the labels name its sections.  Usage::

    .venv/bin/python scripts/pdfdocs_variants.py --variant no-furniture --db /tmp/pdf-nofurn.db
    .venv/bin/memo eval run -d datasets/pdfdocs/pdfdocs.jsonl --db /tmp/pdf-nofurn.db --split train -p zscore
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

from memo.ingest import pdf_text
from memo.ops import import_path
from memo.ops.after_commit import embed_pending
from memo.store.db import open_db

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from pdfdocs_manifest import FILES  # noqa: E402


def _keep_furniture(pages: list[list[str]]) -> list[list[str]]:
    return [[ln for ln in page if ln] for page in pages]


def _as_printed(pages: list[list[str]], headings: list[pdf_text._Heading]) -> str:
    lines = [(n, ln) for n, page in enumerate(pages) for ln in page]
    at = pdf_text._place(lines, headings)
    blocks: list[list[str]] = [[]]
    skip = 0
    for i, (n, line) in enumerate(lines):
        for h, used in at.get(i, ()):
            blocks.append(["#" * min(h.level, 6) + " " + pdf_text.escape_markdown(h.title)])
            blocks.append([])
            skip = max(skip, used)
        if skip:
            skip -= 1
            continue
        if i and lines[i - 1][0] != n:
            blocks.append([])                       # a page is a block
        blocks[-1].append(pdf_text.escape_markdown(line))
    return "\n\n".join("\n".join(b) for b in blocks if b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", choices=("all", "no-furniture", "no-paragraphs"), required=True)
    ap.add_argument("--db", required=True, type=Path)
    args = ap.parse_args()
    if args.db.exists():
        ap.error(f"{args.db} exists")
    if args.variant == "no-furniture":
        pdf_text._without_furniture = _keep_furniture
    elif args.variant == "no-paragraphs":
        pdf_text._markdown = _as_printed
    with tempfile.TemporaryDirectory() as tmp:
        for label, source in FILES:      # staged under their labels, as the harness stages them
            data = Path(source).read_bytes()
            (Path(tmp) / label).write_bytes(gzip.decompress(data) if source.endswith(".gz") else data)
        conn = open_db(args.db)
        rep = import_path(conn, tmp)
        emb = embed_pending(conn, rep.record_ids, progress=sys.stderr.isatty(), passages=rep.passages)
        print(f"{args.variant}: {rep.added} files, {rep.passages} passages, {emb.embedded} embedded"
              f"{'' if emb.error is None else ', error: ' + str(emb.error)}")
        conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
