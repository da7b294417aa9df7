"""The model's optimised graph kept per machine (memo/embed/optimized.py) with the real
MiniLM model: the session loaded from it (a small graph and its weights' data file) gives
the vectors of the session that optimises online, bit for bit; a changed, damaged, stale or
unwritable cache costs the speed, never the vectors; a data file is never rewritten in place."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memo.embed import integrity, optimized
from memo.embed.model import OnnxEmbedder
from memo.embed.registry import load_registry
from memo.errors import ModelUnavailable

REAL = load_registry().get()
SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample" / "scifact" / "corpus.jsonl"


def _texts() -> list[str]:
    docs = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()[:48]]
    return ([f"{d['title']}\n{d['text']}" for d in docs] + [d["title"] for d in docs[:16]]
            + ["def read_file(path):\n    with open(path) as fh:\n        return fh.read()",
               "python check if file exists", "x", "Ünïcödé and emoji 🙂 in a note"])


def _model_file(emb: OnnxEmbedder) -> str:
    return emb.session._model_path          # onnxruntime's record of what it loaded


@pytest.fixture
def online(monkeypatch) -> np.ndarray:
    """Vectors of a session that optimises the graph itself (no cache)."""
    monkeypatch.setenv("MEMO_ONNX_CACHE", optimized.OFF)
    integrity.forget()
    emb = OnnxEmbedder(REAL)
    assert _model_file(emb) == str(REAL.onnx)
    return np.vstack([emb.embed_passages(_texts()), emb.embed_query("what causes insulin resistance")[None]])


def _vectors(emb: OnnxEmbedder) -> np.ndarray:
    return np.vstack([emb.embed_passages(_texts()), emb.embed_query("what causes insulin resistance")[None]])


def _stem() -> str:
    import onnxruntime as ort

    return optimized.key(REAL.sha256, ort.__version__, "ORT_ENABLE_ALL")


def _record(root: Path) -> dict:
    return json.loads((root / f"{_stem()}.json").read_text(encoding="utf-8"))


def _replace_with(path: Path, data: bytes) -> None:
    """New contents under the same name without writing into the old file (a session of
    this process may still have it mapped)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_the_saved_graph_gives_the_same_vectors(online, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    first = OnnxEmbedder(REAL)                          # optimises and saves
    saved = tmp_path / f"{_stem()}.onnx"
    assert saved.is_file() and (tmp_path / f"{_stem()}.json").is_file()
    data = tmp_path / _record(tmp_path)["data"]
    # the weights live in the data file (mapped when loaded), the graph is small
    assert saved.stat().st_size < 1 << 20 < 64 << 20 < data.stat().st_size
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([saved.name, data.name, f"{_stem()}.json"])
    assert np.array_equal(_vectors(first), online)
    again = OnnxEmbedder(REAL)                          # loads the saved graph
    assert _model_file(again) == str(saved)
    assert np.array_equal(_vectors(again), online)


def test_a_changed_file_is_written_again(online, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    OnnxEmbedder(REAL)
    saved = tmp_path / f"{_stem()}.onnx"
    _replace_with(saved, saved.read_bytes()[: saved.stat().st_size // 2])   # half-copied: its stat no longer matches
    emb = OnnxEmbedder(REAL)
    assert _model_file(emb) == str(REAL.onnx)           # optimised again from the model
    assert np.array_equal(_vectors(emb), online)
    assert optimized.cached(tmp_path, _stem()) == saved


def test_a_damaged_or_missing_data_file_is_written_again(online, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    OnnxEmbedder(REAL)
    data = tmp_path / _record(tmp_path)["data"]
    _replace_with(data, data.read_bytes()[: 1 << 20])                      # cut short
    assert optimized.cached(tmp_path, _stem()) is None
    emb = OnnxEmbedder(REAL)
    assert _model_file(emb) == str(REAL.onnx) and np.array_equal(_vectors(emb), online)
    rewritten = tmp_path / _record(tmp_path)["data"]
    assert rewritten.name != data.name and not data.exists()                # a new name; the old file gone
    rewritten.unlink()
    assert optimized.cached(tmp_path, _stem()) is None                      # missing: not trusted
    emb = OnnxEmbedder(REAL)
    assert _model_file(emb) == str(REAL.onnx) and np.array_equal(_vectors(emb), online)
    assert optimized.cached(tmp_path, _stem()) is not None


def test_a_data_file_is_never_rewritten_in_place(online, tmp_path, monkeypatch):
    """A process may have the data file mapped while another replaces the cache: each write
    makes a file of its own, and the one a mapping reads keeps its bytes (its name goes)."""
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    OnnxEmbedder(REAL)
    first = tmp_path / _record(tmp_path)["data"]
    held = first.open("rb")                             # stands in for another process's mapping
    before = os.fstat(held.fileno())
    optimized.forget(tmp_path, _stem())                 # as after a graph onnxruntime refused
    emb = OnnxEmbedder(REAL)                            # written again
    second = tmp_path / _record(tmp_path)["data"]
    assert second.name != first.name and not first.exists()
    after = os.fstat(held.fileno())
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    held.close()
    assert np.array_equal(_vectors(emb), online)


def test_a_record_from_before_the_data_file_is_replaced(online, tmp_path, monkeypatch):
    """A cache written by a memo that kept the graph in one file (a record without ``data``)
    is optimised and written again in two files."""
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    OnnxEmbedder(REAL)
    saved = tmp_path / f"{_stem()}.onnx"
    doc = _record(tmp_path)
    legacy = {"stat": doc["stat"], "source": doc["source"], "source_stat": doc["source_stat"]}
    (tmp_path / f"{_stem()}.json").write_text(json.dumps(legacy), encoding="utf-8")
    assert optimized.cached(tmp_path, _stem()) is None
    emb = OnnxEmbedder(REAL)
    assert _model_file(emb) == str(REAL.onnx) and np.array_equal(_vectors(emb), online)
    assert optimized.cached(tmp_path, _stem()) == saved and "data" in _record(tmp_path)


def test_a_file_onnxruntime_refuses_is_dropped(online, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    OnnxEmbedder(REAL)
    saved, meta = tmp_path / f"{_stem()}.onnx", tmp_path / f"{_stem()}.json"
    _replace_with(saved, b"not a model")
    st = saved.stat()
    doc = _record(tmp_path)
    meta.write_text(json.dumps({**doc, "stat": [st.st_size, st.st_mtime_ns]}), encoding="utf-8")   # looks current
    assert optimized.cached(tmp_path, _stem()) == saved
    emb = OnnxEmbedder(REAL)
    assert np.array_equal(_vectors(emb), online)
    assert optimized.cached(tmp_path, _stem()) is not None and _record(tmp_path)["data"] != doc["data"]   # rewritten


def test_a_cache_it_cannot_write_costs_the_file_only(online, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(blocker / "onnx"))
    emb = OnnxEmbedder(REAL)
    assert np.array_equal(_vectors(emb), online)


def _model_hashes(monkeypatch, path: Path) -> list[str]:
    """The model file's hash computations from now on (the tokenizer's are not counted)."""
    seen: list[str] = []
    real = integrity.sha256_file

    def counting(p: Path) -> str:
        if Path(p) == path:
            seen.append(str(p))
        return real(p)

    monkeypatch.setattr(integrity, "sha256_file", counting)
    return seen


def test_a_checked_model_file_is_not_hashed_again(tmp_path, monkeypatch):
    """Another process (the in-process hash cache emptied) loading the optimised graph of a
    model file nobody touched since it was checked does not hash it again; a file written
    since (same bytes: a new ctime) is hashed once more; a damaged one is refused although
    its optimised graph is still there."""
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "model.onnx"
    shutil.copyfile(REAL.onnx, copy)
    spec = dataclasses.replace(REAL, onnx=copy)
    hashes = _model_hashes(monkeypatch, copy)
    integrity.forget()
    OnnxEmbedder(spec)                                   # hashes, optimises, records the file's stat
    assert len(hashes) == 1
    integrity.forget()
    emb = OnnxEmbedder(spec)
    assert len(hashes) == 1 and _model_file(emb) == str(tmp_path / "cache" / f"{_stem()}.onnx")
    copy.write_bytes(copy.read_bytes())                  # rewritten: same bytes, new ctime
    integrity.forget()
    OnnxEmbedder(spec)
    assert len(hashes) == 2
    integrity.forget()
    OnnxEmbedder(spec)                                   # recorded again: not hashed a third time
    assert len(hashes) == 2
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    integrity.forget()
    with pytest.raises(ModelUnavailable, match="sha256"):
        OnnxEmbedder(spec)


_CHILD = """
import json
from memo.embed.model import OnnxEmbedder
from memo.embed.registry import load_registry
emb = OnnxEmbedder(load_registry().get())
v = emb.embed_query("what causes insulin resistance")
print(json.dumps([float(x) for x in v]))
"""


def test_processes_writing_the_cache_at_once_agree(online, tmp_path, monkeypatch):
    """Four processes start on an empty cache at once (each optimises and writes, each drops
    the others' data files): every one gets the online vector, and the next process finds a
    cache it can load or writes it again, never a broken one."""
    env = dict(os.environ, MEMO_ONNX_CACHE=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    for out, _err in outs:
        assert np.array_equal(np.array(json.loads(out), dtype=np.float32), online[-1])
    monkeypatch.setenv("MEMO_ONNX_CACHE", str(tmp_path))
    emb = OnnxEmbedder(REAL)
    assert np.array_equal(_vectors(emb), online)
    assert optimized.cached(tmp_path, _stem()) is not None
    assert len(list(tmp_path.glob(f"{_stem()}-*.data"))) == 1       # the older writes' files dropped
