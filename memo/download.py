"""Streamed downloads with a sha256 computed on the way (models and data sets).

Only ever runs when a user asks (`memo models fetch`, `memo eval fetch`); nothing in memo
downloads at search or ingest time.  ``file://`` URLs work too (tests, air-gapped mirrors).
Callers turn the OSError / ValueError urllib raises into their own typed error.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

CHUNK = 1 << 20


def stream_download(url: str, dest: Path, *, timeout: float = 60.0) -> tuple[str, int]:
    """Write ``url`` to ``dest`` (fsynced); return (sha256 hex, size in bytes)."""
    digest = hashlib.sha256()
    size = 0
    with urllib.request.urlopen(url, timeout=timeout) as resp, dest.open("wb") as out:  # noqa: S310
        while chunk := resp.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest(), size
