"""``memo models fetch ID``: download a registered model's files into the user cache dir.

Only ever runs when the user asks (nothing downloads at search or ingest time).  The file
is streamed to a temporary name beside its destination, its sha256 computed on the way,
and renamed into place only when it matches the registry; a wrong or partial download
never becomes the model file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memo.download import stream_download
from memo.embed.integrity import sha256_file
from memo.embed.registry import ModelSpec
from memo.errors import ModelUnavailable, ValidationError


@dataclass(frozen=True, slots=True)
class Fetched:
    what: str
    url: str
    path: Path
    bytes: int
    sha256: str
    skipped: bool     # already present with the right hash


def download(url: str, dest: Path, sha256: str | None, timeout: float = 60.0) -> tuple[int, str]:
    """Stream ``url`` to ``dest`` (atomic rename); check ``sha256`` when given."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        actual, size = stream_download(url, tmp, timeout=timeout)
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise ModelUnavailable(f"download of {url} failed: {exc}",
                               hint="check the url and the network, then retry `memo models fetch`") from exc
    if sha256 and actual != sha256.lower():
        tmp.unlink(missing_ok=True)
        raise ModelUnavailable(f"downloaded {url} has sha256 {actual[:12]}..., expected {sha256[:12]}...",
                               hint="the url serves a different file; fix the registry entry")
    os.replace(tmp, dest)
    return size, actual


def _one(what: str, url: str | None, dest: Path, sha: str | None, force: bool) -> Fetched | None:
    if not url:
        return None
    if dest.is_file() and not force and sha:
        if sha256_file(dest) == sha.lower():
            return Fetched(what, url, dest, dest.stat().st_size, sha.lower(), skipped=True)
    size, actual = download(url, dest, sha)
    return Fetched(what, url, dest, size, actual, skipped=False)


def fetch_model(spec: ModelSpec, force: bool = False) -> list[Fetched]:
    """Download the model (and its tokenizer when it has a ``tokenizer_url``)."""
    if not spec.url and not spec.tokenizer_url:
        raise ValidationError(f"model {spec.id!r} has no url to fetch from",
                              hint="add `url = \"https://...\"` to its entry in your models.toml")
    out = [f for f in (_one("model", spec.url, spec.onnx, spec.sha256, force),
                       _one("tokenizer", spec.tokenizer_url, spec.tokenizer, spec.tokenizer_sha256, force))
           if f is not None]
    return out
