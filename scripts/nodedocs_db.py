"""Build the memo database the ``nodedocs`` labelled set is evaluated on (docs/eval.md).

The corpus is read from this machine, never copied into the repository:

* Node.js API docs: every ``*.md`` of ``/usr/share/doc/nodejs/api`` (Debian/NodeSource
  package ``nodejs``; ``--node-api DIR`` for another copy), 64 files for Node 20.
* Python sources: a few standard-library modules of the running interpreter
  (``sysconfig`` stdlib folder): shlex, textwrap, shutil, functools, tempfile.

Each file is imported with memo's normal file import (``memo.ops.import_path``), then the
passages are embedded (``embed_pending``).  Usage::

    .venv/bin/python scripts/nodedocs_db.py --db /tmp/nodedocs.db
    .venv/bin/memo eval run -d datasets/nodedocs/nodedocs.jsonl --db /tmp/nodedocs.db -p rrf -p minmax

The database must not exist yet (a second run would supersede records and mix splitter
versions); ``--force`` deletes it first.

``--write-manifest`` writes ``datasets/nodedocs/manifest.json`` instead (the ``files`` set
format, ``memo_eval.datasets.fileset``): the harness then builds and caches the index itself
(``memo eval run -d datasets/nodedocs``, and the suite).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import sysconfig
from pathlib import Path

NODE_API = Path("/usr/share/doc/nodejs/api")
PY_MODULES = ("shlex.py", "textwrap.py", "shutil.py", "functools.py", "tempfile.py")


def corpus_files(node_api: Path) -> list[Path]:
    if not node_api.is_dir():
        sys.exit(f"{node_api} not found: install the Debian package nodejs (or nodejs-doc), or pass --node-api DIR")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(node_api.glob("*.md")) + [stdlib / m for m in PY_MODULES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.exit(f"missing corpus files: {', '.join(missing)}")
    return files


def corpus_sha256(files: list[Path]) -> str:
    """sha256 over (file name, content) of every corpus file, in order: SOURCE.md records
    the value the published figures were measured on."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def write_manifest(files: list[Path]) -> None:
    """datasets/nodedocs/manifest.json: each file's label (the path the labels name it by),
    its source on this machine ({stdlib} for the interpreter's standard library) and sha256."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    entries = []
    for f in files:
        if f.parent == stdlib:
            label, source = f"python{sys.version_info[0]}.{sys.version_info[1]}/{f.name}", "{stdlib}/" + f.name
        else:
            label, source = f"api/{f.name}", str(f)
        entries.append({"label": label, "source": source, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
    out = Path(__file__).resolve().parents[1] / "datasets" / "nodedocs" / "manifest.json"
    doc = {"format": "files", "namespace": "default", "corpus_sha256": corpus_sha256(files), "entries": entries}
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(entries)} files)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--node-api", type=Path, default=NODE_API)
    ap.add_argument("--force", action="store_true", help="delete --db first")
    ap.add_argument("--no-embed", action="store_true")
    ap.add_argument("--write-manifest", action="store_true",
                    help="write datasets/nodedocs/manifest.json (the harness's files set) and exit")
    args = ap.parse_args()
    if args.write_manifest:
        write_manifest(corpus_files(args.node_api))
        return

    from memo.ops import import_path
    from memo.ops.after_commit import embed_pending
    from memo.ops.importer import ImportOptions
    from memo.store.db import open_db

    if args.db.exists():
        if not args.force:
            sys.exit(f"{args.db} exists (use --force to rebuild it)")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{args.db}{suffix}").unlink(missing_ok=True)
    files = corpus_files(args.node_api)
    conn = open_db(args.db)
    totals: dict[str, object] = {"corpus_sha256": corpus_sha256(files), "files": 0, "added": 0,
                                 "passages": 0, "rejected": []}
    for f in files:
        report = import_path(conn, f, ImportOptions(namespace="default"))
        totals["files"] += 1                      # type: ignore[operator]
        totals["added"] += report.added           # type: ignore[operator]
        totals["passages"] += report.passages     # type: ignore[operator]
        totals["rejected"] += [f"{r.path}: {r.reason}" for r in report.rejected]  # type: ignore[operator]
    if not args.no_embed:
        emb = embed_pending(conn, progress=sys.stderr.isatty())
        totals["embedded"] = emb.embedded
        totals["embed_error"] = emb.error
    print(json.dumps(totals, indent=1))


if __name__ == "__main__":
    main()
