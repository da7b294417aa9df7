"""Write ``datasets/pdfdocs/manifest.json``: the PDF manuals the ``pdfdocs`` labelled set is
evaluated on, read from this machine's ``/usr/share/doc`` (never copied into the repository).

Seven manuals installed with their Debian packages (SOURCE.md lists them): five with an
outline (the questions' labels name its sections) and two without (bzip2's and zlib's CRC
paper: distractors, as a folder of PDFs holds).  A ``.gz`` source is read decompressed
(``memo_eval.datasets.fileset``).  Usage::

    .venv/bin/python scripts/pdfdocs_manifest.py            # check the machine against the manifest
    .venv/bin/python scripts/pdfdocs_manifest.py --write    # rewrite it (after re-labelling)
    .venv/bin/memo eval run -d datasets/pdfdocs --split train -p zscore
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "datasets" / "pdfdocs" / "manifest.json"

# (label the questions name the file by, file on this machine)
FILES = [
    ("bzip2-manual.pdf", "/usr/share/doc/bzip2/manual.pdf.gz"),
    ("crc-doc.1.0.pdf", "/usr/share/doc/zlib1g-dev/crc-doc.1.0.pdf.gz"),
    ("fontconfig-user.pdf", "/usr/share/doc/fontconfig/fontconfig-user.pdf.gz"),
    ("libtasn1.pdf", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    ("nettle.pdf", "/usr/share/doc/nettle-dev/nettle.pdf.gz"),
    ("shared-mime-info-spec.pdf", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
    ("valgrind_manual.pdf", "/usr/share/doc/valgrind/valgrind_manual.pdf.gz"),
]


def entries() -> list[dict[str, str]]:
    out = []
    for label, source in FILES:
        data = Path(source).read_bytes()
        data = gzip.decompress(data) if source.endswith(".gz") else data
        out.append({"label": label, "source": source, "sha256": hashlib.sha256(data).hexdigest()})
    return out


def corpus_hash(rows: list[dict[str, str]]) -> str:
    h = hashlib.sha256()       # as memo_eval.datasets.fileset.corpus_hash
    for e in rows:
        h.update(f"{e['label']}\0{e['sha256']}\0".encode())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the manifest from this machine")
    args = ap.parse_args()
    rows = entries()
    doc = {"format": "files", "namespace": "default", "corpus_sha256": corpus_hash(rows), "entries": rows}
    if args.write:
        MANIFEST.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MANIFEST} ({len(rows)} files)")
        return 0
    have = json.loads(MANIFEST.read_text(encoding="utf-8"))
    if have["entries"] != rows:
        print("this machine's files differ from the manifest", file=sys.stderr)
        return 1
    print(f"{len(rows)} files as the manifest lists them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
