"""Build the memo database the ``relnotes`` labelled set is evaluated on (datasets/relnotes).

The corpus is read from this machine, never copied into the repository
(``datasets/relnotes/manifest.json`` lists every file with its sha256):

* git's release notes: the 485 ``*.txt`` of ``/usr/share/doc/git/RelNotes`` (Debian
  package ``git`` 1:2.39.5), imported where they are;
* NEWS files, upstream changelogs and Debian changelogs of packages installed here
  (``/usr/share/doc/<package>/NEWS.gz``, ``NEWS.md.gz``, ``changelog.gz``,
  ``changelog.Debian.gz``, ``NEWS.Debian.gz``): ``memo import`` does not read ``.gz``, so
  each is decompressed into ``--cache`` (default ``~/.cache/memo-relnotes``) as
  ``<package>/<name>`` (``.gz`` dropped; ``changelog.Debian`` and ``NEWS.Debian`` get
  ``.txt``, since memo imports text files by extension) and imported from there;
* the changelogs two Python packages of the venv embed in their ``METADATA`` (jedi,
  parso), imported where they are.

Each file is imported with memo's normal file import (``memo.ops.import_path``, namespace
``default``), then the passages are embedded (``embed_pending``).  Usage::

    .venv/bin/python scripts/relnotes_db.py --db /tmp/relnotes.db
    .venv/bin/memo eval run -d datasets/relnotes/relnotes.jsonl --db /tmp/relnotes.db --split train -p zscore

A file whose sha256 differs from the manifest's stops the build (another package version
gives other files and other figures); ``--write-manifest`` rewrites the manifest from the
machine instead (for the maintainer who re-labels).  The database must not exist yet;
``--force`` deletes it first.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import sysconfig
from pathlib import Path

DOC = Path("/usr/share/doc")
REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "datasets" / "relnotes" / "manifest.json"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memo-relnotes"

# (Debian package whose /usr/share/doc folder holds it, file name there)
DOC_FILES = [
    ("apt", "NEWS.Debian.gz"), ("apt", "changelog.gz"),
    ("bash", "NEWS.gz"), ("bash", "changelog.Debian.gz"),
    ("binutils", "NEWS.gz"),
    ("coreutils", "NEWS.gz"), ("coreutils", "changelog.Debian.gz"),
    ("curl", "changelog.Debian.gz"),
    ("diffutils", "NEWS.gz"),
    ("findutils", "NEWS.gz"),
    ("git", "NEWS.Debian.gz"), ("git", "changelog.Debian.gz"),
    ("grep", "NEWS.gz"),
    ("gzip", "NEWS.gz"), ("gzip", "changelog.Debian.gz"),
    ("less", "NEWS.gz"), ("less", "changelog.Debian.gz"),
    ("libarchive13", "NEWS.gz"),
    ("libgmp-dev", "NEWS.gz"),
    ("libidn2-0", "NEWS.gz"),
    ("libmpfr6", "NEWS.gz"),
    ("libnettle8", "NEWS.gz"),
    ("libpipeline1", "NEWS.md.gz"),
    ("make", "NEWS.gz"),
    ("man-db", "NEWS.md.gz"),
    ("openssl", "NEWS.md.gz"), ("openssl", "changelog.Debian.gz"),
    ("sed", "NEWS.gz"),
    ("strace", "NEWS.gz"),
    ("tar", "NEWS.gz"),
    ("wget", "NEWS.gz"),
    ("xz-utils", "NEWS.gz"),
    ("zstd", "changelog.gz"), ("zstd", "changelog.Debian.gz"),
]
PY_METADATA = ("jedi", "parso")       # dist-info/METADATA with a changelog
GIT_RELNOTES = DOC / "git" / "RelNotes"


def _cache_name(name: str) -> str:
    name = name.removesuffix(".gz")
    return f"{name}.txt" if name.endswith(".Debian") else name


def _site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def discover() -> list[dict[str, str]]:
    """The corpus as found on this machine: one entry per file, in import order, with
    its source, the label suffix that names it and where it is imported from (None: the
    cache copy)."""
    out: list[dict[str, str]] = []
    if not GIT_RELNOTES.is_dir():
        sys.exit(f"{GIT_RELNOTES} not found: install the Debian package git")
    for f in sorted(GIT_RELNOTES.glob("*.txt")):
        out.append({"label": f"git/RelNotes/{f.name}", "source": str(f), "package": "git", "cached": ""})
    for pkg, name in DOC_FILES:
        src = DOC / pkg / name
        out.append({"label": f"{pkg}/{_cache_name(name)}", "source": str(src), "package": pkg,
                    "cached": f"{pkg}/{_cache_name(name)}"})
    for dist in PY_METADATA:
        found = sorted(_site_packages().glob(f"{dist}-*.dist-info/METADATA"))
        if not found:
            sys.exit(f"no {dist}-*.dist-info/METADATA in {_site_packages()}")
        f = found[-1]
        out.append({"label": f"{f.parent.name}/METADATA", "source": str(f), "package": dist, "cached": ""})
    return out


def content(entry: dict[str, str]) -> bytes:
    src = Path(entry["source"])
    if not src.is_file():
        sys.exit(f"missing corpus file {src} (package {entry['package']})")
    data = src.read_bytes()
    return gzip.decompress(data) if src.suffix == ".gz" else data


def corpus_sha256(entries: list[dict[str, str]]) -> str:
    """sha256 over (label, sha256 of content) of every file, in order: SOURCE.md records the
    value the published figures were measured on."""
    h = hashlib.sha256()
    for e in entries:
        h.update(e["label"].encode() + b"\0" + e["sha256"].encode() + b"\0")
    return h.hexdigest()


def materialise(entries: list[dict[str, str]], cache: Path) -> list[Path]:
    """Where each file is imported from: decompressed copies are (re)written into ``cache``
    when missing or different; files read in place are checked."""
    paths: list[Path] = []
    for e in entries:
        data = content(e)
        digest = hashlib.sha256(data).hexdigest()
        if digest != e["sha256"]:
            sys.exit(f"{e['source']}: sha256 {digest[:12]}... differs from the manifest's {e['sha256'][:12]}... "
                     "(another package version?); figures in datasets/relnotes/SOURCE.md would not apply")
        if not e["cached"]:
            paths.append(Path(e["source"]))
            continue
        dest = cache / e["cached"]
        if not dest.is_file() or hashlib.sha256(dest.read_bytes()).hexdigest() != digest:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            tmp.replace(dest)
        paths.append(dest)
    return paths


def _version(entry: dict[str, str]) -> str:
    """The installed version of the package the file comes from (dpkg, or the dist-info name)."""
    if entry["package"] in PY_METADATA:
        return Path(entry["source"]).parent.name.removesuffix(".dist-info").split("-", 1)[1]
    import subprocess

    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", entry["package"]], capture_output=True, text=True)
    return out.stdout.strip()


def write_manifest() -> None:
    entries = discover()
    versions: dict[str, str] = {}
    for e in entries:
        e["sha256"] = hashlib.sha256(content(e)).hexdigest()
        e["version"] = versions.setdefault(e["package"], _version(e))
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    # "format": "files": the harness reads this folder as a files set (memo_eval.datasets.fileset)
    doc = {"format": "files", "namespace": "default", "corpus_sha256": corpus_sha256(entries), "files": len(entries),
           "entries": entries}
    MANIFEST.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{MANIFEST}: {len(entries)} files, corpus sha256 {doc['corpus_sha256']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help=f"folder for the decompressed copies (default {DEFAULT_CACHE})")
    ap.add_argument("--force", action="store_true", help="delete --db first")
    ap.add_argument("--no-embed", action="store_true")
    ap.add_argument("--write-manifest", action="store_true", help="rewrite the manifest from this machine")
    args = ap.parse_args()
    if args.write_manifest:
        write_manifest()
        return
    if args.db is None:
        ap.error("--db is required")

    from memo.ops import import_path
    from memo.ops.after_commit import embed_pending
    from memo.ops.importer import ImportOptions
    from memo.store.db import open_db

    manifest = json.loads(MANIFEST.read_text())
    entries = manifest["entries"]
    if args.db.exists():
        if not args.force:
            sys.exit(f"{args.db} exists (use --force to rebuild it)")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{args.db}{suffix}").unlink(missing_ok=True)
    files = materialise(entries, args.cache)
    conn = open_db(args.db)
    totals: dict[str, object] = {"corpus_sha256": corpus_sha256(entries), "files": 0, "added": 0,
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
