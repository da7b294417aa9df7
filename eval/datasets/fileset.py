"""A labelled set whose corpus is files read from the machine (documentation, release notes):
a folder holding ``manifest.json`` and one labels file in memo's JSONL label format.

``manifest.json``::

    {"format": "files", "namespace": "default",
     "entries": [{"label": "api/fs.md", "source": "/usr/share/doc/nodejs/api/fs.md",
                  "sha256": "<of the content>"}, ...]}

* ``source``: the file on this machine; ``{stdlib}`` and ``{purelib}`` expand to the running
  interpreter's standard-library and site-packages folders, and a path under another
  interpreter's ``site-packages`` is read from this one's (a checkout's ``.venv`` moves);
  a ``.gz`` source is read decompressed.
* ``label``: the path the labels name the file by (``api/fs.md``, or ``api/fs.md#<heading>``
  for a section).  The index is built by ``memo import``'s own code from a staging copy at
  ``<staging>/<label>``, so the stored import path ends with the label (``unit = auto``
  matches a label by a trailing part of the import path: ``memo_eval.index``).
* ``sha256``: of the content as imported; the loader refuses a machine whose file differs
  (another package version gives other figures) and names the first one.

The corpus is never copied into the repository; ``scripts/nodedocs_db.py`` and
``scripts/relnotes_db.py`` write the manifests.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from memo.errors import DatasetError
from memo_eval.datasets import custom
from memo_eval.datasets.base import EvalSet

MANIFEST = "manifest.json"
FORMAT = "files"


def is_files_set(path: Path) -> bool:
    m = path / MANIFEST
    if not (path.is_dir() and m.is_file()):
        return False
    try:
        return json.loads(m.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError):
        return False


def resolve_source(source: str, base: Path | None = None) -> Path:
    """A manifest entry's file on this machine (module docstring); a relative source is a
    file shipped beside the manifest (the bundled sample's gate docs)."""
    text = source.replace("{stdlib}", sysconfig.get_paths()["stdlib"]).replace(
        "{purelib}", sysconfig.get_paths()["purelib"])
    path = Path(text)
    if not path.is_absolute() and base is not None:
        return base / path
    if not path.exists() and "/site-packages/" in text:
        path = Path(sysconfig.get_paths()["purelib"]) / text.split("/site-packages/", 1)[1]
    return path


def content(source: str, base: Path | None = None) -> bytes:
    path = resolve_source(source, base)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"corpus file {path} cannot be read: {exc.strerror or exc}",
                           hint="install the package that ships it, or rebuild the manifest") from exc
    return gzip.decompress(data) if path.suffix == ".gz" else data


def load_manifest(folder: Path) -> dict:
    try:
        doc = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{folder / MANIFEST}: not a readable JSON manifest ({exc})") from exc
    if doc.get("format") != FORMAT or not isinstance(doc.get("entries"), list) or not doc["entries"]:
        raise DatasetError(f"{folder / MANIFEST}: expected {{'format': 'files', 'entries': [...]}}")
    return doc


def corpus_hash(entries: list[dict]) -> str:
    """sha256 over (label, sha256) of every entry, in order (split-independent)."""
    h = hashlib.sha256()
    for e in entries:
        h.update(f"{e['label']}\0{e['sha256']}\0".encode())
    return h.hexdigest()


def check_machine(entries: list[dict], base: Path | None = None) -> None:
    """Every source exists here with the manifest's content (DatasetError names the first that does not)."""
    for e in entries:
        got = hashlib.sha256(content(e["source"], base)).hexdigest()
        if got != e["sha256"]:
            raise DatasetError(f"corpus file {resolve_source(e['source'], base)} differs from the one the labels were "
                               f"written on (sha256 {got[:12]} != {e['sha256'][:12]})",
                               hint="the figures need the same package versions; see the set's SOURCE.md")


def stage(entries: list[dict], into: Path, base: Path | None = None) -> Iterator[Path]:
    """Write each entry's content to ``into/<label>`` and yield those paths, in order."""
    for e in entries:
        dest = into / e["label"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        src = resolve_source(e["source"], base)
        if src.suffix == ".gz":
            dest.write_bytes(content(e["source"], base))
        else:
            shutil.copyfile(src, dest)
        yield dest


def load_files_set(folder: Path, split: str = "test") -> EvalSet:
    doc = load_manifest(folder)
    labels = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
    if len(labels) != 1:
        raise DatasetError(f"{folder}: expected one labels file (*.jsonl) beside {MANIFEST}, found {len(labels)}")
    entries = doc["entries"]
    check_machine(entries, folder)
    es = custom.load_custom(labels[0], split)
    h = hashlib.sha256(corpus_hash(entries).encode() + labels[0].read_bytes()).hexdigest()
    return EvalSet(name=folder.name, split=es.split, corpus_hash=corpus_hash(entries), unit="auto",
                   queries=es.queries, qrels=es.qrels, corpus=None, source=str(folder),
                   notes={"files": len(entries), "labels_sha256": h[:16]},
                   corpus_path=str(folder / MANIFEST), corpus_format=FORMAT)
