"""``memo eval fetch NAME --url URL [--sha256 HEX]``: download a public data set and check it.

* The download streams to a temporary file while hashing it; a ``--sha256`` mismatch
  deletes it and fails.  ``file://`` URLs work too (tests; air-gapped mirrors).
* A ``.zip`` (BEIR's distribution) is unpacked: the folder holding ``queries.jsonl`` becomes
  the data set folder.  A ``.json`` is stored as is (LoCoMo).  ``.gz`` corpora are kept gzipped.
* Known files are checked by content as well, whatever the URL: the SciFact corpus and
  queries and the LoCoMo file must match the hashes recorded in datasets/*/SOURCE.md.
* A ``SOURCE.md`` records the URL, the sha256 and the date next to the files.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memo.download import CHUNK, stream_download
from memo.errors import DatasetError

# Public addresses (users with internet) and content hashes of the files memo knows.
DEFAULT_URLS = {
    "scifact": "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip",
    "locomo": "https://raw.githubusercontent.com/snap-research/locomo/3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json",
}
# Whole-download hashes where the download is the file itself.
DEFAULT_SHA256 = {
    "locomo": "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
}
# (data set, file inside the folder, sha256 of its *uncompressed* bytes)
CONTENT_SHA256 = {
    ("scifact", "corpus.jsonl"): "dec31c8182f3d744c7d2c09423756fd1d17cbef75808db13ba01cc0aab4d1ac6",
    ("scifact", "queries.jsonl"): "8ff84a7c903f722981cd8d595c022660140c51867b27608a6d4910db86080313",
    ("locomo", "locomo10.json"): "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
}


@dataclass(frozen=True)
class Fetched:
    name: str
    url: str
    sha256: str
    bytes: int
    dest: Path
    files: tuple[str, ...]
    verified: tuple[str, ...]      # what was checked: "download", "corpus.jsonl", ...


def _download(url: str, into: Path, timeout: float) -> tuple[str, int]:
    try:
        return stream_download(url, into, timeout=timeout)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"download failed: {url}: {exc}", hint="check the URL and your connection") from exc


def _content_sha(path: Path) -> str:
    h = hashlib.sha256()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _unpack_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        roots = sorted({n.rsplit("/", 1)[0] if "/" in n else "" for n in names if n.endswith("queries.jsonl")})
        if not roots:
            raise DatasetError("the archive holds no queries.jsonl (not a BEIR data set)")
        root = roots[0]
        prefix = f"{root}/" if root else ""
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            rel = Path(info.filename[len(prefix):])
            if rel.is_absolute() or ".." in rel.parts:
                raise DatasetError(f"unsafe path in archive: {info.filename}")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out, CHUNK)


def fetch(name: str, *, url: str | None = None, sha256: str | None = None, dest: Path,
          verify: bool = True, timeout: float = 60.0) -> Fetched:
    url = url or DEFAULT_URLS.get(name)
    if not url:
        raise DatasetError(f"no default address for {name!r}", hint="pass --url")
    expected = sha256
    if expected is None and url == DEFAULT_URLS.get(name):
        expected = DEFAULT_SHA256.get(name)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".fetch-{name}-", dir=dest.parent))
    try:
        raw = work / (Path(url.split("?", 1)[0]).name or "download")
        digest, size = _download(url, raw, timeout)
        verified: list[str] = []
        if expected:
            if digest != expected.lower():
                raise DatasetError(f"sha256 mismatch for {url}: got {digest}, expected {expected}",
                                   hint="the file changed or the download was corrupted; nothing was kept")
            verified.append("download")
        staged = work / "staged"
        staged.mkdir()
        if zipfile.is_zipfile(raw):
            _unpack_zip(raw, staged)
        else:
            shutil.move(str(raw), staged / raw.name)
        files = tuple(sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()))
        for (ds, fname), want in CONTENT_SHA256.items():
            if ds != name:
                continue
            cands = [staged / fname, staged / f"{fname}.gz"]
            found = next((c for c in cands if c.exists()), None)
            if found is None:
                continue
            got = _content_sha(found)
            if got != want and verify:
                raise DatasetError(f"{fname} does not match the known {name} file (sha256 {got})",
                                   hint="a different version of the data set; pass --no-verify to keep it anyway")
            verified.append(fname)
        if verify and not verified:
            raise DatasetError(f"nothing could be verified for {url} (sha256 {digest})",
                               hint="pass --sha256 with the published hash, or --no-verify")
        (staged / "SOURCE.md").write_text(
            f"# {name} (fetched by `memo eval fetch`)\n\n| url | sha256 | bytes | fetched |\n|---|---|---|---|\n"
            f"| {url} | {digest} | {size} | {datetime.now(UTC).isoformat(timespec='seconds')} |\n\n"
            f"Verified: {', '.join(verified) or 'nothing (--no-verify)'}. Check the data set's licence before use.\n",
            encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        os.replace(staged, dest)
        return Fetched(name, url, digest, size, dest, files, tuple(verified))
    finally:
        shutil.rmtree(work, ignore_errors=True)
