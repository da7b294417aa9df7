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

The graph and its weights are two files (``<stem>.onnx``, ~50 KB, and ``<stem>-<tag>.data``,
the initializers, ~90 MB for the default model): onnxruntime maps an external data file instead
of parsing 90 MB of protobuf and copying it, so a fresh process's session takes ~44 ms against
~133 ms from one file (docs/scale.md, "The optimised graph's weights mapped"), with the same
vectors bit for bit.

Trust: the files are written by this module from a model whose hash was checked; the graph
under a temporary name, then renamed; the data file under a name no other write uses (a
random tag the graph names), never rewritten in place: a process that has it mapped keeps
reading what it mapped while another process replaces the cache (a file cut short under a
mapping would kill the reader with SIGBUS).  A small JSON beside them records both files'
size and mtime, and files whose stat differs (another writer, a half-copied cache, a record
from before the data file) are optimised and written again.  Files onnxruntime cannot load
are removed and the model is loaded the ordinary way.
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


def _record(root: Path, stem: str) -> dict[str, Any]:
    doc = json.loads((root / f"{stem}.json").read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError("not a record")
    return doc


def cached(root: Path, stem: str) -> Path | None:
    """The optimised graph of ``stem`` if this module wrote it and its data file, and nobody
    changed either since."""
    model = root / f"{stem}.onnx"
    try:
        want = _record(root, stem)
        data = want.get("data")
        if not isinstance(data, str) or Path(data).name != data or not data.startswith(f"{stem}-"):
            return None         # a record from before the data file, or not this module's
        ok = _stat(model) == want.get("stat") and _stat(root / data) == want.get("data_stat")
        return model if ok else None
    except (OSError, ValueError, AttributeError):
        return None


def write(ort: Any, source: Path, options: Any, root: Path, stem: str, stat: list[int] | None = None) -> Any:
    """Create a session of ``source`` (whose hash the caller has checked; ``stat``: its
    ``source_stat`` from before that check) with ``options`` (optimising online), saving
    the optimised graph as ``stem`` with its weights in a data file of its own; returns the
    session.  A folder it cannot write costs the files only."""
    tag = f"{os.getpid()}-{os.urandom(4).hex()}"
    tmp, data = root / f".{stem}.tmp-{tag}.onnx", f"{stem}-{tag}.data"
    try:
        root.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(tmp)
        # the initializers go to ``data`` (a name relative to the graph's folder), mapped when loaded
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", data)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                         str(EXTERNAL_MIN_BYTES))
    except OSError:
        return ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    written = False
    try:
        session = ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        try:
            final = root / f"{stem}.onnx"
            data_stat = _stat(root / data)
            os.replace(tmp, final)
            meta_tmp = root / f".{stem}.tmp-{tag}.json"
            meta_tmp.write_text(json.dumps({"stat": _stat(final), "data": data, "data_stat": data_stat,
                                            "source": str(source), "source_stat": stat}), encoding="utf-8")
            os.replace(meta_tmp, root / f"{stem}.json")
            written = True
        except OSError:
            pass
        return session
    finally:
        tmp.unlink(missing_ok=True)
        if written:
            _drop_data(root, stem, keep=data)
        else:
            _unlink(root / data)


# Initializers at least this large go to the data file (all of the default model's weight
# matrices; the small ones stay in the graph).
EXTERNAL_MIN_BYTES = 1024


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass        # (a mapped file on a system that refuses to remove one: left for next time)


def _drop_data(root: Path, stem: str, keep: str | None = None) -> None:
    """Remove ``stem``'s data files but ``keep``: those of earlier writes, which no record
    names any more.  A process that has one mapped keeps its pages (the name goes, the
    file stays until it is unmapped)."""
    for path in root.glob(f"{stem}-*.data"):
        if path.name != keep:
            _unlink(path)


def forget(root: Path, stem: str) -> None:
    """Remove cached files onnxruntime refused (they are written again next time)."""
    for suffix in (".json", ".onnx"):
        _unlink(root / f"{stem}{suffix}")
    _drop_data(root, stem)
