"""The model's optimised graph, kept per machine so that a process loads it without
optimising it again (issue 31.2: a cold semantic search waits for the model).

onnxruntime optimises a model's graph every time a session is created; loading the graph it
saved once optimised, with optimisation off, is quicker: for the default model (all-MiniLM-L6-v2
int8) a fresh process's session took 222-285 ms against 154-200 ms (the whole model load,
numpy and onnxruntime's import included, 258-263 -> 206-212 ms, bench/cold_cli.py).
onnxruntime documents this as its offline mode ("save the optimized model, then load it
with optimizations disabled"), with one caveat: the ``ORT_ENABLE_ALL`` graph may hold
layout and kernel choices for the CPU it was optimised on.  So the file is keyed by the
model's sha256, the onnxruntime version, the machine and the CPU's feature flags, and lives
in the user's cache folder (``MEMO_ONNX_CACHE``: another folder, or ``off``).  Its vectors
are those of the session that optimises online, bit for bit
(tests/integration/test_optimized_model.py).

Trust: the file is written by this module from a model whose hash was checked, under a
temporary name, then renamed; a small JSON beside it records its size and mtime, and a file
whose stat differs (another writer, a half-copied cache) is optimised and written again.
A file onnxruntime cannot load is removed and the model is loaded the ordinary way.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

OFF = "off"


def cache_root() -> Path | None:
    env = os.environ.get("MEMO_ONNX_CACHE")
    if env:
        return None if env.strip().lower() == OFF else Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("memo")) / "onnx"


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def key(model_sha256: str, ort_version: str, level: str) -> str:
    """The file name stem of one model optimised at ``level`` by one onnxruntime on this CPU."""
    machine = hashlib.sha256(f"{platform.machine()}|{_cpu_flags()}".encode()).hexdigest()[:12]
    return f"{model_sha256[:16]}-ort{ort_version}-{level}-{machine}"


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def source_stat(path: Path) -> list[int]:
    """What changes whenever anything writes or replaces the model file: size, mtime,
    inode and ctime (which no one sets by hand).  Taken before the file is hashed, so a
    write during the hash leaves a stat that no longer matches."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def source_checked(root: Path, stem: str, source: Path) -> bool:
    """Whether ``source`` is the file whose hash a process checked when it last wrote or
    confirmed ``stem``'s record (``record_source``) and nothing has touched it since.

    The session then loads the optimised file, not ``source``: hashing ``source`` again in
    every process (20-25 ms of CPU for the default model, on a cold search's critical path)
    would only tell again what its unchanged stat tells.  A changed, replaced or missing
    file is hashed as before (``memo.embed.integrity.verify``)."""
    try:
        want = json.loads((root / f"{stem}.json").read_text(encoding="utf-8"))
        return want.get("source_stat") == source_stat(source)
    except (OSError, ValueError, AttributeError):
        return False


def record_source(root: Path, stem: str, source: Path, stat: list[int]) -> None:
    """Note ``source``'s ``stat`` (``source_stat``, taken before its hash was checked) in
    ``stem``'s record."""
    meta = root / f"{stem}.json"
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
        doc.update(source=str(source), source_stat=stat)
        tmp = root / f".{stem}.tmp-{os.getpid()}-{os.urandom(4).hex()}.json"
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, meta)
    except (OSError, ValueError, AttributeError):
        pass


def cached(root: Path, stem: str) -> Path | None:
    """The optimised file of ``stem`` if this module wrote it and nobody changed it since."""
    model, meta = root / f"{stem}.onnx", root / f"{stem}.json"
    try:
        want = json.loads(meta.read_text(encoding="utf-8"))
        return model if _stat(model) == want.get("stat") else None
    except (OSError, ValueError, AttributeError):
        return None


def write(ort: Any, source: Path, options: Any, root: Path, stem: str, stat: list[int] | None = None) -> Any:
    """Create a session of ``source`` (whose hash the caller has checked; ``stat``: its
    ``source_stat`` from before that check) with ``options`` (optimising online), saving
    the optimised graph as ``stem``; returns the session.  A folder it cannot write costs
    the file only."""
    tmp = root / f".{stem}.tmp-{os.getpid()}-{os.urandom(4).hex()}.onnx"
    try:
        root.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(tmp)
    except OSError:
        return ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    try:
        session = ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        try:
            final = root / f"{stem}.onnx"
            os.replace(tmp, final)
            meta_tmp = root / f".{stem}.tmp-{os.getpid()}.json"
            meta_tmp.write_text(json.dumps({"stat": _stat(final), "source": str(source),
                                            "source_stat": stat}), encoding="utf-8")
            os.replace(meta_tmp, root / f"{stem}.json")
        except OSError:
            pass
        return session
    finally:
        tmp.unlink(missing_ok=True)


def forget(root: Path, stem: str) -> None:
    """Remove a cached file onnxruntime refused (it is written again next time)."""
    for suffix in (".json", ".onnx"):
        (root / f"{stem}{suffix}").unlink(missing_ok=True)
